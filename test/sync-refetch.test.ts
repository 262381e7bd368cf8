import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { sync } from '../src/sync/engine.ts';
import { changedIds } from '../src/sync/shared.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

const quiet = { info: () => {}, warn: () => {} };

/**
 * A tiny server synced once into a cache of its own (both gone after the test), and `edit`, which
 * swaps in the fixture changed by hand (stamps untouched) and returns the reload event.
 */
async function syncedTiny() {
  const server = await startTiny();
  const dir = await mkdtemp(join(tmpdir(), 'refetch-'));
  onTestFinished(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });
  const config = { baseUrl: server.url, repository: 'tiny', apiKey: tinyKey, cacheDir: dir, collections: { news: {} } };
  await sync(config, quiet);
  const edit = async (change: (snapshot: any) => void) => {
    const snapshot = JSON.parse(await readFile(fixture('tiny.json'), 'utf8'));
    change(snapshot);
    return server.replaceSnapshot(snapshot);
  };
  return { dir, config, edit };
}

describe('a sync told which documents changed (a refresh webhook)', () => {
  it('fetches them again even when their updatedAt and revision did not move', async () => {
    const { config, edit } = await syncedTiny();
    const event = await edit((snapshot) => {
      snapshot.documents.find((d: { meta: { id: string } }) => d.meta.id === '102').fields.title.en_US =
        'Cherry season, edited by hand';
    });
    expect(event.changed).toEqual(['102']);

    const unhinted = await sync(config, quiet);
    expect(unhinted.changeset.records.updated).toEqual([]); // the stamps say nothing changed

    const hinted = await sync(config, quiet, { refetch: changedIds(event) });
    expect(hinted.changeset.records.updated).toEqual(['102']);
    expect(hinted.cache.record('102')!.fields.title).toEqual({ en_US: 'Cherry season, edited by hand' });
  });

  it('fetches an asset it names again, and the documents embedding it come out updated', async () => {
    const { dir, config, edit } = await syncedTiny();
    const event = await edit((snapshot) => {
      snapshot.assets.find((a: { meta: { id: string } }) => a.meta.id === '300').fields.title.en_US =
        'Apples, retitled by hand';
    });
    expect(event.changed).toEqual(['300']);

    const hinted = await sync(config, quiet, { refetch: changedIds(event) });
    expect(hinted.changeset.records.updated).toEqual(['300']);
    // News 100 embeds asset 300, and news 102 includes news 100 with what it embeds.
    expect(hinted.changeset.sources['collection:news']!.updated.sort()).toEqual(['100', '102']);
    expect(hinted.cache.record('300')!.fields.title).toMatchObject({ en_US: 'Apples, retitled by hand' });
    // The folder's reader shows its last commit: keep what this sync made before the next ones.
    const hintedAsset = hinted.cache.record('300');
    // Named with a document that embeds it, the asset comes with the document and is not asked for again.
    const both = await sync(config, quiet, { refetch: ['100', '300'] });
    const documentOnly = await sync(config, quiet, { refetch: ['100'] });
    expect(both.stats.requests).toBe(documentOnly.stats.requests);
    const fresh = await sync({ ...config, cacheDir: join(dir, 'fresh') }, quiet);
    expect(hintedAsset).toEqual(fresh.cache.record('300'));
  });

  it("reads changed ids only from a payload of the local server's shape", () => {
    expect(changedIds({ repository: 'tiny', changed: ['1', 2, '3'], removed: [] })).toEqual(['1', '3']);
    expect(changedIds({ event: 'publish' })).toEqual([]);
    expect(changedIds(null)).toEqual([]);
  });
});
