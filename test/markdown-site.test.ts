import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../src/server/index.ts';
import { differences, tree } from './helpers/dist.ts';
import { journalEnv, serveJournal, writeJournalSite } from './helpers/markdown-site.ts';
import { astro, installSite, packTarball } from './helpers/tarball.ts';

/**
 * Markdown fields end to end: a fresh Astro 7 site that installed the packed package renders the
 * articles of test/fixtures/markdown.json with `render: 'body'` (a localized Markdown body) and
 * `markdown: ['intro']` (a Markdown intro that is not localized), through Astro's own Markdown
 * pipeline, in en_US and in de_DE (which falls back to en_US).
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const astroVersion = JSON.parse(readFileSync(join(root, 'node_modules/astro/package.json'), 'utf8')).version as string;

let server: ReadApiServer;
let snapshot: any;
let packed: Awaited<ReturnType<typeof packTarball>>;
let work: string;
let site: string;
let check: { code: number | null; output: string };
let first: { code: number | null; output: string };
let clean = 0;

const build = (dir = site, env: Record<string, string> = {}) =>
  astro(dir, ['build'], { ...journalEnv(server), ...env });
const page = (path: string) => readFile(join(site, 'dist', path, 'index.html'), 'utf8');
/** The part of a page inside the element with this id. */
const part = (html: string, id: string) => {
  const match = new RegExp(`<(\\w+) id="${id}"[^>]*>([\\s\\S]*?)</\\1>\\s*<(?:section|article|aside|/body)`).exec(html);
  return match?.[2] ?? '';
};
/** The attributes of the first image Astro's image pipeline made (its file under /_astro/), if any. */
const optimised = (html: string) => {
  const tag = /<img [^>]*src="\/_astro\/apples_[\w-]+\.svg"[^>]*>/.exec(html)?.[0];
  return tag && Object.fromEntries([...tag.matchAll(/([\w-]+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
};
/** What the loader's summary line says it rendered of Markdown. */
const markdownRendered = (log: string) =>
  [...stripVTControlCharacters(log).matchAll(/; (\d+) Markdown values rendered/g)].map((m) => Number(m[1]));
/** Pages the build log reports as rendered (not taken from the last build). */
const renderedPages = (log: string) =>
  [...stripVTControlCharacters(log).matchAll(/[├└]─ (\/\S+\.html)( \((?:cached|restored)\))?/g)]
    .filter((m) => !m[2])
    .map((m) => m[1]!)
    .sort();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'markdown-site-'));
  site = join(work, 'site');
  [{ server, snapshot }, packed] = await Promise.all([serveJournal(join(work, 'content')), packTarball()]);
  await installSite(site, packed.tarball, astroVersion);
  await writeJournalSite(site);
  first = await build();
  check = await astro(site, ['check'], journalEnv(server));
}, 300_000);

afterAll(async () => {
  await server?.close();
  await Promise.all([work, packed?.dir].filter(Boolean).map((path) => rm(path!, { recursive: true, force: true })));
});

