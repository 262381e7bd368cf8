import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.ts';
import { Filter, Sorting } from '../src/api/query.ts';
import { andFilters } from '../src/api/query.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { type AstroDev, copyFixture, freePort, startAstroDev } from './helpers/astro.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';
import { skippedWhen } from './helpers/skip.ts';

/**
 * Live collections in a server-rendered site: `astro dev` on test/fixtures/astro-live, whose
 * pages call getLiveEntry() and getLiveCollection() on each request, against the local Read API
 * on the demo repository. A snapshot swapped in on the server shows on the next request.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const wrongKey = 'not-the-key-5f2b9c1e8a7d';
const chromiumPath = '/usr/bin/chromium';
const demo = JSON.parse(await readFile(demoSnapshot, 'utf8')) as Json;

let server: ReadApiServer;
let dev: AstroDev;
let site: { dir: string; remove(): Promise<void> };

beforeAll(async () => {
  server = await startServer({ paths: [demoSnapshot], watch: false });
  site = await copyFixture('astro-live', 'live-test');
  dev = await startAstroDev(site.dir, await freePort(), {
    CMFT_BASE_URL: server.url,
    CMFT_API_KEY: demoKey,
    CMFT_WRONG_KEY: wrongKey,
  });
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  await server?.close();
  await site?.remove();
});

/** The page's status and HTML. */
async function page(path: string): Promise<{ status: number; html: string }> {
  const response = await fetch(`${dev.url}${path}`);
  return { status: response.status, html: await response.text() };
}
const text = (html: string, selector: RegExp): string | undefined => selector.exec(html)?.[1];
const entryJson = (html: string): Json =>
  JSON.parse(text(html, /<script id="entry" type="application\/json"[^>]*>([\s\S]*?)<\/script>/)!);
/** A copy of the demo snapshot with one post's fields changed. */
function edited(id: string, change: (fields: Json) => void): Json {
  const snapshot = structuredClone(demo);
  change(snapshot.documents.find((document: Json) => document.meta.id === id).fields);
  return snapshot;
}

describe('getLiveEntry in a page', () => {
  it('finds a post by its slug in a locale, with a fallback marked, its author included, its body rendered and cache hints', async () => {
    const { status, html } = await page('/posts/de_CH/night-trains-are-back');
    expect(status).toBe(200);
    expect(text(html, /<h1[^>]*>([^<]*)<\/h1>/)).toBe('Die Nachtzüge sind zurück – und besser als in Erinnerung');
    expect(text(html, /<small id="fallback"[^>]*>([^<]*)</)).toBe('de_DE'); // de_CH has no title of its own
    expect(text(html, /<p id="author"[^>]*>([^<]*)</)).toBe('Lena Vogt');
    expect(text(html, /<p id="author" data-ref="([^"]*)"/)).toBe(
      '{&quot;collection&quot;:&quot;authors&quot;,&quot;id&quot;:&quot;de_CH/100000000000000303&quot;}',
    );
    expect(html).toMatch(/<h2 id="was-sich-geändert-hat">Was sich geändert hat<\/h2>/);
    expect(html).toMatch(/<a data-depth="2" href="#was-sich-geändert-hat"[^>]*>Was sich geändert hat<\/a>/);
    expect(text(html, /<img id="cover" src="([^"]*)"/)).toBe(`${server.origin}/files/demo/images/night-train.svg`);
    const tags = text(html, /data-tags="([^"]*)"/)!.split(' ');
    expect(tags).toEqual(
      expect.arrayContaining([
        'comfortable:demo',
        'comfortable:demo:100000000000000102',
        'comfortable:demo:100000000000000303',
        'comfortable:demo:100000000000000502',
      ]),
    );
    expect(text(html, /data-modified="([^"]*)"/)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('finds an entry by its id, and the entry a reference points to', async () => {
    const post = entryJson((await page('/entries/posts/en_US/100000000000000101')).html);
    expect([post.id, post.data.locale, post.data.contentType, post.data.fields.slug]).toEqual([
      'en_US/100000000000000101',
      'en_US',
      'post',
      'the-slow-boat-to-the-fjords',
    ]);
    expect(post.data.fields.cover[0]).toMatchObject({
      id: expect.any(String),
      src: expect.stringContaining('/files/demo/images/'),
      width: expect.any(Number),
      alt: expect.any(String),
    });
    const { collection, id } = post.data.fields.author;
    const author = entryJson((await page(`/entries/${collection}/${id}`)).html);
    expect([author.id, author.data.contentType]).toEqual([id, 'author']);
  });

  it('finds a page by the alias that points to it', async () => {
    const { status, html } = await page('/pages/about?locale=de_DE');
    expect(status).toBe(200);
    expect(text(html, /<h1 data-id="([^"]*)"/)).toBe('de_DE/100000000000000402');
    expect(html).toMatch(/<div id="content"[^>]*><h2 id="wer-wir-sind">Wer wir sind<\/h2>/);
  });

  it("answers Astro's LiveEntryNotFoundError for an entry that does not exist", async () => {
    const missing = await page('/entries/posts/en_US/100000000000000999');
    expect(missing.status).toBe(404);
    expect(text(missing.html, /<p id="error" data-name="([^"]*)"/)).toBe('LiveEntryNotFoundError');
    expect(missing.html).toContain(
      'Entry posts → document 100000000000000999 in en_US (among the documents of content type &quot;post&quot; of the repository &quot;demo&quot;) was not found.',
    );
    // An alias the loader does not list is not in its collection.
    expect(text((await page('/pages/featuredPost')).html, /<p id="error" data-name="([^"]*)"/)).toBe(
      'LiveEntryNotFoundError',
    );
  });

  it('shows a changed document on the next request once the server has it', async () => {
    const path = '/posts/en_US/swimming-through-zurich';
    const before = text((await page(path)).html, /<h1[^>]*>([^<]*)<\/h1>/);
    expect(before).toBe(demo.documents.find((d: Json) => d.meta.id === '100000000000000104').fields.title.en_US);
    await server.replaceSnapshot(
      edited('100000000000000104', (fields) => (fields.title.en_US = 'Swimming through Zürich, edited live')),
    );
    try {
      expect(text((await page(path)).html, /<h1[^>]*>([^<]*)<\/h1>/)).toBe('Swimming through Zürich, edited live');
    } finally {
      await server.replaceSnapshot(structuredClone(demo));
    }
  });
});

