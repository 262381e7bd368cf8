import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { generateSnapshot } from '../helpers/generate-snapshot.ts';
import { openCache } from '../../src/cache/index.ts';
import { startServer } from '../../src/server/index.ts';
import type { Changeset } from '../../src/sync/changeset.ts';
import type { SyncConfigInput } from '../../src/sync/config.ts';
import { sync, SyncError, type SyncResult } from '../../src/sync/engine.ts';
import {
  allRecordIds,
  cacheContent,
  contentOf,
  configFor,
  type Doc,
  docOf,
  key,
  magazine,
  otherKey,
  recorder,
  recordsOf,
  serve,
  sorted,
  startProxy,
  tempDir,
  touch,
} from '../helpers/magazine.ts';

/**
 * A sync that cannot finish: one that fails half-way (on an error answer, a dropped connection,
 * or after writing many records) leaves the cache exactly as it was, and a first one leaves none;
 * with onError use-cache the last good content is served, marked stale; two syncs of one cache
 * take turns; a cache of another repository or base URL is rebuilt; and the cache never holds
 * the API key, nor depends on it.
 */

describe('atomic commits', () => {
  it('a sync that fails half-way leaves the previous cache and records intact and readable', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const first = await sync(configFor(proxy.url, dir), recorder());
    const before = cacheContent(dir);
    const shownBefore = contentOf(first.cache);
    const recordsBefore = recordsOf(first);

    const title = docOf(served.snapshot, '1001').fields.title as Record<string, string>;
    title.en_US = 'Pear harvest';
    touch(docOf(served.snapshot, '1001'));
    served.snapshot.documents = served.snapshot.documents.filter((d) => d.meta.id !== '1003');
    await served.publish();
    proxy.failFrom = proxy.seen.length + 4; // the repository and a few listings get through, then nothing
    await expect(sync(configFor(proxy.url, dir), recorder())).rejects.toMatchObject({ code: 'server_failed' });

    expect(cacheContent(dir)).toEqual(before);
    const cache = openCache(dir)!;
    expect(contentOf(cache)).toEqual(shownBefore);
    expect(recordsOf({ cache })).toEqual(recordsBefore);
  });

  it('a sync whose connection drops leaves the previous cache too, and the next sync completes the change', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    await sync(configFor(proxy.url, dir), recorder());
    const before = cacheContent(dir);

    touch(docOf(served.snapshot, '2002'));
    docOf(served.snapshot, '2002').fields.name = 'Robert';
    await served.publish();
    proxy.failure = 'hang-up';
    proxy.failFrom = proxy.seen.length + 2;
    await expect(sync(configFor(proxy.url, dir), recorder())).rejects.toBeInstanceOf(SyncError);
    expect(cacheContent(dir)).toEqual(before);

    proxy.failFrom = undefined;
    const result = await sync(configFor(proxy.url, dir), recorder());
    expect(result.changeset.records.updated).toEqual(['2002']);
    expect(result.cache.record('2002')!.fields.name).toBe('Robert');
  });

  it('a large sync that fails after writing many records leaves no trace of them', async () => {
    const snapshot = generateSnapshot({ documents: 1500, seed: 9, apiId: 'big', key });
    const server = await startServer({ snapshots: [structuredClone(snapshot)], watch: false });
    onTestFinished(() => server.close());
    const proxy = await startProxy(server);
    const dir = await tempDir();
    const config: SyncConfigInput = {
      baseUrl: proxy.url,
      repository: 'big',
      apiKey: key,
      cacheDir: dir,
      onError: 'fail',
      pageSize: 250,
      collections: { latest: {}, technology: {}, authors: {} },
      queries: { categories: { contentType: 'category' } },
    };
    const first = await sync(config, recorder());
    // Several sources wrote their records at once; every record still reads back whole.
    const records = recordsOf(first);
    expect(records.size).toBe(first.cache.recordCount());
    expect(recordsOf(await sync({ ...config, cacheDir: await tempDir(), mode: 'fresh' }, recorder()))).toEqual(records);
    const before = cacheContent(dir);

    for (const doc of snapshot.documents) touch(doc as Doc);
    await server.replaceSnapshot(snapshot);
    // The repository, the stamps of the cached assets, the look for the targets of dangling
    // references, every member listing and every page of changed documents get through (each
    // page written into the sync's transaction as it comes: some 1,500 records), then nothing.
    expect(first.dangling.length).toBeGreaterThan(0);
    const pages = first.cache
      .sources()
      .reduce((sum, source) => sum + Math.ceil(first.cache.members(source.key).length / 250), 0);
    const start = proxy.seen.length;
    const passing = 3 + 2 * pages;
    proxy.failFrom = start + passing + 1;
    await expect(sync(config, recorder())).rejects.toMatchObject({ code: 'server_failed' });
    expect(proxy.seen.length).toBeGreaterThan(start + passing);
    expect(proxy.seen.slice(start, start + passing).filter((request) => /meta\.updatedAt/.test(request))).toHaveLength(
      pages,
    );
    expect(cacheContent(dir)).toEqual(before);
    expect(recordsOf({ cache: openCache(dir)! })).toEqual(records);
  });

  it('a first sync that fails leaves no cache at all, never an empty or half-written one', async () => {
    const { server } = await serve();
    const proxy = await startProxy(server);
    proxy.failFrom = 3;
    const dir = await tempDir();
    const failed = sync({ ...configFor(proxy.url, dir), onError: 'use-cache' }, recorder());
    await expect(failed).rejects.toMatchObject({ code: 'server_failed' });
    // It says that there is nothing to fall back on, not that a cache was kept.
    await expect(failed).rejects.toThrow(
      `the cache in ${dir} holds no content of ${proxy.url} yet, so there is no last good content to use: sync once with the server reachable`,
    );
    expect(await readdir(dir)).toEqual([]);
    await expect(sync({ ...configFor(proxy.url, dir), mode: 'offline' }, recorder())).rejects.toMatchObject({
      code: 'offline_without_cache',
    });
  });
});

