import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, type ReloadEvent, startServer } from '../src/server/index.ts';
import { signWebhook } from '../src/wire/webhook.ts';
import { type AstroDev, freePort, runAstro, startAstroDev, startBuiltServer } from './helpers/astro.ts';
import { liveDocFiles, liveDocInstalls, liveDocsSite } from './helpers/live-docs.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';

/**
 * docs/live.md, followed as a new user follows it: its files, pasted as they stand into a
 * server-rendered site that installed what the page says and nothing else, pass `astro check`
 * and build with the Node adapter; the built server,
 * run as a host runs it against the local Read API on the demo repository, answers 404 only for
 * what does not exist, 503 (never cached) while the Read API is down, and keeps pages in the
 * cache its route rules configure until the purge endpoint receives the Read API's webhook.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const secret = 'docs-site-webhook-secret-4b1d';
const demo = JSON.parse(await readFile(demoSnapshot, 'utf8')) as Json;
/** Every request the Read API answered, one line each, across its restarts. */
const requests: string[] = [];
let api: ReadApiServer;
let site: { dir: string; remove(): Promise<void> };
let web: AstroDev | undefined;

/** Starts the Read API, on the port it had before when it is started again. */
async function startApi(port = 0): Promise<void> {
  api = await startServer({ paths: [demoSnapshot], port, watch: false, log: (line) => requests.push(line) });
}

beforeAll(async () => {
  site = await liveDocsSite('live-docs');
  await startApi();
}, 60_000);

afterAll(async () => {
  await web?.stop();
  await api?.close();
  await site?.remove();
});

/** A page of the built site: its status, HTML and what the cache did (`MISS`, `HIT`, null when it kept nothing). */
async function get(path: string): Promise<{ status: number; html: string; cache: string | null }> {
  const response = await fetch(`${web!.url}${path}`);
  return { status: response.status, html: await response.text(), cache: response.headers.get('x-astro-cache') };
}
const title = (html: string): string | undefined => /<h1>([^<]*)<\/h1>/.exec(html)?.[1];

/** Posts the Read API's webhook for a reload to the site's purge endpoint, signed as the server signs it. */
async function purge(event: ReloadEvent, key = secret): Promise<number> {
  const body = JSON.stringify(event);
  const response = await fetch(`${web!.url}/api/purge`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...signWebhook(key, body) },
    body,
  });
  return response.status;
}

describe('the page as written', () => {
  it('names the files of a site: the live config, the error answer, a 404 page, a post, a list, the Astro config, the purge endpoint', () => {
    expect(liveDocFiles().map((file) => file.path)).toEqual([
      'src/live.config.ts',
      'src/lib/content-error.ts',
      'src/pages/404.astro',
      'src/pages/[locale]/posts/[slug].astro',
      'src/pages/[locale]/index.astro',
      'astro.config.mjs',
      'src/pages/api/purge.ts',
    ]);
  });

  it('tells what to install: the package and the adapter, and for astro check what it asks for', () => {
    expect(liveDocInstalls()).toEqual({
      dependencies: ['comfortable-loader', '@astrojs/node'],
      devDependencies: ['@astrojs/check', 'typescript'],
    });
    // What the reader does not install is not there: the site's files must not need it.
    expect(existsSync(join(site.dir, 'node_modules/@types/node'))).toBe(false);
    expect(existsSync(join(site.dir, 'node_modules/@astrojs/check'))).toBe(true);
  });

  it('passes astro check with the strict tsconfig, with no error and no warning', { timeout: 180_000 }, async () => {
    const { code, output } = await runAstro(site.dir, ['check']);
    expect(output).toMatch(/- 0 errors\n- 0 warnings/);
    expect(code, output).toBe(0);
  });
});