describe('a Markdown body rendered by render(entry) with the site’s pipeline', () => {
  it('builds, and astro check finds no error in pages that read data.markdown and render()', () => {
    expect(first.code, first.output).toBe(0);
    expect(check.output).toMatch(/0 errors/);
    expect(check.code, check.output).toBe(0);
  });

  it('renders the body as Astro renders Markdown: heading ids, a repeated heading numbered, Shiki, GFM, emphasis, links', async () => {
    const body = part(await page('en_US/brewing'), 'body');
    expect(body).toContain('<h2 id="method">Method</h2>');
    expect(body).toContain('<h2 id="method-1">Method</h2>');
    expect(body).toContain('<h3 id="notes--tips">Notes &amp; tips</h3>');
    expect(body).toContain('<pre class="astro-code');
    expect(body).toMatch(/<table>\s*<thead>\s*<tr>\s*<th>Beans<\/th>/);
    expect(body).toContain('<em>slowly</em>');
    expect(body).toContain('<strong>patience</strong>');
    expect(body).toContain('<a href="https://example.com/roast">the roaster’s site</a>');
    expect(body).not.toContain('## Method');
    // The image of the repository's asset, through Astro's image pipeline with the asset's size.
    expect(optimised(body)).toMatchObject({ alt: 'Red apples', width: '100', height: '80' });
  });

  it('gives render(entry).headings in order, with the ids of the HTML', async () => {
    const html = await page('en_US/brewing');
    const headings = JSON.parse(/<script type="application\/json" id="headings">([^<]*)<\/script>/.exec(html)![1]!);
    expect(headings).toEqual([
      { depth: 2, slug: 'method', text: 'Method' },
      { depth: 2, slug: 'method-1', text: 'Method' },
      { depth: 3, slug: 'notes--tips', text: 'Notes & tips' },
    ]);
  });

  it('renders German bodies on German pages, the English body where German has none, and empty content without a body', async () => {
    const german = part(await page('de_DE/brewing'), 'body');
    expect(german).toContain('<h2 id="methode">Methode</h2>');
    expect(german).toContain('<h2 id="methode-1">Methode</h2>');
    expect(german).toContain('<em>langsam</em>');
    const fallback = part(await page('de_DE/grinding'), 'body');
    expect(fallback).toContain('<h2 id="burrs">Burrs</h2>');
    expect(fallback).toContain('<em>conical</em>');
    for (const path of ['en_US/water', 'de_DE/water']) {
      const html = await page(path);
      expect(part(html, 'body').trim()).toBe('');
      expect(html).toContain('<script type="application/json" id="headings">[]</script>');
    }
  });

  it('renders a second Markdown field (markdown option) that <RichText field> shows, its asset image optimised', async () => {
    const intro = part(await page('de_DE/brewing'), 'intro'); // not localized: the same in every locale
    expect(intro).toContain('<strong>short</strong>');
    expect(optimised(intro)).toMatchObject({ alt: 'Red apples', width: '100', height: '80' });
    expect(part(await page('en_US/water'), 'intro').trim()).toBe('');
  });

  it('takes a link to a document through <RichText>’s links rule', async () => {
    const linked = part(await page('en_US/brewing'), 'linked');
    expect(linked).toContain('<a href="/en_US/grinding/">the grinder</a>');
    expect(linked).toContain('<h2 id="method-1">Method</h2>');
    // render(entry) keeps the link as the editor wrote it.
    expect(part(await page('en_US/brewing'), 'body')).toContain('href="https://api.cmft.io/v1/journal/documents/502"');
  });

  it('counts what it rendered: each Markdown value once in a cold build, none in a warm one', async () => {
    // 501 and 502 in two locales: a body and an intro each; 503 has neither.
    expect(markdownRendered(first.output)).toEqual([8]);
    const before = await tree(site);
    const warm = await build();
    expect(warm.code, warm.output).toBe(0);
    expect(markdownRendered(warm.output)).toEqual([0]);
    expect(renderedPages(warm.output)).toEqual([]);
    expect(differences(before, await tree(site))).toEqual([]);
  }, 120_000);

  it('renders again exactly the pages of an entry whose Markdown changed in the CMS, as a clean build does', async () => {
    const grinding = snapshot.documents.find((d: any) => d.meta.id === '502');
    grinding.fields.body.en_US = grinding.fields.body.en_US.replace('A *conical*', 'A **flat**');
    grinding.meta.updatedAt = new Date(Date.now() + 1000).toISOString();
    grinding.meta.revision += 1;
    await server.replaceSnapshot(structuredClone(snapshot));
    const rebuilt = await build();
    expect(rebuilt.code, rebuilt.output).toBe(0);
    expect(markdownRendered(rebuilt.output)).toEqual([4]); // 502's body and intro, in two locales
    expect(renderedPages(rebuilt.output)).toEqual(['/de_DE/grinding/index.html', '/en_US/grinding/index.html']);
    expect(part(await page('de_DE/grinding'), 'body')).toContain('<strong>flat</strong>');
    const dir = join(site, `clean-${++clean}`);
    const fresh = await build(site, { SITE_OUT_DIR: join(dir, 'dist'), SITE_CACHE_DIR: join(dir, 'cache') });
    expect(fresh.code, fresh.output).toBe(0);
    expect(differences(await tree(site), await tree(dir))).toEqual([]);
  }, 180_000);
});

describe('a site with a rehype plugin of its own', () => {
  it('renders the Markdown field with it: the pipeline is the site’s (unified() with its plugins)', async () => {
    const other = join(work, 'rehype-site');
    await installSite(other, packed.tarball, astroVersion);
    await writeJournalSite(other, { rehype: true });
    const built = await build(other);
    expect(built.code, built.output).toBe(0);
    const body = part(await readFile(join(other, 'dist/en_US/brewing/index.html'), 'utf8'), 'body');
    expect(body).toContain('<h2 data-site-plugin="yes" id="method">Method</h2>');
    expect(body).toContain('<h2 data-site-plugin="yes" id="method-1">Method</h2>');
    expect(body).toContain('<pre class="astro-code');
    expect(body).not.toContain('## Method');
  }, 180_000);
});
