import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { stripVTControlCharacters } from 'node:util';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { copyDemo } from './helpers/playground.ts';
import { demoKey } from './helpers/server.ts';
import { freePort, startAstroDev } from './helpers/astro.ts';
import { astroBuild, installSite, packTarball } from './helpers/tarball.ts';

/**
 * The package as a user installs it: `npm pack`ed, installed into a fresh Astro 7 site set up
 * as the README's Astro section says (the integration, a `comfortableLoader` collection, one
 * page that renders its post's body with render()), and built against the local Read API. The
 * build succeeds, and nothing it prints is a warning from this package or about it. A second,
 * server-rendered site with the README's live collections serves its live page from `astro dev`. The demo content, less its deliberate dangling
 * reference, and a collection for each content type posts refer to: the warnings a build
 * rightly prints about content are tested elsewhere.
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const astroVersion = JSON.parse(readFileSync(join(root, 'node_modules/astro/package.json'), 'utf8')).version as string;

const site = {
  'astro.config.mjs': `import { defineConfig } from 'astro/config';
import comfortable from 'comfortable-loader/astro';

export default defineConfig({
  integrations: [
    comfortable({
      baseUrl: process.env.CMFT_BASE_URL,
      repository: 'demo',
      apiKey: process.env.CMFT_API_KEY,
      contentTypes: { post: 'posts', author: 'authors', category: 'categories' },
    }),
  ],
});
`,
  'src/content.config.ts': `import { defineCollection } from 'astro:content';
import { comfortableLoader } from 'comfortable-loader/astro';

export const collections = {
  posts: defineCollection({ loader: comfortableLoader({ collection: 'posts', options: { includes: 2 } }) }),
  authors: defineCollection({ loader: comfortableLoader({ contentType: 'author' }) }),
  categories: defineCollection({ loader: comfortableLoader({ contentType: 'category' }) }),
};
`,
  'src/pages/[locale]/[slug].astro': `---
import { getCollection, getEntry, render } from 'astro:content';
import { Image } from 'astro:assets';

export async function getStaticPaths() {
  const posts = await getCollection('posts');
  return posts.map((post) => ({ params: { locale: post.data.locale, slug: post.data.fields.slug }, props: { post } }));
}
const { post } = Astro.props;
const author = post.data.fields.author && (await getEntry(post.data.fields.author));
const cover = post.data.fields.cover?.[0];
const { Content } = await render(post);
---
<h1>{post.data.fields.title}{post.data.fallbacks.title && <small> (shown in {post.data.fallbacks.title})</small>}</h1>
{cover && <Image src={cover.src} width={cover.width} height={cover.height} alt={cover.alt} />}
{author && <a href={\`/\${post.data.locale}/authors/\${author.data.fields.slug}/\`}>{author.data.fields.name}</a>}
<Content />
`,
};

/** A server-rendered site with the README's live collections and live page (section 6). */
const liveSite = {
  'astro.config.mjs': `import { defineConfig, memoryCache } from 'astro/config';

export default defineConfig({ output: 'server', cache: { provider: memoryCache() } });
`,
  'src/live.config.ts': `import { defineLiveCollection } from 'astro:content';
import { comfortableLiveLoader } from 'comfortable-loader/astro';
import { Filter } from 'comfortable-loader';

const connection = { baseUrl: process.env.CMFT_BASE_URL, repository: 'demo', apiKey: process.env.CMFT_API_KEY };
const contentTypes = { post: 'posts', author: 'authors' };

export const collections = {
  posts: defineLiveCollection({ loader: comfortableLiveLoader({ ...connection, contentType: 'post', contentTypes }) }),
  authors: defineLiveCollection({ loader: comfortableLiveLoader({ ...connection, contentType: 'author', contentTypes }) }),
  featured: defineLiveCollection({ loader: comfortableLiveLoader({ ...connection, collection: 'posts', filters: new Filter().where('featured', 'equal', true) }) }),
};
`,
  'src/pages/[locale]/posts/[slug].astro': `---
import { getLiveEntry, getLiveCollection, render } from 'astro:content';
import { Filter, Sorting } from 'comfortable-loader';

const { locale, slug } = Astro.params;
const { entry: post, error } = await getLiveEntry('posts', { field: 'slug', value: slug!, locale });
if (error) return new Response(error.name, { status: error.name === 'LiveEntryNotFoundError' ? 404 : 500 });
Astro.cache.set(post);
const { Content } = await render(post);
const author = post.data.included[post.data.fields.author.id];
const { entries: more } = await getLiveCollection('posts', { locale, sorting: new Sorting().desc('publishedAt'), limit: 3 });
---
<h1>{post.data.fields.title}</h1>
<p id="author">{author?.fields.name}</p>
<ul>{more?.map((other) => <li>{other.data.fields.title}</li>)}</ul>
<Content />
`,
};

