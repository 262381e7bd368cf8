import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, createServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { freePort } from './helpers/astro.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';
import { count, viteCli } from './helpers/vite-site.ts';

/**
 * What a Vite user sees when something is wrong, in the plain Vite app of
 * test/fixtures/vite-app (FIXTURE_OPTIONS adds options): a wrong option fails once when the
 * config loads, before any module, with the nearest valid key and no stack trace; a failure of
 * the sync names the option to fix in vite.config, and never the key.
 */

const app = fixture('vite-app');
const wrongKey = 'wrong-read-key-5f3a9c1e7b2d';

let server: ReadApiServer;
let work: string;

beforeAll(async () => {
  server = await startTiny();
  work = await mkdtemp(join(tmpdir(), 'comfortable-vite-errors-'));
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  if (work) await rm(work, { recursive: true, force: true });
});

/** `vite build` of the app from the command line, as a user runs it; it must fail. */
async function failedCli(env: Record<string, string>): Promise<string> {
  const { code, output } = await viteCli(app, ['build', '--logLevel', 'info'], {
    CMFT_BASE_URL: server.url,
    CMFT_API_KEY: tinyKey,
    FIXTURE_VITE_CACHE: join(work, 'cli-cache'),
    FIXTURE_OUT_DIR: join(work, 'cli-dist'),
    ...env,
  });
  expect(code, output).not.toBe(0);
  return output;
}

/** Said once, with no stack trace, and before Vite transformed anything. */
function toldOnceFirst(output: string, message: string): void {
  expect(count(output, message), output).toBe(1);
  expect(output).not.toMatch(/^\s+at /m);
  expect(output).not.toMatch(/transform/);
}

describe('an option error comes once, when the config loads, before any module is transformed', () => {
  it('a misspelt option: the nearest valid key', { timeout: 60_000 }, async () => {
    const output = await failedCli({ FIXTURE_OPTIONS: JSON.stringify({ colections: { news: {} } }) });
    toldOnceFirst(output, 'Unknown option comfortable.colections: did you mean comfortable.collections?');
  });

  it('a misspelt request option of a source: the nearest valid key there', { timeout: 60_000 }, async () => {
    const output = await failedCli({ FIXTURE_OPTIONS: JSON.stringify({ collections: { news: { include: 2 } } }) });
    toldOnceFirst(
      output,
      'Unknown option comfortable.collections.news.include: did you mean comfortable.collections.news.includes?',
    );
  });

  it('an option the environment makes wrong (an empty CMFT_API_KEY): checked once Vite has read .env', {
    timeout: 60_000,
  }, async () => {
    const output = await failedCli({ CMFT_API_KEY: '' });
    toldOnceFirst(
      output,
      'Invalid option comfortable.apiKey: expected a Read API key of the repository, not an empty string',
    );
  });

  it('nothing to sync', { timeout: 60_000 }, async () => {
    const output = await failedCli({ FIXTURE_OPTIONS: JSON.stringify({ collections: {}, aliases: [] }) });
    toldOnceFirst(output, 'Invalid option comfortable.collections: nothing to sync');
  });

  it('the dev server refuses to start with the same message', async () => {
    process.env.FIXTURE_OPTIONS = JSON.stringify({ colections: { news: {} } });
    try {
      await expect(
        createServer({ root: app, configFile: join(app, 'vite.config.ts'), logLevel: 'silent' }),
      ).rejects.toThrow('Unknown option comfortable.colections: did you mean comfortable.collections?');
    } finally {
      delete process.env.FIXTURE_OPTIONS;
    }
  });
});

describe('a failed sync names the option to fix in vite.config', () => {
  it('a wrong API key: the apiKey option and CMFT_API_KEY, once, and never the key', { timeout: 60_000 }, async () => {
    const output = await failedCli({ CMFT_API_KEY: wrongKey });
    expect(output).toContain('answered 401');
    expect(
      count(
        output,
        `The Read API at ${server.url} refused the API key. Check the apiKey option of comfortable() in vite.config, and the environment variable it is read from (CMFT_API_KEY by default)`,
      ),
    ).toBe(1);
    expect(output).not.toContain(wrongKey);
  });

  /** `vite build` of the app in this process, with the connection and options given; resolves to the message it failed with. */
  async function failedBuild(options: object, env: Record<string, string> = {}): Promise<string> {
    Object.assign(process.env, {
      CMFT_BASE_URL: server.url,
      CMFT_API_KEY: tinyKey,
      FIXTURE_VITE_CACHE: join(work, 'vite-cache'),
      FIXTURE_OUT_DIR: join(work, 'dist'),
      FIXTURE_OPTIONS: JSON.stringify(options),
      ...env,
    });
    try {
      await build({ root: app, configFile: join(app, 'vite.config.ts'), logLevel: 'silent' });
    } catch (error) {
      return (error as Error).message;
    } finally {
      delete process.env.FIXTURE_OPTIONS;
    }
    throw new Error('the build did not fail');
  }

  it('a server that is down: the baseUrl option and CMFT_BASE_URL', async () => {
    const baseUrl = `http://127.0.0.1:${await freePort()}/v1`;
    expect(await failedBuild({ baseUrl })).toContain(
      `The Read API at ${baseUrl} could not be reached. Check the baseUrl option of comfortable() in vite.config (CMFT_BASE_URL by default)`,
    );
  });

  it('a base URL without the API version: the baseUrl option', async () => {
    expect(await failedBuild({ baseUrl: server.origin })).toContain(
      `Check the baseUrl option of comfortable() (${server.origin}, CMFT_BASE_URL by default): the Read API's base URL ends in its version`,
    );
  });

  it('a repository that does not exist: the repository option', async () => {
    expect(await failedBuild({ repository: 'tiny-typo' })).toContain(
      'Check the repository option of comfortable() ("tiny-typo")',
    );
  });

  it('a collection or an alias that does not exist: its API id in the options', async () => {
    expect(await failedBuild({ collections: { newz: {} } })).toContain(
      'The repository "tiny" has no collection "newz". Check the collection API id in the collections option of comfortable() in vite.config.',
    );
    expect(await failedBuild({ aliases: ['hoem'] })).toContain(
      'The repository "tiny" has no alias "hoem". Check the alias API id in the aliases option of comfortable() in vite.config.',
    );
  });

  it('a cache folder that cannot be written: the cacheDir option', async () => {
    const file = join(work, 'a-file');
    await writeFile(file, 'not a folder');
    expect(await failedBuild({ cacheDir: join(file, 'cache') })).toContain(
      `Check the cacheDir option of comfortable() (${join(file, 'cache')}): it must be a folder this process may create and write.`,
    );
  });
});
