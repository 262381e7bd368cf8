import { describe, expect, it } from 'vitest';
import type { SyncResult } from '../../src/sync/engine.ts';
import { SharedSync } from '../../src/sync/shared.ts';
import { configFor, recorder, serve, tempDir } from '../helpers/magazine.ts';

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
    await expect(shared.acquire('vite')).rejects.toMatchObject({ code: 'not_found' });

    const fixedAt = requests.length;
    shared.configure(configFor(server.url, dir, { ...only, collections: { articles: {} } }), recorder());
    const result = await shared.acquire('vite');
    expect(result.cache.sources().map((source) => source.key)).toEqual(['collection:articles']);
    expect(requests.slice(fixedAt).filter((line) => line.includes('articlez'))).toEqual([]);
  });

  it('is what listeners hear of: a round of the replaced configuration ending later is not told', async () => {
    const { server } = await serve();
    const shared = new SharedSync();
    const told: SyncResult[] = [];
    shared.onResult((result) => told.push(result));
    shared.configure(configFor(server.url, await tempDir(), { ...only, collections: { featured: {} } }), recorder());
    const replaced = shared.acquire('vite');
    shared.configure(configFor(server.url, await tempDir(), { ...only, collections: { articles: {} } }), recorder());
    await replaced;
    expect(told).toEqual([]);
    const current = await shared.acquire('vite');
    expect(told).toEqual([current]);
  });
});
