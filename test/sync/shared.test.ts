import { describe, expect, it } from 'vitest';
import type { SyncResult } from '../../src/sync/engine.ts';
import { changedSources, SharedSync } from '../../src/sync/shared.ts';
import { configFor, docOf, recorder, serve, startProxy, tempDir, touch } from '../helpers/magazine.ts';

/**
 * The shared sync when its configuration is replaced, as a restarted dev server replaces it
 * (the shared sync lives on globalThis and outlives the server): nothing of the old
 * configuration is synced or told afterwards.
 */

const only = { collections: {}, aliases: [], queries: {} };

describe('a new configuration of the shared sync', () => {
  it('replaces the sources and the failed round of the last one', async () => {
    const { server, requests } = await serve();
    const dir = await tempDir();
    const shared = new SharedSync();
    shared.configure(configFor(server.url, dir, { ...only, collections: { articlez: {} } }), recorder());
    await expect(shared.acquire({})).rejects.toMatchObject({ code: 'not_found' });

    const fixedAt = requests.length;
    shared.configure(configFor(server.url, dir, { ...only, collections: { articles: {} } }), recorder());
    const result = await shared.acquire({});
    expect(result.cache.sources().map((source) => source.key)).toEqual(['collection:articles']);
    expect(requests.slice(fixedAt).filter((line) => line.includes('articlez'))).toEqual([]);
  });

  it('is what listeners hear of: a round of the replaced configuration ending later is not told', async () => {
    const { server } = await serve();
    const shared = new SharedSync();
    const told: SyncResult[] = [];
    shared.onResult((result) => told.push(result));
    shared.configure(configFor(server.url, await tempDir(), { ...only, collections: { featured: {} } }), recorder());
    const replaced = shared.acquire({});
    shared.configure(configFor(server.url, await tempDir(), { ...only, collections: { articles: {} } }), recorder());
    await replaced;
    expect(told).toEqual([]);
    const current = await shared.acquire({});
    expect(told).toEqual([current]);
  });
});

/**
 * Dev's asks of the CMS (`poll`): after the content was loaded once, a sync that reports what
 * changed, fails instead of serving the cache, and leaves the content served as it was when
 * the CMS fails.
 */
describe('a poll of the shared sync', () => {
  it("asks nothing before a round has loaded content, nor while a loader's options are wrong", async () => {
    const { server, requests } = await serve();
    const shared = new SharedSync();
    let broken: Error | undefined;
    shared.configure(configFor(server.url, await tempDir()), recorder(), undefined, () => {
      if (broken) throw broken;
      return [];
    });
    expect(await shared.poll()).toBeUndefined();
    expect(requests).toEqual([]);

    await shared.acquire({});
    broken = new Error('Invalid option of the posts loader');
    await expect(shared.refresh()).rejects.toThrow('Invalid option of the posts loader');
    const before = requests.length;
    expect(await shared.poll()).toBeUndefined();
    expect(requests.length).toBe(before);
  });

  it('finds nothing, with its listings of stamps answered 304, until an edit is published, then its sources', async () => {
    const { server, snapshot, publish, requests } = await serve();
    const shared = new SharedSync();
    const logger = recorder();
    shared.configure(configFor(server.url, await tempDir()), logger);
    await shared.acquire({});
    const printed = logger.infos.length + logger.warns.length;
    expect(changedSources((await shared.poll())!.changeset)).toEqual([]);
    // The first warm sync lists the stamps in full; the next asks those listings conditionally.
    const asked = requests.length;
    expect(changedSources((await shared.poll())!.changeset)).toEqual([]);
    const listings = requests.slice(asked).filter((line) => line.includes('fields=meta(id,updatedAt,revision)'));
    expect(listings.length).toBeGreaterThan(0);
    expect(listings.filter((line) => !line.endsWith(' 304'))).toEqual([]);
    expect(logger.infos.length + logger.warns.length).toBe(printed);

    touch(docOf(snapshot, '1001'));
    await publish();
    const result = (await shared.poll())!;
    expect(changedSources(result.changeset)).toContain('collection:articles');
    expect(await shared.current()).toBe(result);
  });

  it('throws when the CMS fails, and the round served stays the last good one', async () => {
    const { server } = await serve();
    const proxy = await startProxy(server);
    const shared = new SharedSync();
    shared.configure(configFor(proxy.url, await tempDir()), recorder());
    const served = await shared.acquire({});
    proxy.failFrom = proxy.seen.length;
    await expect(shared.poll()).rejects.toThrow();
    expect(await shared.current()).toBe(served);
  });
});
