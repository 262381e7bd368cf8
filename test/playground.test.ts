import { once } from 'node:events';
import { access, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Changeset } from '../src/sync/changeset.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { buildPlayground, copyDemo, filesUnder } from './helpers/playground.ts';
import { demoKey } from './helpers/server.ts';

// End to end: the playground site built with `astro build` against the local Read API on a copy
// of the demo snapshot; then the snapshot is edited, the server reloads it, and a second build
// must show exactly those edits. Each build takes a few seconds.

const id = (n: number) => `100000000000000${n}`;
// The site's locales as Astro routes them (astro.config.mjs), each with the lang of its pages.
const locales = ['en', 'de', 'de-ch'];
const langs: Record<string, string> = { en: 'en-US', de: 'de-DE', 'de-ch': 'de-CH' };

let work: string;
let snapshotPath: string;
let server: ReadApiServer;
let outDir: string;
let cacheDir: string;
let changesetFile: string;
/** The first build's log, colours stripped. */
let firstLog: string;

const page = (path: string) => readFile(join(outDir, path, 'index.html'), 'utf8');
const exists = (path: string) =>
  access(join(outDir, path, 'index.html')).then(
    () => true,
    () => false,
  );
const text = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
const fallbackNote = /<small class="fallback"[^>]*>[\s\S]*?<\/small>/g;
/** The first element with this tag (or `tag.class`), as HTML. */
function element(html: string, selector: string): string {
  const [tag, cls] = selector.split('.');
  const match = new RegExp(
    `<${tag}(?:\\s[^>]*)?${cls ? `class="[^"]*\\b${cls}\\b[^"]*"[^>]*` : ''}>([\\s\\S]*?)</${tag}>`,
  ).exec(html);
  return match?.[1] ?? '';
}
/** The h1's text without its fallback note. */
const headline = (html: string) => text(element(html, 'h1').replace(fallbackNote, ''));
/** `field:locale` of every fallback note in the HTML. */
const fallbacks = (html: string) =>
  [...html.matchAll(/data-fallback-field="([^"]+)" data-fallback-from="([^"]+)"/g)].map((m) => `${m[1]}:${m[2]}`);
