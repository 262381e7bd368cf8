import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startServer } from '../src/server/index.ts';
import { buildPlayground, copyDemo, testTmp } from './helpers/playground.ts';

// The built playground in a real browser (Debian's Chromium through playwright-core), served by
// a small static file server with the Read API already stopped: the site stands on its own.

const chromiumPath = '/usr/bin/chromium';
const missing = existsSync(chromiumPath)
  ? undefined
  : `${chromiumPath} is missing; install it with: apt-get update && apt-get install -y chromium`;
if (missing) console.warn(`Skipping the browser tests: ${missing}`);

const types: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.svg': 'image/svg+xml',
  '.webp': 'image/webp',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
};

/** Serves a folder the way a static host does: `/path/` is `/path/index.html`. */
function serveFolder(dir: string): Promise<Server> {
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname);
    const file = normalize(join(dir, path.endsWith('/') ? `${path}index.html` : path));
    if (!file.startsWith(dir + sep)) return void response.writeHead(403).end();
    stat(file)
      .then((info) => (info.isDirectory() ? join(file, 'index.html') : file))
      .then((target) => readFile(target).then((body) => ({ target, body })))
      .then(
        ({ target, body }) =>
          response.writeHead(200, { 'content-type': types[extname(target)] ?? 'application/octet-stream' }).end(body),
        () => response.writeHead(404, { 'content-type': 'text/plain' }).end('not found'),
      );
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** The structural view of an <img> the page functions below use (this project has no DOM types). */
type ImageElement = {
  complete: boolean;
  naturalWidth: number;
  addEventListener(type: string, listener: () => void): void;
};

/** The natural width of the image matching the selector once it has loaded (0 if it failed). */
function loadedWidth(page: Page, selector: string): Promise<number> {
  return page.locator(selector).evaluate(
    (img: ImageElement) =>
      new Promise<number>((resolve) => {
        if (img.complete) return resolve(img.naturalWidth);
        img.addEventListener('load', () => resolve(img.naturalWidth));
        img.addEventListener('error', () => resolve(0));
      }),
  );
}

describe.skipIf(missing)('the built playground in Chromium', () => {
  let work: string;
  let site: Server;
  let origin: string;
  let browser: Browser;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'cmft-browser-'));
    const api = await startServer({ paths: [await copyDemo(work)], watch: false });
    try {
      await buildPlayground({ baseUrl: api.url, outDir: join(work, 'dist'), cacheDir: join(work, 'cache') });
    } finally {
      await api.close();
    }
    site = await serveFolder(join(work, 'dist'));
    origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
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
    await mkdir(testTmp, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => (site ? site.close(resolve) : resolve(undefined)));
    if (work) await rm(work, { recursive: true, force: true });
  });

  test('a post shows its cover, links to its author, and the author page shows the avatar', async () => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const failed: string[] = [];
    page.on('requestfailed', (request) => failed.push(request.url()));
    page.on(
      'response',
      (response) => response.status() >= 400 && failed.push(`${response.status()} ${response.url()}`),
    );

    await page.goto(`${origin}/en/posts/the-slow-boat-to-the-fjords/`);
    expect(await page.textContent('h1')).toContain('The Slow Boat to the Fjords');
    expect(await loadedWidth(page, 'img.cover')).toBeGreaterThan(0);
    await page.screenshot({ path: join(testTmp, 'browser-post.png') });

    await page.click('a.author-link');
    await page.waitForURL(`${origin}/en/authors/maren-holt/`);
    expect(await page.textContent('h1')).toBe('Maren Holt');
    expect(await loadedWidth(page, 'img.avatar')).toBeGreaterThan(0);
    await page.screenshot({ path: join(testTmp, 'browser-author.png'), fullPage: true });

    expect(failed).toEqual([]);
    await page.close();
  });

  test('the locale switcher keeps the page and a fallback is marked in the browser too', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/en/posts/learning-to-read-a-tide-table/`);
    await page.click('nav.locale-switcher a[hreflang="de-CH"]');
    await page.waitForURL(`${origin}/de-ch/posts/learning-to-read-a-tide-table/`);
    expect(await page.getAttribute('html', 'lang')).toBe('de-CH');
    expect(await page.textContent('h1 .fallback')).toBe('auf Englisch angezeigt');
    await page.close();
  });
});

if (missing) test.skip(`browser tests skipped: ${missing}`, () => {});
