import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { type AstroDev, freePort, runAstro, startAstroDev, startBuiltServer } from './helpers/astro.ts';
import { liveDocsSite } from './helpers/live-docs.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';

/**
 * A misspelt option of `comfortableLiveLoader()` in docs/live.md's site (`contenType` for the
 * posts). With `comfortable()` in astro.config, as the page has it, `astro build` and `astro dev`
 * stop at it with the build-time loader's suggestion, asking nothing of the Read API and with no
 * key where the site is built; without the integration the site builds, and the built server
 * answers the pages' 503 with the loader's error, never a 500.
 */

const suggestion =
  'Unknown option contenType of comfortableLiveLoader() for the live collection "posts" in src/live.config.ts: ' +
  'did you mean contentType?';

let api: ReadApiServer;
/** Every request the Read API answered. */
const requests: string[] = [];
let site: { dir: string; remove(): Promise<void> };
let web: AstroDev | undefined;
/** What the site is given where it is built, and where it runs: a key the check does not use. */
let env: Record<string, string>;

/** Writes the page's src/live.config.ts with `contentType` as the posts' option written `as`. */
async function postsOption(as: string): Promise<void> {
  const path = join(site.dir, 'src/live.config.ts');
  const text = await readFile(path, 'utf8');
  await writeFile(path, text.replace(/\b(contentType|contenType): 'post'/, `${as}: 'post'`));
}

beforeAll(async () => {
  [site, api] = await Promise.all([
    liveDocsSite('live-check'),
    startServer({ paths: [demoSnapshot], watch: false, log: (line) => requests.push(line) }),
  ]);
  env = { CMFT_BASE_URL: api.url, CMFT_REPOSITORY: 'demo', CMFT_API_KEY: demoKey };
  await postsOption('contenType');
}, 60_000);

afterAll(async () => {
  await web?.stop();
  await api?.close();
  await site?.remove();
});

describe('without the integration', () => {
  const config = () => join(site.dir, 'astro.config.mjs');
  let asDocumented: string;
  beforeAll(async () => {
    asDocumented = await readFile(config(), 'utf8');
    const without = asDocumented.replace(/^.*comfortable.*\n/gm, '');
    expect(without).not.toContain('comfortable');
    await writeFile(config(), without);
  });
  afterAll(async () => writeFile(config(), asDocumented));

  it("builds, and the built server answers the posts' pages 503 with the loader's error, never a 500", {
    timeout: 180_000,
  }, async () => {
    const built = await runAstro(site.dir, ['build'], env);
    expect(built.code, built.output).toBe(0);
    web = await startBuiltServer(site.dir, await freePort(), env);
    for (const path of ['/en_US', '/en_US/posts/the-slow-boat-to-the-fjords']) {
      const response = await fetch(`${web.url}${path}`);
      expect([path, response.status, await response.text()]).toEqual([
        path,
        503,
        'The content is unavailable right now; try again in a minute.',
      ]);
    }
    // What contentError() logs: the option and the fix, for the collection.
    expect(web.output()).toContain(
      'Live collection "posts": Unknown option contenType of comfortableLiveLoader() in src/live.config.ts: ' +
        'did you mean contentType?',
    );
    await web.stop();
    web = undefined;
  });
});

describe('with comfortable() in astro.config, as docs/live.md has it', () => {
  /** Where the site is built: no connection at all. */
  const builder = () => ({ CMFT_BASE_URL: api.url });

  it('astro build stops at the option, with the suggestion, asking nothing of the Read API', {
    timeout: 180_000,
  }, async () => {
    const asked = requests.length;
    const { code, output } = await runAstro(site.dir, ['build'], builder());
    expect(code).not.toBe(0);
    expect(output).toContain(suggestion);
    expect(output).not.toContain(demoKey);
    expect(requests.slice(asked)).toEqual([]);
  });

  it('astro dev does not start, with the same message', { timeout: 120_000 }, async () => {
    const asked = requests.length;
    const told = await startAstroDev(site.dir, await freePort(), env).then(
      async (dev) => {
        await dev.stop();
        return `served:\n${dev.output()}`;
      },
      (error: Error) => error.message, // what it printed before it exited
    );
    expect(told).toContain(suggestion);
    expect(requests.slice(asked)).toEqual([]);
  });

  it('astro build passes once the option is right, still asking nothing of the Read API', {
    timeout: 180_000,
  }, async () => {
    await postsOption('contentType');
    const asked = requests.length;
    const { code, output } = await runAstro(site.dir, ['build'], builder());
    expect(code, output).toBe(0);
    expect(existsSync(join(site.dir, 'dist/server/entry.mjs'))).toBe(true);
    expect(requests.slice(asked)).toEqual([]);
  });
});