describe('when the server fails', () => {
  async function cachedThenDown() {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const first = await sync(configFor(proxy.url, dir), recorder());
    const before = cacheContent(dir);
    const shownBefore = contentOf(first.cache);
    touch(docOf(served.snapshot, '1001'));
    await served.publish();
    proxy.failFrom = proxy.seen.length + 3;
    return { served, proxy, dir, first, before, shownBefore };
  }

  it('with onError use-cache, keeps the last good content, warns and names what is stale', async () => {
    const { proxy, dir, before, shownBefore } = await cachedThenDown();
    const calls: Changeset[] = [];
    const log = recorder();
    const result = await sync(
      { ...configFor(proxy.url, dir), onError: 'use-cache', onSync: (c) => void calls.push(c) },
      log,
    );
    expect(sorted(result.stale)).toEqual(['alias:home', 'collection:articles', 'collection:featured', 'query:authors']);
    const warning = result.warnings.find((w) => /stale/.test(w));
    expect(warning).toBeDefined();
    for (const source of result.stale) expect(warning).toContain(source);
    expect(warning).toContain(shownBefore.head.lastSync);
    expect(log.warns).toContain(warning);
    expect(recordsOf(result)).toEqual(shownBefore.records);
    expect(result.changeset.empty).toBe(true);
    expect(calls).toEqual([]);
    expect(cacheContent(dir)).toEqual(before);
  });

  it('with onError use-cache, serves the records as they were, not the changes taken in before the failure', async () => {
    const { proxy, dir, before, shownBefore } = await cachedThenDown();
    proxy.failFrom = undefined;
    // The changed document comes in (the "changed since" query); every request after it fails.
    let failing = false;
    proxy.failIf = () => {
      if (failing) return true;
      failing = /meta\.updatedAt/.test(proxy.seen.at(-1)!);
      return false;
    };
    const result = await sync({ ...configFor(proxy.url, dir), onError: 'use-cache' }, recorder());
    expect(failing).toBe(true);
    expect(result.stale.length).toBeGreaterThan(0);
    expect(contentOf(result.cache)).toEqual(shownBefore);
    expect(recordsOf(result)).toEqual(shownBefore.records);
    expect(cacheContent(dir)).toEqual(before);
  });

  it('with onError fail, throws and leaves the cache unchanged', async () => {
    const { proxy, dir, before } = await cachedThenDown();
    const calls: Changeset[] = [];
    const error = await sync(
      { ...configFor(proxy.url, dir), onError: 'fail', onSync: (c) => void calls.push(c) },
      recorder(),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncError);
    expect((error as Error).message).toMatch(/the cache was left as it was/);
    expect((error as Error).message).toContain('500');
    expect((error as Error).message).not.toContain(key);
    expect(calls).toEqual([]);
    expect(cacheContent(dir)).toEqual(before);
  });

  it('fails by default when CI is set', async () => {
    const { proxy, dir, before } = await cachedThenDown();
    const previous = process.env.CI;
    process.env.CI = 'true';
    try {
      const { onError: _onError, ...config } = configFor(proxy.url, dir);
      await expect(sync(config, recorder())).rejects.toMatchObject({ code: 'server_failed' });
    } finally {
      if (previous === undefined) delete process.env.CI;
      else process.env.CI = previous;
    }
    expect(cacheContent(dir)).toEqual(before);
  });
});

