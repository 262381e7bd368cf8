import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { type SyncResult, sync } from '../src/sync/engine.ts';
import { declarationFile } from '../src/vite/declarations.ts';
import { moduleData } from '../src/vite/module.ts';
import { fixture, tinyKey } from './helpers/server.ts';

/**
 * The Vite plugin's modules keep a Markdown field as its source, a string (docs/vite.md: a site
 * renders it with a Markdown library of its own): the articles of test/fixtures/markdown.json,
 * synced from the local Read API as the plugin syncs them.
 */

let server: ReadApiServer;
let work: string;
let result: SyncResult;

beforeAll(async () => {
  server = await startServer({ paths: [fixture('markdown.json')], watch: false });
  work = await mkdtemp(join(tmpdir(), 'comfortable-vite-markdown-'));
  const quiet = { info: () => {}, warn: () => {} };
  result = await sync(
    { baseUrl: server.url, repository: 'journal', apiKey: tinyKey, collections: { articles: {} }, cacheDir: work },
    quiet,
  );
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('Markdown fields in the virtual modules', () => {
  it('are the Markdown source, in the locale or along its fallback, typed as strings', () => {
    const { entries } = moduleData(result, 'virtual:comfortable/collections/articles/de_DE');
    const byId = new Map(entries.map((entry) => [entry.id, entry]));
    expect(byId.get('501')!.fields.body).toMatch(/^Das Brühen beginnt \*langsam\*\.\n\n## Methode\n/);
    expect(byId.get('502')!.fields.body).toMatch(/^## Burrs\n\nA \*conical\* burr/);
    expect(byId.get('502')!.fallbacks).toMatchObject({ body: 'en_US' });
    expect(byId.get('501')!.fields.intro).toMatch(/^A \*\*short\*\* guide/);
    expect(declarationFile(result.cache)).toMatch(/"body"\?: string \| null;/);
  });
});
