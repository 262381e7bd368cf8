import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { copyFixture, freePort, runAstro, startAstroDev } from './helpers/astro.ts';
import { paths, pdf, tinyWithFileAssets } from './helpers/file-assets.ts';
import { brokenLinks, linkCount } from './helpers/links.ts';
import { runIn } from './helpers/pull.ts';
import { tinyKey } from './helpers/server.ts';

/**
 * A site built from a pulled copy (CMFT_SNAPSHOT) asks a server that lives only as long as the
 * build: nothing the built site holds may point at it. Its file assets and the links of its
 * richtext become paths of the site (under Astro's `base`), the build copies those files into
 * dist/, and `astro dev` serves the same paths. The fixture has the base `/shop`.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let cms: ReadApiServer;
let site: { dir: string; remove(): Promise<void> };
const copy = { CMFT_SNAPSHOT: 'content/tiny.json', CMFT_API_KEY: undefined, CMFT_BASE_URL: undefined };
const sitePath = (path: string) => `/shop/_comfortable/files/tiny/${path}`;
let dist: string;
let html: string;

beforeAll(async () => {
  cms = await startServer({ paths: [tinyWithFileAssets()], watch: false });
  site = await copyFixture('astro-copy', 'pull-site-files');
  dist = join(site.dir, 'dist');
  writeFileSync(
    join(site.dir, 'comfortable.config.json'),
    JSON.stringify({ baseUrl: cms.url, repository: 'tiny', apiKey: tinyKey, collections: { news: {} } }),
  );
  const pulled = await runIn(site.dir, ['pull', '--assets']);
  expect(pulled.code, pulled.stderr).toBe(0);
  // The CMS is gone: the copy's build needs nothing of it.
  await cms.close();
  const built = await runAstro(site.dir, ['build'], copy);
  expect(built.code, built.output).toBe(0);
  expect(built.output).toContain('Copied 3 files of the snapshot to /shop/_comfortable/files/tiny/');
  html = readFileSync(join(dist, 'index.html'), 'utf8');
}, 240_000);

afterAll(async () => {
  await site?.remove();
});

describe('a build from a copy', () => {
  it('links only to files of dist/ and to hosts off this machine, whatever the CMS does', () => {
    expect(brokenLinks(dist, { base: '/shop/' })).toEqual([]);
    expect(linkCount(dist)).toBeGreaterThanOrEqual(6); // images, the PDF, the richtext's images
    expect(html).not.toMatch(/127\.0\.0\.1|localhost/);
  });

  it("copies a file asset into dist/ under a path of the site, and the page links it (with Astro's base)", () => {
    expect(readFileSync(join(dist, '_comfortable/files/tiny', paths.pdf))).toEqual(pdf);
    expect(html).toContain(`<a href="${sitePath(paths.pdf)}" data-file="302">Printable card</a>`);
  });

  it("gives the file asset's entry that path as its src, in the content collection and in the virtual module", () => {
    const { collection, virtual } = JSON.parse(readFileSync(join(dist, 'files.json'), 'utf8')) as Json;
    const card = {
      kind: 'file',
      id: '302',
      src: sitePath(paths.pdf),
      alt: 'Printable card',
      mimeType: 'application/pdf',
      fileName: 'printable-card.pdf',
    };
    expect(collection.find((entry: Json) => entry.id === '101').images).toEqual([card]);
    expect(virtual.find((entry: Json) => entry.id === '101').images).toEqual([card]);
  });

  it('leaves images to Astro, which optimises them during the build', () => {
    const { collection } = JSON.parse(readFileSync(join(dist, 'files.json'), 'utf8')) as Json;
    // An image's src stays the in-process server's: <Image> downloads it while the build runs.
    expect(collection.find((entry: Json) => entry.id === '100').images[0]).toMatchObject({
      kind: 'image',
      src: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/files\/tiny\/images\/apples\.svg$/),
    });
    expect(html).toMatch(/<img[^>]* src="\/shop\/_astro\/apples[\w.-]*\.svg"/);
    expect(readFileSync(join(dist, '_comfortable/files/tiny', paths.plain))).toBeTruthy();
  });

  it('rewrites the links of richtext: the rendered HTML (but the images Astro optimises) and the raw HTML of the entry', () => {
    const article = html.slice(html.indexOf('data-id="100"'));
    const rendered = article.slice(0, article.indexOf('<div class="raw">'));
    const raw = article.slice(article.indexOf('<div class="raw">'), article.indexOf('</article>'));
    expect(rendered).toMatch(/<img[^>]* src="\/shop\/_astro\/apples[\w.-]*\.svg"/); // optimised
    expect(rendered).toContain(`<img src="${sitePath(paths.plain)}" alt="Plain">`); // no size: a file of the site
    expect(raw).toContain(
      `<img src="${sitePath(paths.apples)}" alt="Apples"><img src="${sitePath(paths.plain)}" alt="Plain">`,
    );
    const { collection } = JSON.parse(readFileSync(join(dist, 'files.json'), 'utf8')) as Json;
    expect(collection.find((entry: Json) => entry.id === '100').text.html).toContain(sitePath(paths.plain));
  });

  it('warns about a file the copy lacks, and builds', async () => {
    rmSync(join(site.dir, 'content', paths.pdf));
    try {
      const built = await runAstro(site.dir, ['build'], copy);
      expect(built.code, built.output).toBe(0);
      expect(built.output).toContain(
        `1 files the site links to could not be copied from the snapshot's folder, so their links lead nowhere: ${paths.pdf} (missing). Pull the copy again with --assets.`,
      );
    } finally {
      writeFileSync(join(site.dir, 'content', paths.pdf), pdf);
    }
  }, 120_000);
});

describe('astro dev on a copy', () => {
  it('serves the same paths, and only the files of the copy', async () => {
    const dev = await startAstroDev(site.dir, await freePort(), copy);
    const origin = new URL(dev.url).origin;
    try {
      const page = await (await fetch(`${origin}/shop/`)).text();
      expect(page).toContain(`<a href="${sitePath(paths.pdf)}" data-file="302"`);
      expect(page).toContain(`<img src="${sitePath(paths.plain)}" alt="Plain">`);
      const file = await fetch(`${origin}${sitePath(paths.pdf)}`);
      expect([file.status, file.headers.get('content-type')]).toEqual([200, 'application/pdf']);
      expect(Buffer.from(await file.arrayBuffer())).toEqual(pdf);
      const again = await fetch(`${origin}${sitePath(paths.pdf)}`, {
        headers: { 'if-none-match': file.headers.get('etag')! },
      });
      expect(again.status).toBe(304);
      writeFileSync(join(site.dir, 'content/notes.txt'), 'not an asset'); // beside the copy, but no asset's
      for (const path of ['tiny.json', 'notes.txt', 'docs/missing.pdf']) {
        const refused = await fetch(`${origin}${sitePath(path)}`);
        await refused.arrayBuffer();
        expect(refused.status, path).toBe(404);
      }
    } finally {
      await dev.stop();
    }
  }, 120_000);
});