describe('a fallback never serves less than the last good content', () => {
  /** A cache written by another config (the CLI's, say) that names fewer sources, then a server that is down. */
  async function sharedThenDown() {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    await sync(configFor(proxy.url, dir), recorder());
    const other = recorder();
    await sync(configFor(proxy.url, dir, { collections: { articles: {} }, aliases: ['home'], queries: {} }), other);
    proxy.failFrom = proxy.seen.length;
    return { proxy, dir, other, before: cacheContent(dir) };
  }

  it('a sync that drops sources another config named says so, and which', async () => {
    const { other } = await sharedThenDown();
    const warning = other.warns.find((w) => /no longer names/.test(w));
    expect(warning).toContain('collection:featured');
    expect(warning).toContain('query:authors');
    expect(warning).toContain('cacheDir');
  });

  it('with onError use-cache, fails naming each source the cache does not hold, instead of serving it empty', async () => {
    const { proxy, dir, before } = await sharedThenDown();
    const error = await sync({ ...configFor(proxy.url, dir), onError: 'use-cache' }, recorder()).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SyncError);
    expect((error as SyncError).code).toBe('server_failed');
    expect((error as Error).message).toMatch(/does not hold .*collection:featured.*query:authors/);
    expect((error as Error).message).not.toContain('alias:home');
    expect((error as Error).message).toContain(dir);
    expect(cacheContent(dir)).toEqual(before);
  });

  it('offline, fails the same way', async () => {
    const { proxy, dir } = await sharedThenDown();
    const error = await sync({ ...configFor(proxy.url, dir), mode: 'offline' }, recorder()).catch((e: unknown) => e);
    expect((error as SyncError).code).toBe('offline_without_cache');
    expect((error as Error).message).toMatch(/does not hold .*collection:featured.*query:authors/);
  });

  it("a source the cache holds with other options is not served as this config's either", async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    await sync(configFor(proxy.url, dir), recorder());
    proxy.failFrom = proxy.seen.length;
    const changed = configFor(proxy.url, dir, {
      collections: { articles: { includes: 2 }, featured: {} },
      onError: 'use-cache',
    });
    await expect(sync(changed, recorder())).rejects.toThrow(/collection:articles \(synced with other options\)/);
    await expect(sync({ ...changed, mode: 'offline' }, recorder())).rejects.toThrow(
      /collection:articles \(synced with other options\)/,
    );
  });

  it('serves only the sources this config names, each marked stale', async () => {
    const { proxy, dir } = await sharedThenDown();
    const result = await sync(
      { ...configFor(proxy.url, dir, { collections: { articles: {} }, queries: {} }), onError: 'use-cache' },
      recorder(),
    );
    expect(sorted(result.stale)).toEqual(['alias:home', 'collection:articles']);
    expect(Object.keys(result.changeset.sources).sort()).toEqual(['alias:home', 'collection:articles']);
  });
});

describe('the cache lock', () => {
  it('makes a second concurrent sync wait for the first, then build on its cache', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const results = await Promise.all([
      sync(configFor(server.url, dir), recorder()),
      sync(configFor(server.url, dir), recorder()),
    ]);
    expect(results.map((r) => r.stats.written).sort()).toEqual([0, allRecordIds.length]);
    expect(results.flatMap((r) => r.warnings).filter((w) => /lock|rebuild/.test(w))).toEqual([]);
  });
});

describe('a foreign cache', () => {
  async function synced() {
    const served = await serve();
    const dir = await tempDir();
    const first = await sync(configFor(served.server.url, dir), recorder());
    return { ...served, dir, first };
  }

  function expectRebuilt(result: SyncResult, warning: RegExp) {
    expect(
      result.warnings.some((w) => warning.test(w) && /rebuild/.test(w)),
      result.warnings.join('\n'),
    ).toBe(true);
    expect(result.stats.written).toBe(allRecordIds.length);
    expect(sorted(recordsOf(result).keys())).toEqual(allRecordIds);
  }

  it('a cache of another repository is not reused', async () => {
    const other = magazine();
    other.repository = { ...other.repository, id: '500000000000000002', apiId: 'other', apiKeys: [key] };
    const served = await serve(magazine(), [other]);
    const dir = await tempDir();
    await sync({ ...configFor(served.server.url, dir), repository: 'other' }, recorder());
    expectRebuilt(await sync(configFor(served.server.url, dir), recorder()), /other/);
    expect(openCache(dir)!.head.repository).toBe('mag');
  });

  it('a cache of another base URL is not reused', async () => {
    const { dir } = await synced();
    const elsewhere = await serve();
    expectRebuilt(await sync(configFor(elsewhere.server.url, dir), recorder()), /made for/);
    expect(openCache(dir)!.head.baseUrl).toBe(elsewhere.server.url);
  });
});

describe('the cache and the API key', () => {
  it('never holds the API key, in any file', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    await sync(configFor(server.url, dir), recorder());
    const files = await readdir(dir);
    expect(files).toContain('cache.sqlite');
    for (const name of files) {
      const text = await readFile(join(dir, name), 'latin1');
      expect(text, name).not.toContain(key);
      expect(text, name).not.toContain(encodeURIComponent(key));
      expect(text, name).not.toContain(key.slice(-12));
    }
  });

  it('does not depend on the key: another key of the same repository keeps the cache', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const second = await sync({ ...configFor(server.url, dir), apiKey: otherKey }, recorder());
    expect(second.stats.written).toBe(0);
    expect(second.warnings.filter((w) => /rebuild/.test(w))).toEqual([]);
  });
});
