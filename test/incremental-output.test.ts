import { cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { runAstro } from './helpers/astro.ts';
import { differences, tree } from './helpers/dist.ts';
import { copyDemo, filesUnder } from './helpers/playground.ts';
import { demoKey } from './helpers/server.ts';

/**
 * Incremental builds that are incremental in time too: with `experimental.incrementalBuild`, the
 * integration keeps `dist/` between builds (Astro no longer empties it and copies every reused
 * page back) and removes what a build no longer produces. Three copies of the playground are
 * built against the same content after each change: one that keeps its `dist/`, one whose
 * `dist/` is removed before each build (CI, where only Astro's cache folder is kept), and a clean
 * one (no cache, no dist). After every change, the whole `dist/` of the first two (every file and
 * its bytes, `_astro/` included) equals the clean one's.
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const id = (n: number) => `100000000000000${n}`;

let work: string;
let server: ReadApiServer;
let snapshot: any; // eslint-disable-line @typescript-eslint/no-explicit-any
const sites = { kept: '', ci: '', clean: '', image: '' };
/** The dist/ of the last clean build. */
let lastClean: Map<string, Buffer>;

/** A copy of the playground inside the repository (so `comfortable-loader` resolves to this package). */
async function copyPlayground(name: string): Promise<string> {
  const dir = join(root, 'test/.tmp', `${name}-${process.pid}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const item of ['astro.config.mjs', 'tsconfig.json', 'src'])
    await cp(join(root, 'playground', item), join(dir, item), { recursive: true });
  return dir;
}

async function build(site: string): Promise<{ output: string; rendered: string[]; reused: string[] }> {
  const { code, output } = await runAstro(site, ['build'], { CMFT_BASE_URL: server.url, CMFT_API_KEY: demoKey });
  expect(code, output).toBe(0);
  const rendered: string[] = [];
  const reused: string[] = [];
  for (const match of stripVTControlCharacters(output).matchAll(/[├└]─ (\/\S+\.html)( \((?:cached|restored)\))?/g))
    (match[2] ? reused : rendered).push(match[1]!);
  return { output: stripVTControlCharacters(output), rendered, reused };
}

/** After a change: the three sites built (the CI one without its dist/, the clean one from nothing), and the trees compared. */
async function rebuildAll() {
  await rm(join(sites.ci, 'dist'), { recursive: true, force: true });
  await Promise.all(
    ['dist', 'node_modules'].map((folder) => rm(join(sites.clean, folder), { recursive: true, force: true })),
  );
  const kept = await build(sites.kept);
  const ci = await build(sites.ci);
  await build(sites.clean);
  const expected = await tree(sites.clean);
  lastClean = expected;
  expect(differences(await tree(sites.kept), expected)).toEqual([]);
  expect(differences(await tree(sites.ci), expected)).toEqual([]);
  return { kept, ci };
}

const publish = () => server.replaceSnapshot(structuredClone(snapshot));
function touch(record: { meta: { updatedAt: string; revision: number } }) {
  record.meta.updatedAt = new Date(Date.now() + 1000).toISOString();
  record.meta.revision += 1;
}
const documentOf = (n: number) => snapshot.documents.find((d: { meta: { id: string } }) => d.meta.id === id(n));

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'cmft-output-'));
  const snapshotPath = await copyDemo(work);
  snapshot = JSON.parse(await readFile(snapshotPath, 'utf8'));
  server = await startServer({ paths: [snapshotPath], watch: false });
  [sites.kept, sites.ci, sites.clean] = await Promise.all([
    copyPlayground('output-kept'),
    copyPlayground('output-ci'),
    copyPlayground('output-clean'),
  ]);
  for (const site of [sites.kept, sites.ci]) await build(site);
}, 180_000);

afterAll(async () => {
  await server?.close();
  await Promise.all(
    [work, ...Object.values(sites)].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })),
  );
});

describe('an incremental build keeps dist/ and leaves exactly what a clean build makes', () => {
  it('a rebuild with no change renders no content page and says what it kept', { timeout: 300_000 }, async () => {
    const { kept, ci } = await rebuildAll();
    // The root only redirects to the default locale: it has no getStaticPaths, so no key.
    for (const { rendered, reused } of [kept, ci]) {
      expect(rendered).toEqual(['/index.html']);
      expect(reused.length).toBeGreaterThan(100);
    }
    expect(kept.output).toMatch(
      /dist\/: 1 page rendered, [\d,]+ pages kept from the last build, 0 pages restored from Astro's cache, [\d,]+ files? of the last build removed \(0 pages no longer built\)/,
    );
    expect(ci.output).toMatch(
      /dist\/: 1 page rendered, 0 pages kept from the last build, [\d,]+ pages restored from Astro's cache/,
    );
    expect(kept.output).toContain('(cached)');
    expect(kept.output).not.toContain('(restored)'); // no page copied back one by one
    expect(ci.output).not.toContain('(restored)');
  });

  it("a document's text edited", { timeout: 300_000 }, async () => {
    const post = documentOf(104);
    post.fields.title.en_US = 'Swimming through Zürich, twice';
    touch(post);
    await publish();
    const { kept } = await rebuildAll();
    expect(kept.rendered).toContain('/en/posts/swimming-through-zurich/index.html');
    // The line counts the pages Astro rendered apart from those it kept.
    const [, rendered, left] = /dist\/: ([\d,]+) pages? rendered, ([\d,]+) pages? kept/.exec(kept.output) ?? [];
    expect(Number(rendered)).toBe(kept.rendered.length);
    expect(Number(left?.replace(/,/g, ''))).toBe(kept.reused.length);
  });

  it('a document deleted: its pages are gone', { timeout: 300_000 }, async () => {
    snapshot.documents = snapshot.documents.filter((d: { meta: { id: string } }) => d.meta.id !== id(104));
    for (const document of snapshot.documents) {
      for (const [name, value] of Object.entries(document.fields)) {
        if (Array.isArray(value))
          document.fields[name] = value.filter((ref: { meta?: { id: string } }) => ref?.meta?.id !== id(104));
      }
    }
    await publish();
    const { kept } = await rebuildAll();
    expect(kept.output).toMatch(/\(([1-9]\d*) pages no longer built\)/);
    expect((await tree(sites.kept)).has('en/posts/swimming-through-zurich/index.html')).toBe(false);
  });

  it('a slug changed: the page moves, and the old one is gone', { timeout: 300_000 }, async () => {
    const post = documentOf(102);
    const old = post.fields.slug as string;
    post.fields.slug = `${old}-again`;
    touch(post);
    await publish();
    await rebuildAll();
    const files = await tree(sites.kept);
    expect(files.has(`en/posts/${old}/index.html`)).toBe(false);
    expect(files.has(`en/posts/${old}-again/index.html`)).toBe(true);
  });

  it('an asset edited', { timeout: 300_000 }, async () => {
    const asset = snapshot.assets.find((a: { meta: { id: string } }) => a.meta.id === id(502));
    asset.fields.description.en_US = 'A night train waits at a snowy platform.';
    touch(asset);
    await publish();
    await rebuildAll();
  });

  it("a component's CSS changed: the new stylesheet, and no old one", { timeout: 300_000 }, async () => {
    for (const site of [sites.kept, sites.ci, sites.clean]) {
      const card = join(site, 'src/components/PostCard.astro');
      await writeFile(
        card,
        `${await readFile(card, 'utf8')}\n<style>.post-card h3 { letter-spacing: 0.01em; }</style>\n`,
      );
    }
    await rebuildAll();
  });
});

describe('what is left to Astro gives a correct build too, and says why', () => {
  const config = () => join(sites.kept, 'astro.config.mjs');

  it('a page of dist/ edited by hand, and a file added, are replaced and removed', { timeout: 120_000 }, async () => {
    const page = join(sites.kept, 'dist/en/index.html');
    await writeFile(page, `${await readFile(page, 'utf8')}<!-- edited by hand -->`);
    await writeFile(join(sites.kept, 'dist/stray.txt'), 'put there by hand');
    const { output } = await build(sites.kept);
    expect(output).toMatch(
      /dist\/: [\d,]+ pages? rendered, [\d,]+ pages kept from the last build, 1 page restored from Astro's cache/,
    );
    expect(differences(await tree(sites.kept), lastClean)).toEqual([]);
  });

  it("a page of dist/ that is a link to Astro's copy, edited in place: the copy is dropped and the page rendered", {
    timeout: 120_000,
  }, async () => {
    // The CI site's pages came back from Astro's cache as links to its copies.
    const page = join(sites.ci, 'dist/en/authors/index.html');
    const copy = join(sites.ci, 'node_modules/.astro/dist/en/authors/index.html');
    expect((await stat(page)).ino).toBe((await stat(copy)).ino);
    await writeFile(page, `${await readFile(page, 'utf8')}<!-- edited by hand -->`); // in place: the copy too
    const { rendered } = await build(sites.ci);
    expect(rendered).toContain('/en/authors/index.html');
    expect(differences(await tree(sites.ci), lastClean)).toEqual([]);
    expect(await readFile(copy, 'utf8')).not.toContain('edited by hand');
  });

  it("Astro's incremental cache laid out otherwise: dist/ emptied as Astro does", { timeout: 120_000 }, async () => {
    const manifest = join(sites.kept, 'node_modules/.astro/incremental-build.json');
    await writeFile(manifest, JSON.stringify({ ...JSON.parse(await readFile(manifest, 'utf8')), version: 2 }));
    const { output, rendered } = await build(sites.kept);
    expect(output).toContain("Astro's incremental cache is not laid out as this package knows it");
    expect(rendered.length).toBeGreaterThan(100);
    expect(differences(await tree(sites.kept), lastClean)).toEqual([]);
  });

  it('an outDir outside the project, the option off, or the flag off: left to Astro', {
    timeout: 240_000,
  }, async () => {
    const original = await readFile(config(), 'utf8');
    try {
      const outside = join(work, 'outside-dist');
      const { code, output } = await runAstro(sites.kept, ['build', '--outDir', outside], {
        CMFT_BASE_URL: server.url,
        CMFT_API_KEY: demoKey,
      });
      expect(code, output).toBe(0);
      expect(output).toContain(
        `dist/ is emptied and filled again by Astro in each build: outDir ${outside}/ is not a folder inside the project`,
      );
      const files = await filesUnder(outside);
      expect(new Set(files.map((file) => relative(outside, file)))).toEqual(new Set(lastClean.keys()));

      await writeFile(config(), original.replace('comfortable({', 'comfortable({ incrementalOutput: false,'));
      const off = await build(sites.kept);
      expect(off.output).toContain(
        'dist/ is emptied and filled again by Astro in each build: the incrementalOutput option is false',
      );
      expect(differences(await tree(sites.kept), lastClean)).toEqual([]);

      await writeFile(
        config(),
        original.replace('experimental: { incrementalBuild: true }', 'experimental: { incrementalBuild: false }'),
      );
      const flagOff = await build(sites.kept);
      expect(flagOff.output).not.toMatch(/dist\/(:| is emptied)/);
      expect(differences(await tree(sites.kept), lastClean)).toEqual([]);
    } finally {
      await writeFile(config(), original);
    }
  });
});

describe('the image service of a rebuild that renders no page', () => {
  let images: Server;
  afterAll(() => images?.close());

  it('is loaded, so an image whose cache expired is optimised again (Astro alone fails with InvalidImageService)', {
    timeout: 180_000,
  }, async () => {
    // Answers without cache headers: Astro's copy of the optimised image expires at once.
    const svg = await readFile(join(root, 'test/fixtures/images/apples.svg'));
    images = createServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'image/svg+xml' }).end(svg),
    );
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
    const site = join(root, 'test/.tmp', `image-site-${process.pid}`); // inside the repository: its node_modules resolve
    await rm(site, { recursive: true, force: true });
    await mkdir(join(site, 'src/pages'), { recursive: true });
    sites.image = site;
    await writeFile(
      join(site, 'astro.config.mjs'),
      `import { defineConfig } from 'astro/config';\nimport { comfortable } from ${JSON.stringify(join(root, 'src/astro/index.ts'))};\n\n` +
        `export default defineConfig({ experimental: { incrementalBuild: true }, image: { domains: ['127.0.0.1'] }, integrations: [comfortable({ repository: 'demo', contentTypes: {} })] });\n`,
    );
    await writeFile(join(site, 'src/content.config.ts'), 'export const collections = {};\n');
    await writeFile(
      join(site, 'src/pages/[slug].astro'),
      `---\nimport { Image } from 'astro:assets';\nexport const getStaticPaths = () => [{ params: { slug: 'a' }, cacheKey: 'one' }];\n---\n<Image src="${origin}/apples.svg" width={40} height={32} alt="Apples" />\n`,
    );
    for (const round of [1, 2]) {
      const { code, output } = await runAstro(site, ['build'], { CMFT_BASE_URL: server.url, CMFT_API_KEY: demoKey });
      expect(code, `build ${round}:\n${output}`).toBe(0);
      if (round === 2) expect(stripVTControlCharacters(output)).toContain('(cached)');
    }
  });
});