/** Slugs of the post cards in the HTML. */
const cards = (html: string) => [...html.matchAll(/data-post="([^"]+)"/g)].map((m) => m[1]);
const readChangesets = async (): Promise<Changeset[]> =>
  (await readFile(changesetFile, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Changeset);

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'cmft-playground-'));
  snapshotPath = await copyDemo(work);
  outDir = join(work, 'dist');
  cacheDir = join(work, 'cache');
  changesetFile = join(work, 'changesets.jsonl');
  server = await startServer({ paths: [snapshotPath] });
  firstLog = stripVTControlCharacters(await buildPlayground({ baseUrl: server.url, outDir, cacheDir, changesetFile }));
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the first build', () => {
  test("warns of nothing but the demo's deliberate dangling reference", () => {
    // Vite's warnings about the package's own files (the playground bundles them, as a linked
    // package in a monorepo would be) count too.
    const warnings = firstLog.split(/\n(?=\S*\d\d:\d\d:\d\d )/).filter((entry) => /\[WARN\]/.test(entry));
    expect(warnings.map((entry) => entry.replace(/^\S+ /, '').trim())).toEqual([
      `[WARN] [comfortable-loader] Dangling reference: document ${id(115)}, field relatedPosts points to ${id(999)}, which the server does not have`,
    ]);
  });

  test('the root sends visitors to the default locale', async () => {
    const html = await readFile(join(outDir, 'index.html'), 'utf8');
    expect(html).toMatch(/http-equiv="refresh" content="\d+;url=\/en\/"/);
  });

  test('the home page shows the document the alias home points to, in each locale', async () => {
    for (const locale of locales) {
      const html = await page(locale);
      expect(html).toContain(`data-document="${id(401)}"`);
      expect(headline(html)).toBe('Northwind Journal');
      expect(html).toContain(`<html lang="${langs[locale]}"`);
    }
    expect(await page('de-ch')).toContain('Grüezi!'); // de_CH has its own body
    expect(fallbacks(element(await page('de-ch'), 'h1'))).toEqual(['title:de_DE']); // but not its own title
  });

  test("every page links to itself in Astro's other locales (hreflang), and each link resolves", async () => {
    const html = await page('de-ch/posts/night-trains-are-back');
    const links = [...html.matchAll(/<link rel="alternate" hreflang="([^"]+)" href="([^"]+)"/g)].map(
      (m) => `${m[1]} ${m[2]}`,
    );
    expect(links).toEqual(['en-US /en/posts/night-trains-are-back/', 'de-DE /de/posts/night-trains-are-back/']);
    for (const path of ['en/posts', 'de/authors/maren-holt', 'de-ch/about', 'en/tags/news']) {
      const hrefs = [...(await page(path)).matchAll(/<link rel="alternate" hreflang="[^"]+" href="\/([^"]+)\/"/g)];
      expect(hrefs).toHaveLength(2);
      for (const [, href] of hrefs) expect(await exists(href!), `${path} → ${href}`).toBe(true);
    }
  });

  test("a post's body is rendered with render(): headings with ids, its image optimised by Astro", async () => {
    const html = await page('en/posts/the-slow-boat-to-the-fjords');
    expect(html).toContain('<h2 id="twenty-three-landings">Twenty-three landings</h2>');
    const image = /<img [^>]*alt="A ferry crosses a still fjord at dawn"[^>]*>/.exec(html)?.[0] ?? '';
    expect(image).toMatch(/src="\/_astro\/fjord-dawn_[\w-]+\.svg"/);
    expect(image).toMatch(/width="\d+"/);
  });

  test('the header links to the same page in every locale', async () => {
    const html = element(await page('de/posts/night-trains-are-back'), 'nav.locale-switcher');
    for (const locale of locales) expect(html).toContain(`href="/${locale}/posts/night-trains-are-back/"`);
    expect(html).toMatch(/href="\/de\/posts\/night-trains-are-back\/"[^>]*aria-current="true"/);
  });

  test('the post list shows every post with its tags, and tag pages list the tagged posts', async () => {
    for (const locale of locales) {
      const html = await page(`${locale}/posts`);
      expect(cards(html)).toHaveLength(26);
      expect(html).toContain(`href="/${locale}/tags/featured/"`);
      expect(html).toContain(`href="/${locale}/tags/long-read/"`);
    }
    expect((await page('en/posts')).indexOf('our-summer-ferry-guide-is-out')).toBeGreaterThan(-1);
    expect(cards(await page('en/tags/news')).sort()).toEqual([
      'how-we-choose-the-stories-we-tell',
      'letters-from-our-readers-winter-mailbag',
      'our-summer-ferry-guide-is-out',
    ]);
    expect(cards(await page('de-ch/tags/archive'))).toContain('the-harbour-in-winter');
  });

  test('a post page shows its author (linked), category, related posts and cover image', async () => {
    const html = await page('en/posts/the-slow-boat-to-the-fjords');
    expect(headline(html)).toBe('The Slow Boat to the Fjords');
    expect(html).toMatch(/<a class="author-link" href="\/en\/authors\/maren-holt\/">Maren Holt<\/a>/);
    expect(html).toMatch(/<a class="category-link" href="\/en\/categories\/#slow-travel">Slow Travel<\/a>/);
    expect(cards(element(html, 'section.related'))).toEqual(['night-trains-are-back']);
    const cover = /<img src="(\/_astro\/fjord-dawn[^"]+)"[^>]*class="cover"/.exec(html);
    expect(cover, 'the cover goes through <Image> into /_astro/').not.toBeNull();
    await expect(access(join(outDir, cover![1]!))).resolves.toBeUndefined();
    expect(fallbacks(html)).toEqual([]);
  });

  test('a post page in German is German throughout, links included', async () => {
    const html = await page('de/posts/the-slow-boat-to-the-fjords');
    expect(headline(html)).toBe('Mit dem langsamen Boot in die Fjorde');
    expect(html).toContain('href="/de/authors/maren-holt/"');
    expect(html).toContain('>Langsam reisen</a>');
    expect(fallbacks(element(html, 'h1'))).toEqual([]);
  });

  test('related posts that form a cycle are all linked, and a dangling one is skipped', async () => {
    expect(cards(element(await page('en/posts/night-trains-are-back'), 'section.related'))).toEqual([
      'a-weekend-in-bergen-without-a-car',
    ]);
    expect(cards(element(await page('en/posts/a-weekend-in-bergen-without-a-car'), 'section.related'))).toEqual([
      'the-slow-boat-to-the-fjords',
    ]);
    const edinburgh = await page('en/posts/edinburgh-on-a-rainy-day');
    expect(cards(element(edinburgh, 'section.related'))).toEqual(['walking-the-west-highland-way']);
    expect(edinburgh).not.toContain(id(999));
  });

  test('an author page shows the avatar and their posts', async () => {
    for (const locale of locales) {
      const html = await page(`${locale}/authors/maren-holt`);
      expect(headline(html)).toBe('Maren Holt');
      expect(html).toMatch(/<img src="\/_astro\/avatar-coral[^"]+"[^>]*class="avatar"/);
      expect(cards(element(html, 'section')).sort()).toEqual([
        'a-weekend-in-bergen-without-a-car',
        'bread-soup-and-a-wood-stove',
        'our-summer-ferry-guide-is-out',
        'the-harbour-in-winter',
        'the-last-lighthouse-keepers',
        'the-slow-boat-to-the-fjords',
      ]);
      expect(html).toContain(`href="/${locale}/posts/the-slow-boat-to-the-fjords/"`); // the favourite post
    }
  });

  test('the categories page, built from virtual:comfortable/queries/categories, lists every category', async () => {
    const en = await page('en/categories');
    expect([...en.matchAll(/data-category="(\d+)"/g)].map((m) => m[1]).sort()).toEqual(
      [201, 202, 203, 204, 205].map(id),
    );
    expect(text(en)).toContain('Slow Travel');
    expect(text(en)).toContain('Trains, ferries and long walks');
    const ch = await page('de-ch/categories');
    expect(ch).toMatch(/<h2>Draussen <\/h2>/); // de_CH's own title: no note
    expect(fallbacks(/<li id="slow-travel"[\s\S]*?<\/h2>/.exec(ch)![0])).toEqual(['title:de_DE']);
  });

  test('a de_CH page marks the fields that fall back to another locale', async () => {
    const html = await page('de-ch/posts/learning-to-read-a-tide-table');
    expect(headline(html)).toBe('Learning to Read a Tide Table');
    expect(fallbacks(element(html, 'article'))).toEqual(['title:en_US', 'excerpt:en_US', 'body:en_US']);
    expect(element(html, 'h1')).toContain('auf Englisch angezeigt');
    expect(fallbacks(await page('en/posts/learning-to-read-a-tide-table'))).toEqual([]);
    expect(fallbacks(element(await page('de-ch/posts/the-slow-boat-to-the-fjords'), 'h1'))).toEqual(['title:de_DE']);
  });

  test('the events page reads the fields inside sections, in each locale, with a fallback named by path', async () => {
    const events = (html: string) => [...html.matchAll(/data-event="(\d+)"/g)].map((m) => m[1]);
    const en = await page('en/events');
    expect(events(en)).toEqual([id(601), id(602)]); // soonest first
    expect(text(en)).toContain('Reading Night at the Harbour');
    expect(text(en)).toContain('Our writers read from the summer issue on the deck of a moored ferry.');
    expect(en).toMatch(/hosted by <a class="author-link" href="\/en\/authors\/maren-holt\/">Maren Holt<\/a>/);
    expect(en).toContain('href="/en/posts/night-trains-are-back/"');
    expect(en).toMatch(/<img src="\/_astro\/harbour-boats[^"]+"[^>]*class="poster"/);
    expect(fallbacks(en)).toEqual([]);
    const de = await page('de/events');
    expect(text(de)).toContain('Lesenacht am Hafen');
    expect(fallbacks(de)).toEqual(['details.headline:en_US']); // the meetup has an English headline only
    expect(text(await page('de-ch/events'))).toContain('Lesenacht am Hafe ');
  });

  test('the onSync hook saw every source added', async () => {
    const changesets = await readChangesets();
    expect(changesets).toHaveLength(1);
    expect(changesets[0]!.sources['collection:posts']!.added).toHaveLength(26);
    expect(changesets[0]!.sources['alias:home']!.added).toEqual([id(401)]);
    expect(changesets[0]!.sources['query:categories']!.added).toHaveLength(5);
  });
});

