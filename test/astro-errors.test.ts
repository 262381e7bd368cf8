import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../src/server/index.ts';
import { copyFixture, freePort, runAstro } from './helpers/astro.ts';
import { startTiny } from './helpers/server.ts';

/**
 * A loader's failures as a user sees them: `astro build` of the fixture site in
 * test/fixtures/astro-small fails, and Astro's output says what failed with a hint that names
 * the option to check (not Astro's own "a syntax error inside your content"), never the key.
 */

const wrongKey = 'wrong-read-key-5f3a9c1e7b2d';

let server: ReadApiServer;
let site: { dir: string; remove(): Promise<void> };

beforeAll(async () => {
  server = await startTiny();
  site = await copyFixture('astro-small', 'errors-test');
});

afterAll(async () => {
  await server?.close();
  await site?.remove();
});

/** `astro build` that must fail; its output, which must not hold the key. */
async function failedBuild(env: Record<string, string>): Promise<string> {
  const { code, output } = await runAstro(site.dir, ['build', '--force'], {
    CMFT_BASE_URL: server.url,
    CMFT_API_KEY: wrongKey,
    ...env,
  });
  expect(code, output).not.toBe(0);
  expect(output).not.toContain(wrongKey);
  expect(output).not.toContain('syntax error');
  return output;
}

describe('a build that fails in a loader hints at the option to check', () => {
  it('a wrong API key: the apiKey option and its environment variable', async () => {
    const output = await failedBuild({});
    expect(output).toContain('answered 401');
    expect(output).toContain(
      `The Read API at ${server.url} refused the API key. Check the apiKey option of comfortable() in astro.config, and the environment variable it is read from (CMFT_API_KEY by default)`,
    );
  }, 60_000);

  it('the same when the site gives its own schemas, so that only load() runs', async () => {
    const output = await failedBuild({ FIXTURE_SCHEMAS: 'own' });
    expect(output).toContain('Check the apiKey option of comfortable()');
  }, 60_000);

  it('a server that is down: the baseUrl option', async () => {
    const baseUrl = `http://127.0.0.1:${await freePort()}/v1`;
    const output = await failedBuild({ CMFT_BASE_URL: baseUrl, CMFT_API_KEY: 'tiny-key' });
    expect(output).toContain('ECONNREFUSED');
    expect(output).toContain(
      `The Read API at ${baseUrl} could not be reached. Check the baseUrl option of comfortable() in astro.config (CMFT_BASE_URL by default)`,
    );
  }, 60_000);

  it('a repository that does not exist: the repository option', async () => {
    const output = await failedBuild({ CMFT_API_KEY: 'tiny-key', FIXTURE_REPOSITORY: 'tiny-typo' });
    expect(output).toContain('Check the repository option of comfortable() ("tiny-typo")');
  }, 60_000);

  it('a collection that does not exist: its API id in content.config.ts', async () => {
    const output = await failedBuild({ CMFT_API_KEY: 'tiny-key', FIXTURE_COLLECTION: 'newz' });
    expect(output).toContain(
      'The repository "tiny" has no collection "newz". Check the collection API id in src/content.config.ts',
    );
  }, 60_000);

  it('an alias that does not exist: its API id in content.config.ts', async () => {
    const output = await failedBuild({ CMFT_API_KEY: 'tiny-key', FIXTURE_ALIAS: 'hoem' });
    expect(output).toContain(
      'The repository "tiny" has no alias "hoem". Check the alias API id in src/content.config.ts',
    );
  }, 60_000);

  it('a cache folder that cannot be written: the cacheDir option', async () => {
    const file = join(site.dir, 'a-file');
    await writeFile(file, 'not a folder');
    const output = await failedBuild({ CMFT_API_KEY: 'tiny-key', FIXTURE_CACHE_DIR: join(file, 'cache') });
    expect(output).toContain(
      `Check the cacheDir option of comfortable() (${join(file, 'cache')}): it must be a folder this process may create and write.`,
    );
  }, 60_000);
});
