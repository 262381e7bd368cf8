import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../src/server/index.ts';
import { sync } from '../src/sync/engine.ts';
import { changedIds } from '../src/sync/shared.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

const quiet = { info: () => {}, warn: () => {} };

describe('a sync told which documents changed (a refresh webhook)', () => {
  let server: ReadApiServer;
  let dir: string;
  beforeAll(async () => {
    server = await startTiny();
    dir = await mkdtemp(join(tmpdir(), 'refetch-'));
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fetches them again even when their updatedAt and revision did not move', async () => {
    const config = { baseUrl: server.url, repository: 'tiny', apiKey: tinyKey, cacheDir: dir, collections: { news: {} } };
    await sync(config, quiet);
    const snapshot = JSON.parse(await readFile(fixture('tiny.json'), 'utf8'));
    snapshot.documents.find((d: { meta: { id: string } }) => d.meta.id === '102').fields.title.en_US = 'Cherry season, edited by hand';
    const event = await server.replaceSnapshot(snapshot);
    expect(event.changed).toEqual(['102']);

    const unhinted = await sync(config, quiet);
    expect(unhinted.changeset.records.updated).toEqual([]); // the stamps say nothing changed

    const hinted = await sync(config, quiet, { refetch: changedIds(event) });
    expect(hinted.changeset.records.updated).toEqual(['102']);
    expect((await hinted.reader.get('102'))!.fields.title).toEqual({ en_US: 'Cherry season, edited by hand' });
  });

  it('reads changed ids only from a payload of the local server\'s shape', () => {
    expect(changedIds({ repository: 'tiny', changed: ['1', 2, '3'], removed: [] })).toEqual(['1', '3']);
    expect(changedIds({ event: 'publish' })).toEqual([]);
    expect(changedIds(null)).toEqual([]);
  });
});