describe('a second build after editing the snapshot', () => {
  beforeAll(async () => {
    const snapshot = JSON.parse(await readFile(snapshotPath, 'utf8'));
    const now = new Date().toISOString();
    const edit = (docId: string, change: (fields: Record<string, any>) => void) => {
      const doc = snapshot.documents.find((d: { meta: { id: string } }) => d.meta.id === docId);
      change(doc.fields);
      doc.meta.revision += 1;
      doc.meta.updatedAt = now; // as the CMS does on every save
    };
    edit(id(102), (fields) => (fields.title.en_US = 'Night Trains Are Back for Good'));
    edit(id(101), (fields) => delete fields.title.de_DE);
    snapshot.documents = snapshot.documents.filter((d: { meta: { id: string } }) => d.meta.id !== id(125));
    snapshot.aliases.find((a: { apiId: string }) => a.apiId === 'home').document = id(405);

    const reloaded = once(server.events, 'reload');
    await writeFile(`${snapshotPath}.tmp`, JSON.stringify(snapshot, null, 2));
    await rename(`${snapshotPath}.tmp`, snapshotPath); // one change event, never a half-written file
    await reloaded;
    await rm(changesetFile, { force: true });
    await buildPlayground({ baseUrl: server.url, outDir, cacheDir, changesetFile });
  }, 120_000);

  test('the edited title is on its page, in the post list and in related posts', async () => {
    expect(headline(await page('en/posts/night-trains-are-back'))).toBe('Night Trains Are Back for Good');
    expect(text(await page('en/posts'))).toContain('Night Trains Are Back for Good');
    expect(text(element(await page('en/posts/the-slow-boat-to-the-fjords'), 'section.related'))).toContain(
      'Night Trains Are Back for Good',
    );
    expect(text(await page('en/posts'))).not.toContain('Better Than You Remember');
  });

  test('the deleted post is gone everywhere, and a post relating to it still builds', async () => {
    for (const locale of locales) {
      expect(await exists(`${locale}/posts/the-harbour-in-winter`)).toBe(false);
      expect(cards(await page(`${locale}/posts`))).toHaveLength(25);
      expect(cards(await page(`${locale}/tags/archive`))).not.toContain('the-harbour-in-winter');
    }
    const html = await page('en/posts/what-to-pack-for-slow-travel'); // its only related post was the deleted one
    expect(element(html, 'section.related')).toBe('');
    expect(html).not.toContain('the-harbour-in-winter');
  });

  test('the home page follows the alias to its new document', async () => {
    expect(headline(await page('en'))).toBe('The Sunday Letter');
    expect(headline(await page('de'))).toBe('Der Sonntagsbrief');
    expect(await page('de-ch')).toContain(`data-document="${id(405)}"`);
  });

  test('a dropped translation falls back, and the page says so', async () => {
    const de = await page('de/posts/the-slow-boat-to-the-fjords');
    expect(headline(de)).toBe('The Slow Boat to the Fjords');
    expect(fallbacks(element(de, 'h1'))).toEqual(['title:en_US']);
    expect(element(de, 'h1')).toContain('auf Englisch angezeigt');
    expect(fallbacks(element(await page('de-ch/posts/the-slow-boat-to-the-fjords'), 'h1'))).toEqual(['title:en_US']);
    expect(fallbacks(element(await page('en/posts/the-slow-boat-to-the-fjords'), 'h1'))).toEqual([]);
  });

  test('the onSync changeset names exactly those changes', async () => {
    const changesets = await readChangesets();
    expect(changesets).toHaveLength(1);
    const { sources, records } = changesets[0]!;
    expect(sources['collection:posts']!.updated).toEqual(expect.arrayContaining([id(101), id(102)]));
    expect(sources['collection:posts']!.removed).toEqual([id(125)]);
    expect(sources['collection:posts']!.added).toEqual([]);
    expect(sources['alias:home']).toMatchObject({ added: [id(405)], removed: [id(401)] });
    expect(records.removed).toEqual([id(125)]);
    expect(records.updated.sort()).toEqual([id(101), id(102)]);
    expect(sources['query:categories']).toEqual({ added: [], updated: [], removed: [] });
  });
});

describe('the API key', () => {
  test('is in no file of the build output, the caches or the generated types', async () => {
    const folders = [outDir, cacheDir, join(import.meta.dirname, '../playground/.astro')];
    let checked = 0;
    for (const folder of folders) {
      for (const file of await filesUnder(folder)) {
        const content = await readFile(file);
        expect(content.includes(demoKey), `${file} holds the API key`).toBe(false);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect((await filesUnder(join(cacheDir, 'comfortable'))).length).toBeGreaterThan(0);
  });
});
