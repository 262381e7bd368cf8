import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { copyFixture, run, runAstro } from './helpers/astro.ts';
import { startTiny, tinyKey } from './helpers/server.ts';

/**
 * A site builder's first hour, as issue 22 found it: the site is built, `comfortable-loader
 * sync` runs with a config of its own (fewer sources), the server goes down, and the next build
 * falls back to the cache. It must build from the last good content of every collection, not
 * build the collections the CLI's sync did not name as empty.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
let server: ReadApiServer;
let site: { dir: string; remove(): Promise<void> };

beforeAll(async () => {
  server = await startTiny();
  site = await copyFixture('astro-site', 'astro-fallback');
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  await site?.remove();
});

const env = () => ({ CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey });
const data = async (): Promise<Json> => JSON.parse(await readFile(join(site.dir, 'dist/data.json'), 'utf8'));
const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('the CLI and the integration keep their caches apart', () => {
  it('a CLI sync with fewer sources, then a build with the server down: every collection is built from the last good content', async () => {
    const first = await runAstro(site.dir, ['build'], env());
    expect(first.code, first.output).toBe(0);
    const built = await data();
    expect(built.authors.length).toBeGreaterThan(0);

    await writeFile(
      join(site.dir, 'comfortable.config.mjs'),
      `export default { baseUrl: process.env.CMFT_BASE_URL, repository: 'tiny', apiKey: process.env.CMFT_API_KEY, collections: { news: {} } };\n`,
    );
    const synced = await run(process.execPath, [cli, 'sync'], { cwd: site.dir, env: env() });
    expect(synced.code, synced.output).toBe(0);
    expect(await exists(join(site.dir, 'node_modules/.cache/comfortable-loader/cache.sqlite'))).toBe(true);

    const url = server.url;
    await server.close();
    const offline = await runAstro(site.dir, ['build'], { ...env(), CMFT_BASE_URL: url });
    expect(offline.code, offline.output).toBe(0);
    expect(offline.output).toMatch(/using the cached content of .*stale: /);
    const rebuilt = await data();
    expect(rebuilt.authors).toEqual(built.authors);
    expect(rebuilt.news).toEqual(built.news);
    expect(rebuilt.home).toEqual(built.home);
  }, 120_000);
});
