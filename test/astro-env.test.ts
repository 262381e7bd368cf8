import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { copyFixture, run, runAstro } from './helpers/astro.ts';
import { startTiny, tinyKey } from './helpers/server.ts';

/**
 * Configuration as Astro users expect it: the integration (test/fixtures/astro-env calls
 * `comfortable()` with only its contentTypes) and the CLI read `CMFT_*` from the environment
 * and from `.env` files the way Vite does: `.env`, then `.env.<mode>` for the mode Astro runs
 * in, the environment over both.
 */

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const wrongKey = 'wrong-read-key-0a1b2c3d4e5f';
let server: ReadApiServer;
let site: { dir: string; remove(): Promise<void> };

beforeAll(async () => {
  server = await startTiny();
  site = await copyFixture('astro-env', 'astro-env');
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  await site?.remove();
});

/** Writes the site's env files (and removes those not given). */
async function envFiles(files: Record<string, Record<string, string>>): Promise<void> {
  for (const name of (await readdir(site.dir)).filter((n) => n.startsWith('.env'))) await rm(join(site.dir, name));
  for (const [name, vars] of Object.entries(files)) {
    await writeFile(
      join(site.dir, name),
      Object.entries(vars)
        .map(([key, value]) => `${key}=${value}\n`)
        .join(''),
    );
  }
}

const connection = () => ({ CMFT_BASE_URL: server.url, CMFT_REPOSITORY: 'tiny', CMFT_API_KEY: tinyKey });
const titles = async () => JSON.parse(await readFile(join(site.dir, 'dist/titles.json'), 'utf8')) as string[];

/** Every file of the built site, to look for the key in. */
async function builtText(dir = join(site.dir, 'dist')): Promise<string> {
  let text = '';
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    text += entry.isDirectory() ? await builtText(path) : await readFile(path, 'utf8');
  }
  return text;
}

describe('the integration reads CMFT_* as Vite reads .env files', () => {
  it('builds with comfortable() and a .env that holds the connection, and the key is in no built file', async () => {
    await envFiles({ '.env': connection() });
    const { code, output } = await runAstro(site.dir, ['build']);
    expect(code, output).toBe(0);
    expect(await titles()).toContain('Apple harvest');
    expect(await builtText()).not.toContain(tinyKey);
  }, 120_000);

  it("reads .env.<mode> over .env, for the build's mode (production, or --mode)", async () => {
    await envFiles({
      '.env': { ...connection(), CMFT_API_KEY: wrongKey },
      '.env.production': { CMFT_API_KEY: tinyKey },
      '.env.staging': { CMFT_REPOSITORY: 'nonexistent' },
    });
    const production = await runAstro(site.dir, ['build']);
    expect(production.code, production.output).toBe(0);
    const staging = await runAstro(site.dir, ['build', '--mode', 'staging']);
    expect(staging.code).not.toBe(0);
    expect(staging.output).toContain('repository');
    expect(staging.output).toContain('nonexistent');
  }, 120_000);

  it('lets the environment win over the files', async () => {
    await envFiles({ '.env': connection() });
    const { code, output } = await runAstro(site.dir, ['build'], { CMFT_API_KEY: wrongKey });
    expect(code).not.toBe(0);
    expect(output).toMatch(/refused the API key/);
    expect(output).not.toContain(wrongKey);
  }, 120_000);

  it('names the variable to set when no key is found anywhere', async () => {
    const { CMFT_API_KEY: _key, ...rest } = connection();
    await envFiles({ '.env': rest });
    const { code, output } = await runAstro(site.dir, ['build']);
    expect(code).not.toBe(0);
    expect(output).toContain('Invalid option comfortable.apiKey: expected a Read API key of the repository');
    expect(output).toContain('CMFT_API_KEY');
  }, 120_000);
});

describe('the CLI reads them too', () => {
  it('syncs with a config that names only its sources, the connection coming from .env', async () => {
    await envFiles({ '.env': connection() });
    await writeFile(
      join(site.dir, 'comfortable.config.mjs'),
      "export default { collections: { news: {} }, cacheDir: 'cli-cache' };\n",
    );
    const { code, output } = await run(process.execPath, [cli, 'sync'], { cwd: site.dir });
    expect(code, output).toBe(0);
    expect(output).toMatch(/Synced tiny: \d+ records/);
    expect(output).not.toContain(tinyKey);
  });

  it('gives process.env of a config module the values of .env', async () => {
    await envFiles({ '.env': connection() });
    await writeFile(
      join(site.dir, 'comfortable.config.mjs'),
      "export default { baseUrl: process.env.CMFT_BASE_URL, repository: 'tiny', apiKey: process.env.CMFT_API_KEY, collections: { news: {} }, cacheDir: 'cli-cache' };\n",
    );
    const { code, output } = await run(process.execPath, [cli, 'sync', '--mode', 'fresh'], { cwd: site.dir });
    expect(code, output).toBe(0);
  });
});