/** The demo snapshot and its images, copied into `dir`, less the dangling reference. */
async function demoWithoutDangling(dir: string): Promise<string> {
  const path = await copyDemo(dir);
  const snapshot = JSON.parse(await readFile(path, 'utf8'));
  for (const document of snapshot.documents) {
    const related = document.fields.relatedPosts as { meta: { id: string } }[] | undefined;
    if (related) document.fields.relatedPosts = related.filter((ref) => ref.meta.id !== '100000000000000999');
  }
  await writeFile(path, JSON.stringify(snapshot));
  return path;
}

describe('the packed package in a fresh Astro site', () => {
  let server: ReadApiServer;
  let packed: Awaited<ReturnType<typeof packTarball>>;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tarball-site-'));
    const content = join(dir, 'content'); // beside src/, so Astro never reads it
    [server, packed] = await Promise.all([
      demoWithoutDangling(content).then((snapshot) => startServer({ paths: [snapshot], port: 0, watch: false, log: () => {} })),
      packTarball(),
    ]);
    await installSite(dir, packed.tarball, astroVersion);
  }, 90_000);

  afterAll(async () => {
    await server?.close();
    await Promise.all([dir, packed?.dir].filter(Boolean).map((path) => rm(path!, { recursive: true, force: true })));
  });

  it('holds what the package.json "files" name, and source maps that carry their sources', async () => {
    expect(packed.files.filter((file) => !/^(dist\/|types\/|package\.json$|README\.md$|CHANGELOG\.md$|LICENSE$)/.test(file))).toEqual([]);
    expect(packed.files).toContain('dist/astro/index.js');
    expect(packed.files).toContain('LICENSE'); // the MIT text package.json names
    const maps = packed.files.filter((file) => file.endsWith('.map'));
    for (const map of maps) {
      const { sources, sourcesContent } = JSON.parse(await readFile(join(dir, 'node_modules/comfortable-loader', map), 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
      expect(sourcesContent?.length, map).toBe(sources.length);
      expect(sourcesContent!.every((content) => typeof content === 'string'), map).toBe(true);
    }
  });

  it('builds the README quick setup without a warning from the package', { timeout: 120_000 }, async () => {
    for (const [path, text] of Object.entries(site)) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    const { code, output } = await astroBuild(dir, { CMFT_BASE_URL: server.url, CMFT_API_KEY: demoKey });
    expect(code, output).toBe(0);
    expect(output).not.toMatch(/Sourcemap/i);
    expect(output).not.toMatch(/Invalid content reference/);
    // Astro's own warnings and Vite's about the package's files (colours stripped, as CI forces them).
    const warnings = stripVTControlCharacters(output).split(/\n(?=\S*\d\d:\d\d:\d\d )/).filter((entry) => /\[WARN\]/.test(entry));
    expect(warnings.filter((entry) => /comfortable/.test(entry))).toEqual([]);
    const page = await readFile(join(dir, 'dist/en_US/the-slow-boat-to-the-fjords/index.html'), 'utf8');
    expect(page).toContain('<h1>The Slow Boat to the Fjords');
    expect(page).toContain('<h2 id="twenty-three-landings">Twenty-three landings</h2>'); // the body, through render()
    expect(page).toMatch(/<img [^>]*src="\/_astro\/[^"]+\.svg"/); // the cover, through astro:assets
    expect(page).toMatch(/<a href="\/en_US\/authors\/[^"]+\/">/); // the author, a reference resolved with getEntry
  });

  it("serves the README's live page from astro dev: a post found by its slug, its author, its body through render()", { timeout: 120_000 }, async () => {
    const live = join(dir, 'live-site');
    await installSite(live, packed.tarball, astroVersion);
    for (const [path, text] of Object.entries(liveSite)) {
      await mkdir(join(live, path, '..'), { recursive: true });
      await writeFile(join(live, path), text);
    }
    const dev = await startAstroDev(live, await freePort(), { CMFT_BASE_URL: server.url, CMFT_API_KEY: demoKey });
    try {
      const response = await fetch(`${dev.url}/en_US/posts/the-slow-boat-to-the-fjords`);
      const page = await response.text();
      expect(response.status, page).toBe(200);
      // astro dev marks elements with their source: data-astro-source-file="…".
      expect(page).toMatch(/<h1[^>]*>The Slow Boat to the Fjords</);
      expect(page).toMatch(/<p id="author"[^>]*>Maren Holt<\/p>/); // included with the post (includes=1)
      expect(page.match(/<li[ >]/g)).toHaveLength(3);
      expect(page).toContain('<h2 id="twenty-three-landings">Twenty-three landings</h2>');
      expect((await fetch(`${dev.url}/en_US/posts/no-such-post`)).status).toBe(404);
      expect(dev.output()).not.toContain(demoKey);
    } finally {
      await dev.stop();
    }
  });
});