describe('the site, built and served', () => {
  beforeAll(async () => {
    const { code, output } = await runAstro(site.dir, ['build']);
    expect(code, output).toBe(0);
    web = await startBuiltServer(site.dir, await freePort(), {
      CMFT_BASE_URL: api.url,
      CMFT_REPOSITORY: 'demo',
      CMFT_API_KEY: demoKey,
      CMFT_WEBHOOK_SECRET: secret,
    });
  }, 180_000);

  it('answers 200 for a post and a list, 404 for a missing slug and for a locale the repository lacks', async () => {
    const post = await get('/de_CH/posts/night-trains-are-back');
    expect([post.status, title(post.html)]).toEqual([200, 'Die Nachtzüge sind zurück – und besser als in Erinnerung']);
    expect(post.html).toContain('<p>By Lena Vogt</p>'); // the author the request included
    expect(post.html).toMatch(/<time datetime="2025-09-03T05:30:00.000Z">/); // publishedAt, a Date by the fields schema
    expect(post.html).toContain('<h2 id="was-sich-geändert-hat">Was sich geändert hat</h2>'); // the body, through render()
    const list = await get('/en_US');
    expect(list.status).toBe(200);
    expect(list.html).toContain('<a href="/en_US/posts/the-slow-boat-to-the-fjords">The Slow Boat to the Fjords</a>');

    for (const path of ['/en_US/posts/no-such-post', '/fr_FR/posts/night-trains-are-back', '/fr_FR']) {
      const missing = await get(path);
      expect([path, missing.status, missing.cache]).toEqual([path, 404, null]); // the 404 page, not kept
      expect(missing.html).toContain('<h1>Not found</h1>');
    }
  });

  it('serves a page a second time from the cache its route rule configures, without asking the Read API', async () => {
    for (const path of ['/de_DE/posts/the-slow-boat-to-the-fjords', '/de_DE']) {
      const first = await get(path);
      expect([path, first.status, first.cache]).toEqual([path, 200, 'MISS']);
      const asked = requests.length;
      const second = await get(path);
      expect([second.status, second.cache, second.html]).toEqual([200, 'HIT', first.html]);
      expect(requests.length).toBe(asked);
    }
  });

  it("keeps an edit out of a cached page until the Read API's webhook reaches the purge endpoint", async () => {
    const path = '/en_US/posts/swimming-through-zurich';
    const before = title((await get(path)).html);
    const edited = structuredClone(demo);
    edited.documents.find((document: Json) => document.meta.id === '100000000000000104').fields.title.en_US =
      'Swimming Through Zürich, edited';
    const event = await api.replaceSnapshot(edited);
    try {
      expect(event.changed).toEqual(['100000000000000104']);
      expect(title((await get(path)).html)).toBe(before); // still the cached page
      expect(await purge(event, 'not-the-secret')).toBe(401);
      expect(title((await get(path)).html)).toBe(before);
      expect(await purge(event)).toBe(204);
      const after = await get(path);
      expect([after.cache, title(after.html)]).toEqual(['MISS', 'Swimming Through Zürich, edited']);
    } finally {
      await purge(await api.replaceSnapshot(structuredClone(demo)));
    }
  });

  it('answers 503, never cached, while the Read API is down, naming the option to check and not the key, and the page once it is back', async () => {
    const cached = '/de_DE/posts/the-slow-boat-to-the-fjords';
    const path = '/en_US/posts/night-trains-are-back'; // never asked for: not in the cache
    const port = api.port;
    await api.close();
    for (let i = 0; i < 2; i++) {
      const down = await get(path);
      expect([down.status, down.cache]).toEqual([503, null]);
    }
    expect((await get(cached)).cache).toBe('HIT'); // what the cache holds is still served
    expect(web!.output()).toContain('Check the baseUrl option of comfortableLiveLoader() in src/live.config.ts');
    expect(web!.output()).not.toContain(demoKey);

    await startApi(port);
    const back = await get(path);
    expect([back.status, back.cache, title(back.html)]).toEqual([
      200,
      'MISS',
      'Night Trains Are Back, and Better Than You Remember',
    ]);
  });
});

describe('astro dev, with the connection in .env as the README has it', () => {
  it('serves a post: getSecret, and the loader for the repository, read .env where process.env has nothing', {
    timeout: 120_000,
  }, async () => {
    await web?.stop();
    await writeFile(
      join(site.dir, '.env'),
      `CMFT_BASE_URL=${api.url}\nCMFT_REPOSITORY=demo\nCMFT_API_KEY=${demoKey}\n`,
    );
    // Only the file has the connection (the test's own environment has none).
    const { CMFT_BASE_URL, CMFT_REPOSITORY, CMFT_API_KEY } = process.env;
    expect([CMFT_BASE_URL, CMFT_REPOSITORY, CMFT_API_KEY]).toEqual([undefined, undefined, undefined]);
    web = await startAstroDev(site.dir, await freePort());
    const post = await get('/de_CH/posts/night-trains-are-back');
    const html = post.html.replace(/ data-astro-source-[a-z]+="[^"]*"/g, ''); // what astro dev adds
    expect([post.status, title(html)]).toEqual([200, 'Die Nachtzüge sind zurück – und besser als in Erinnerung']);
  });
});
