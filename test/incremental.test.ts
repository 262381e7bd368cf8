import { readFile, rm } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { buildPlayground, copyDemo, filesUnder } from './helpers/playground.ts';

// Incremental builds end to end: the playground turns on Astro's `experimental.incrementalBuild`
// and keys every page with `data.cacheKey` or `pageKey()`. After each edit of the snapshot, an
// incremental build (same Astro cache folder as before) must render again every page whose
// HTML changed, by Astro's own report, and its whole output must equal a clean build of the same
// content (a fresh cache folder), byte for byte.

const id = (n: number) => `100000000000000${n}`;

let work: string;
let server: ReadApiServer;
let snapshot: any;
/** The incremental site: one Astro cache folder and one outDir for every build. */
let incremental: { outDir: string; cacheDir: string };
/** The last clean build's output, file by file. */
let before: Map<string, Buffer>;
let clean = 0;

/** Pages the build log reports, each as rendered or taken from the last build (colours or not: CI forces them). */
function report(log: string): { rendered: string[]; reused: string[] } {
  const rendered: string[] = [];
  const reused: string[] = [];
  for (const match of stripVTControlCharacters(log).matchAll(/[├└]─ (\/\S+\.html)( \((?:cached|restored)\))?/g))
    (match[2] ? reused : rendered).push(match[1]!);
  return { rendered: rendered.sort(), reused: reused.sort() };
}

async function output(outDir: string): Promise<Map<string, Buffer>> {
  const files = await filesUnder(outDir);
  return new Map(
    await Promise.all(files.sort().map(async (file) => [relative(outDir, file), await readFile(file)] as const)),
  );
}

async function cleanBuild(): Promise<Map<string, Buffer>> {
  const dir = join(work, `clean-${++clean}`);
  await buildPlayground({ baseUrl: server.url, outDir: join(dir, 'dist'), cacheDir: join(dir, 'cache') });
  return output(join(dir, 'dist'));
}

/** Pages (as `/path/index.html`) whose HTML differs between two outputs, or that only one has. */
function changedPages(a: Map<string, Buffer>, b: Map<string, Buffer>): string[] {
  const pages = new Set([...a.keys(), ...b.keys()].filter((file) => file.endsWith('.html')));
  return [...pages]
    .filter((file) => !a.get(file)?.equals(b.get(file) ?? Buffer.alloc(0)))
    .map((file) => `/${file}`)
    .sort();
}

/** Edits the snapshot as an editor would (the stamps move), then builds incrementally and cleanly. */
async function afterEdit(edit: (snapshot: any) => void) {
  edit(snapshot);
  await server.replaceSnapshot(structuredClone(snapshot));
  const log = await buildPlayground({ baseUrl: server.url, ...incremental });
  const after = await cleanBuild();
  const changed = changedPages(before, after);
  const result = { log: report(log), output: await output(incremental.outDir), clean: after, changed };
  before = after;
  return result;
}

function touch(record: { meta: { updatedAt: string; revision: number } }) {
  record.meta.updatedAt = new Date(Date.now() + 1000).toISOString();
  record.meta.revision += 1;
}

const documentOf = (n: number) => snapshot.documents.find((d: { meta: { id: string } }) => d.meta.id === id(n));
const assetOf = (n: number) => snapshot.assets.find((a: { meta: { id: string } }) => a.meta.id === id(n));

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'cmft-incremental-'));
  const snapshotPath = await copyDemo(work);
  snapshot = JSON.parse(await readFile(snapshotPath, 'utf8'));
  server = await startServer({ paths: [snapshotPath], watch: false });
  incremental = { outDir: join(work, 'site/dist'), cacheDir: join(work, 'site/cache') };
  await buildPlayground({ baseUrl: server.url, ...incremental });
  before = await cleanBuild();
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('incremental builds of the playground', () => {
  test('a rebuild with no change renders no content page', async () => {
    const { rendered, reused } = report(await buildPlayground({ baseUrl: server.url, ...incremental }));
    // The root only redirects to the default locale: it has no getStaticPaths, so no key.
    expect(rendered).toEqual(['/index.html']);
    expect(reused.length).toBeGreaterThan(100);
    expect(await output(incremental.outDir)).toEqual(before);
  }, 60_000);

  test('an author renamed: the posts whose related stories show that author are rendered again', async () => {
    // Post 101 shows post 102 among its related stories, with 102's author (303): two relations away.
    const {
      log,
      output: built,
      clean: expected,
      changed,
    } = await afterEdit((s) => {
      const author = s.documents.find((d: { meta: { id: string } }) => d.meta.id === id(303));
      author.fields.name = 'Lena Vogt-Berg';
      touch(author);
    });
    expect(changed).toContain('/en/posts/the-slow-boat-to-the-fjords/index.html');
    expect(changed).toContain('/de-ch/authors/lena-vogt/index.html');
    for (const page of changed) expect(log.rendered).toContain(page);
    expect(built).toEqual(expected);
    expect(log.reused.length).toBeGreaterThan(0);
  }, 120_000);

  test('a post edited: the page of its author, which lists it, is rendered again', async () => {
    const {
      log,
      output: built,
      clean: expected,
      changed,
    } = await afterEdit(() => {
      const post = documentOf(104); // by author 303
      post.fields.title.en_US = 'Swimming through Zürich, twice';
      touch(post);
    });
    expect(changed).toContain('/en/authors/lena-vogt/index.html');
    for (const page of changed) expect(log.rendered).toContain(page);
    expect(built).toEqual(expected);
  }, 120_000);

  test('an asset edited: the pages that show it are rendered again', async () => {
    const {
      log,
      output: built,
      clean: expected,
      changed,
    } = await afterEdit(() => {
      const asset = assetOf(502); // the cover of post 102
      asset.fields.description.en_US = 'A night train waits at a snowy platform.';
      touch(asset);
    });
    expect(changed).toContain('/en/posts/night-trains-are-back/index.html');
    for (const page of changed) expect(log.rendered).toContain(page);
    expect(built).toEqual(expected);
  }, 120_000);
});