describe('getLiveCollection in a page', () => {
  it("lists what a Filter and a Sorting choose in the locale, as the client's own request does", async () => {
    const { html } = await page('/list?limit=6');
    const ids = [...html.matchAll(/<li data-id="([^"]*)"/g)].map((m) => m[1]);
    const client = createClient({ baseUrl: server.url, repository: 'demo', apiKey: demoKey });
    const filters = new Filter().where('readingMinutes', 'greaterThanEqual', 10).or('featured', 'equal', true);
    const expected = await client.documents({
      locale: 'de_DE',
      filters: andFilters([{ '*.meta.contentType': { equal: 'post' } }], filters.toJSON()),
      sorting: new Sorting().desc('readingMinutes').asc('meta.id'),
      limit: 6,
    });
    expect(ids).toEqual(expected.data.map((document) => `de_DE/${document.meta.id}`));
    const minutes = [...html.matchAll(/data-minutes="(\d+)"/g)].map((m) => Number(m[1]));
    expect(minutes).toEqual([...minutes].sort((a, b) => b - a));
    expect(text(html, /<ol data-tags="([^"]*)"/)).toMatch(
      /^comfortable:demo comfortable:demo:contentType:post comfortable:demo:\d+/,
    );
  });

  it("pages a repository collection restricted by the loader's own filter", async () => {
    const client = createClient({ baseUrl: server.url, repository: 'demo', apiKey: demoKey });
    const expected = await client.collection('longReads', {
      locale: 'en_US',
      filters: [{ '*.fields.featured': { equal: true } }],
    });
    const pageIds = async (n: number) =>
      [...(await page(`/long-reads?page=${n}`)).html.matchAll(/<li data-id="([^"]*)"/g)].map((m) => m[1]);
    expect([...(await pageIds(1)), ...(await pageIds(2))]).toEqual(
      expected.data.slice(0, 4).map((document) => `en_US/${document.meta.id}`),
    );
  });

  it('returns the error of a key the Read API refuses, naming the option and never the key', async () => {
    const { html } = await page('/locked');
    expect(text(html, /<p id="error" data-name="([^"]*)"/)).toBe('ComfortableLiveError');
    expect(text(html, /data-code="([^"]*)"/)).toBe('authentication');
    expect(html).toContain(
      'answered 401: Invalid authentication credentials. Check the apiKey option of comfortableLiveLoader()',
    );
    expect(html).not.toContain(wrongKey);
    expect(dev.output()).not.toContain(wrongKey);
    expect(dev.output()).not.toContain(demoKey);
  });
});

describe.skipIf(skippedWhen(!existsSync(chromiumPath), 'a live page in Chromium', `needs Chromium at ${chromiumPath}`))(
  'a live page in Chromium',
  () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await chromium.launch({
        executablePath: chromiumPath,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('shows the post, its cover and its table of contents, and the edited title after a reload', async () => {
      const tab = await browser.newPage();
      await tab.goto(`${dev.url}/posts/en_US/the-slow-boat-to-the-fjords`);
      expect(await tab.textContent('h1')).toBe('The Slow Boat to the Fjords');
      const cover = await tab
        .locator('#cover')
        .evaluate((img: { complete: boolean; naturalWidth: number; decode(): Promise<void> }) =>
          img.decode().then(
            () => img.naturalWidth,
            () => 0,
          ),
        );
      expect(cover).toBeGreaterThan(0);
      const firstHeading = await tab.locator('nav a').first().getAttribute('href');
      expect(await tab.locator(`#content ${firstHeading}`).count()).toBe(1);

      await server.replaceSnapshot(
        edited('100000000000000101', (fields) => (fields.title.en_US = 'The Slow Boat, seen live')),
      );
      try {
        await tab.reload();
        expect(await tab.textContent('h1')).toBe('The Slow Boat, seen live');
      } finally {
        await server.replaceSnapshot(structuredClone(demo));
        await tab.close();
      }
    });
  },
);
