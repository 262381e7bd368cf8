import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { demoKey } from './helpers/server.ts';
import { freePort, startAstroDev } from './helpers/astro.ts';
import { liveDocFiles } from './helpers/live-docs.ts';
import { relativeLinks } from './helpers/readme.ts';
import { demoWithoutDangling, installSite, packTarball } from './helpers/tarball.ts';

/**
 * The package as a user installs it: `npm pack`ed, with what package.json names and nothing
 * else, source maps that carry their sources, and docs whose links work where the package is
 * read (on npm, in node_modules). The server-rendered site of docs/live.md serves its live page
 * from `astro dev`. (The README's own site, followed step by step, is test/readme-site.test.ts;
 * docs/live.md's site, built and served, is test/live-docs.test.ts.)
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const astroVersion = JSON.parse(readFileSync(join(root, 'node_modules/astro/package.json'), 'utf8')).version as string;

describe('the packed package in a fresh Astro site', () => {
  let server: ReadApiServer;
  let packed: Awaited<ReturnType<typeof packTarball>>;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tarball-site-'));
    const content = join(dir, 'content'); // beside src/, so Astro never reads it
    [server, packed] = await Promise.all([
      demoWithoutDangling(content).then((snapshot) =>
        startServer({ paths: [snapshot], port: 0, watch: false, log: () => {} }),
      ),
      packTarball(),
    ]);
    await installSite(dir, packed.tarball, astroVersion);
  }, 90_000);

  afterAll(async () => {
    await server?.close();
    await Promise.all([dir, packed?.dir].filter(Boolean).map((path) => rm(path!, { recursive: true, force: true })));
  });

  it('holds what the package.json "files" name, and source maps that carry their sources', async () => {
    expect(
      packed.files.filter(
        (file) =>
          !/^(dist\/|types\/|docs\/|components\/|package\.json$|README\.md$|CHANGELOG\.md$|LICENSE$)/.test(file),
      ),
    ).toEqual([]);
    expect(packed.files).toContain('dist/astro/index.js');
    expect(packed.files).toContain('components/RichText.astro'); // comfortable-loader/RichText.astro
    expect(packed.files).toContain('LICENSE'); // the MIT text package.json names
    expect(packed.files).toContain('docs/astro.md');
    const maps = packed.files.filter((file) => file.endsWith('.map'));
    for (const map of maps) {
      const { sources, sourcesContent } = JSON.parse(
        await readFile(join(dir, 'node_modules/comfortable-loader', map), 'utf8'),
      ) as { sources: string[]; sourcesContent?: (string | null)[] };
      expect(sourcesContent?.length, map).toBe(sources.length);
      expect(
        sourcesContent!.every((content) => typeof content === 'string'),
        map,
      ).toBe(true);
    }
  });

  it('runs no script when installed: npm asks no one to allow one', async () => {
    const manifest = JSON.parse(await readFile(join(dir, 'node_modules/comfortable-loader/package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    const run = ['preinstall', 'install', 'postinstall', 'prepare'].filter(
      (name) => manifest.scripts?.[name] !== undefined,
    );
    expect(run).toEqual([]);
  });

  it('links from the README and the docs only to files it holds (so they work on npm), and to headings that exist', () => {
    const pages = packed.files.filter((file) => file === 'README.md' || file.startsWith('docs/'));
    expect(pages.length).toBeGreaterThan(5);
    for (const file of pages) {
      const text = readFileSync(join(root, file), 'utf8');
      for (const link of relativeLinks(text)) {
        const target = posix.normalize(posix.join(posix.dirname(file), link));
        expect(packed.files, `${file} links to ${link}`).toContain(target);
      }
      for (const [, target, anchor] of text.matchAll(/\]\(([^)#\s]*)#([^)\s]+)\)/g)) {
        const linked = target ? posix.normalize(posix.join(posix.dirname(file), target)) : file;
        const slugs = [...readFileSync(join(root, linked), 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) =>
          m[1]!
            .toLowerCase()
            .replace(/[^\w\s-]/g, '')
            .trim()
            .replace(/\s+/g, '-'),
        );
        expect(slugs, `${file} links to ${target}#${anchor}`).toContain(anchor);
      }
    }
  });

  it("serves docs/live.md's post page from astro dev: a post found by its slug, its author, its body through render()", {
    timeout: 120_000,
  }, async () => {
    const live = join(dir, 'live-site');
    await installSite(live, packed.tarball, astroVersion);
    for (const { path, text } of liveDocFiles()) {
      await mkdir(join(live, path, '..'), { recursive: true });
      await writeFile(join(live, path), text);
    }
    const dev = await startAstroDev(live, await freePort(), {
      CMFT_BASE_URL: server.url,
      CMFT_REPOSITORY: 'demo',
      CMFT_API_KEY: demoKey,
    });
    try {
      const response = await fetch(`${dev.url}/en_US/posts/the-slow-boat-to-the-fjords`);
      const page = await response.text();
      expect(response.status, page).toBe(200);
      // astro dev marks elements with their source: data-astro-source-file="…".
      expect(page).toMatch(/<h1[^>]*>The Slow Boat to the Fjords</);
      expect(page).toMatch(/<p[^>]*>By Maren Holt<\/p>/); // included with the post (includes=1)
      expect(page).toContain('<h2 id="twenty-three-landings">Twenty-three landings</h2>');
      expect((await fetch(`${dev.url}/en_US/posts/no-such-post`)).status).toBe(404);
      expect((await fetch(`${dev.url}/fr_FR/posts/the-slow-boat-to-the-fjords`)).status).toBe(404);
      expect(dev.output()).not.toContain(demoKey);
    } finally {
      await dev.stop();
    }
  });
});
