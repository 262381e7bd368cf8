import { describe, expect, it } from 'vitest';
import { sync } from '../../src/sync/engine.ts';
import {
  configFor,
  docOf,
  type Proxy as HeldProxy,
  recorder,
  recordsOf,
  serve,
  startProxy,
  tempDir,
  touch,
} from '../helpers/magazine.ts';

/**
 * What a warm sync asks at once, rather than one round of requests after another: the member
 * listings go out with the request for the repository, and the stamps of the cached assets and
 * the targets of dangling references are asked while the members are listed. A proxy holds some
 * requests back; the test lets them through once the others it expects have arrived (or after a
 * while, so that a sync that asks them one after the other fails the test rather than hanging).
 */

/** Resolves once the proxy has seen every pattern, or after `ms`; says which were seen. */
async function seenWhileHeld(proxy: HeldProxy, patterns: RegExp[], ms = 3000): Promise<boolean[]> {
  const deadline = Date.now() + ms;
  const seen = () => patterns.map((pattern) => proxy.seen.some((line) => pattern.test(line)));
  while (!seen().every(Boolean) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return seen();
}

const repository = /^GET \/v1\/mag(\?|$)/;
const listing = /^GET \/v1\/mag\/collections\/articles\?.*fields=meta\(id,updatedAt,revision\)&/;
const changedSince = /meta\.updatedAt/;
const assetProbe = /\/documents\?.*embedAssets=true&fields=meta\(id,updatedAt,revision\),fields\(/;
const danglingTarget = /\[\*\.meta\.id\]\[in\]=1999&/;

describe('a warm sync', () => {
  it('lists the members while the repository answers, and fetches records only once its locales are known', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const config = configFor(proxy.url, dir);
    await sync(config, recorder());
    const article = docOf(served.snapshot, '1003');
    article.fields.title = { en_US: 'Cherry season', de_DE: 'Kirschenzeit', de_CH: 'Chriesizyt' };
    touch(article);
    await served.publish();

    proxy.hold = repository;
    const running = sync(config, recorder());
    const [listed, fetched] = await seenWhileHeld(proxy, [listing, changedSince], 500);
    proxy.release();
    const result = await running;
    expect(listed).toBe(true);
    expect(fetched).toBe(false);
    expect(result.changeset.records.updated).toEqual(['1003']);
    // Normalised with the repository's locales, as a fresh sync stores it.
    const fresh = await sync({ ...configFor(served.server.url, await tempDir()), mode: 'fresh' }, recorder());
    expect(recordsOf(result)).toEqual(recordsOf(fresh));
  });

  it('asks the stamps of the cached assets and the targets of dangling references while the members are listed', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    // Without the alias: its answer embeds both assets, so its 304 would vouch for them.
    const config = configFor(proxy.url, await tempDir(), { aliases: [] });
    const cold = await sync(config, recorder());
    proxy.hold = /\/collections\//;
    const running = sync(config, recorder());
    const seen = await seenWhileHeld(proxy, [assetProbe, danglingTarget]);
    proxy.release();
    const warm = await running;
    expect(seen).toEqual([true, true]);
    expect(warm.changeset.empty).toBe(true);
    expect(recordsOf(warm)).toEqual(recordsOf(cold));
    expect(warm.dangling).toEqual(cold.dangling);
  });

  it('fails with the failure of the repository, though the listings asked with it got through, and leaves the cache as it was', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const config = configFor(proxy.url, dir, { onError: 'fail' });
    const before = recordsOf(await sync(config, recorder()));
    const article = docOf(served.snapshot, '1003');
    touch(article);
    await served.publish();
    proxy.failIf = () => repository.test(proxy.seen.at(-1)!); // the request being forwarded
    await expect(sync(config, recorder())).rejects.toMatchObject({
      code: 'server_failed',
      message: expect.stringMatching(/down for maintenance/),
    });
    expect(proxy.seen.filter((line) => listing.test(line))).toHaveLength(1); // the warm sync's (the first fetched in full)
    expect(recordsOf({ cache: (await import('../../src/cache/index.ts')).openCache(dir)! })).toEqual(before);
  });
});
