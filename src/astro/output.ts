import { copyFile, mkdir, readdir, readFile, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import pLimit from 'p-limit';

/**
 * The `dist/` of an incremental build (`experimental.incrementalBuild`). Astro renders again only
 * the pages whose `cacheKey` changed, but it empties `dist/` first and then copies every other
 * page back from its cache, one file after the other: most of a one-edit rebuild. Instead:
 *
 * - Astro is told to leave `dist/` alone (`vite.build.emptyOutDir: false`, see the integration);
 * - before the build (`prepare`), `dist/` is emptied as Astro would empty it, except for the
 *   pages Astro may reuse (those its manifest keys) that are as the last build left them;
 *   the others of those pages are copied from Astro's cache all at once; Astro then finds them
 *   in place and renders only the pages whose key changed;
 * - after the build (`finish`), the pages kept or copied that the build no longer produced are
 *   removed, so `dist/` holds exactly what a clean build would, and the state of each page is
 *   recorded for the next build (a page edited by hand since does not match and is replaced).
 *
 * This relies on the layout of Astro's incremental cache (`incremental-build.json`, version 1,
 * and the copies in `<cacheDir>/dist/`): when it is not as known, `dist/` is emptied entirely,
 * as Astro would, and the build is a correct one, if slower.
 */

/** What the last build left of each page, by its path in `dist/`: size and modification time. */
interface Recorded {
  version: 1;
  outDir: string;
  pages: Record<string, [size: number, mtimeMs: number]>;
}

/** What `prepare` did: the pages it left in `dist/`, kept or copied, and the files of the last build it removed. */
export interface Prepared {
  outDir: string;
  kept: number;
  restored: number;
  /** Files of the last build removed (the build writes most of them again); relative to `dist/`. */
  removed: string[];
  /** The pages in `dist/` when the build starts, relative to it. */
  pages: Set<string>;
  /** Why the pages could not be kept, when they could not. */
  fallback?: string;
}

const recordFile = (cacheDir: string) => join(cacheDir, 'comfortable-output.json');
const manifestFile = (cacheDir: string) => join(cacheDir, 'incremental-build.json');
const copiesDir = (cacheDir: string) => join(cacheDir, 'dist');

/** Files copied at once from Astro's cache. */
const copyConcurrency = 64;

/** The pages Astro's manifest keys (paths relative to `dist/`), or why they cannot be read; none when there is no manifest yet. */
async function manifestPages(cacheDir: string): Promise<{ pages: string[] } | { problem: string }> {
  let text: string;
  try {
    text = await readFile(manifestFile(cacheDir), 'utf8');
  } catch {
    return { pages: [] }; // a first build: nothing to reuse
  }
  try {
    const manifest = JSON.parse(text) as { version?: unknown; routes?: Record<string, { paths?: Record<string, { outputFile?: unknown }> }> };
    if (manifest.version !== 1 || typeof manifest.routes !== 'object' || manifest.routes === null) return { problem: `its version is ${JSON.stringify(manifest.version)}, not 1` };
    const pages: string[] = [];
    for (const route of Object.values(manifest.routes)) {
      for (const path of Object.values(route.paths ?? {})) {
        const file = path.outputFile;
        if (typeof file !== 'string' || file === '' || file.startsWith('/') || file.split('/').includes('..')) return { problem: `a page's outputFile is ${JSON.stringify(file)}` };
        pages.push(file);
      }
    }
    return { pages };
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

async function readRecord(cacheDir: string, outDir: string): Promise<Recorded['pages']> {
  try {
    const record = JSON.parse(await readFile(recordFile(cacheDir), 'utf8')) as Recorded;
    return record.version === 1 && record.outDir === outDir ? record.pages : {};
  } catch {
    return {};
  }
}

/** Every file under `dir`, relative to it (symlinks as files, never followed); `.git` at the top left out, as Astro leaves it. */
async function filesUnder(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { recursive: true, withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((entry) => !entry.isDirectory())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .filter((file) => file !== '.git' && !file.startsWith('.git/'));
}

/** Removes files of `dir` and then the folders they leave empty (up to `dir`, which stays). */
async function removeFiles(dir: string, files: Iterable<string>): Promise<number> {
  const limit = pLimit(copyConcurrency);
  const folders = new Set<string>();
  const list = [...files];
  await Promise.all(
    list.map((file) =>
      limit(async () => {
        await rm(join(dir, file), { force: true });
        for (let folder = dirname(file); folder !== '.'; folder = dirname(folder)) folders.add(folder);
      }),
    ),
  );
  // Deepest first; a folder that still holds something stays.
  for (const folder of [...folders].sort((a, b) => b.split('/').length - a.split('/').length)) await rmdir(join(dir, folder)).catch(() => {});
  return list.length;
}

/** Empties `dir` as Astro does (everything but `.git`); returns the files it held. */
async function emptyAsAstro(dir: string): Promise<string[]> {
  const files = await filesUnder(dir);
  const names = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.filter((name) => name !== '.git').map((name) => rm(join(dir, name), { recursive: true, force: true })));
  return files;
}

/** Before the build: `dist/` as Astro would start it, less the copying of every page it reuses. */
export async function prepare(outDir: string, cacheDir: string): Promise<Prepared> {
  const manifest = await manifestPages(cacheDir);
  if ('problem' in manifest) {
    const removed = await emptyAsAstro(outDir);
    return { outDir, kept: 0, restored: 0, removed, pages: new Set(), fallback: `Astro's incremental cache is not laid out as this package knows it (${manifestFile(cacheDir)}: ${manifest.problem})` };
  }
  const [recorded, present] = await Promise.all([readRecord(cacheDir, outDir), filesUnder(outDir)]);
  const reusable = new Set(manifest.pages);
  const inPlace = new Set<string>();
  await Promise.all(
    present.map(async (file) => {
      const was = recorded[file];
      if (!was || !reusable.has(file)) return;
      const now = await stat(join(outDir, file)).catch(() => undefined);
      if (now?.isFile() && now.size === was[0] && now.mtimeMs === was[1]) inPlace.add(file);
    }),
  );
  const outdated = present.filter((file) => !inPlace.has(file));
  await removeFiles(outDir, outdated);
  const limit = pLimit(copyConcurrency);
  const restored = (
    await Promise.all(
      [...reusable].filter((file) => !inPlace.has(file)).map((file) =>
        limit(async () => {
          const target = join(outDir, file);
          await mkdir(dirname(target), { recursive: true });
          return copyFile(join(copiesDir(cacheDir), file), target).then(() => file, () => undefined); // no copy: Astro renders it
        }),
      ),
    )
  ).filter((file): file is string => file !== undefined);
  const pages = new Set([...inPlace, ...restored]);
  return { outDir, kept: inPlace.size, restored: restored.length, removed: outdated.filter((file) => !pages.has(file)), pages };
}

/**
 * After the build: removes the pages `prepare` left that the build did not produce (`produced`,
 * relative to `dist/`), and records the state of every page produced for the next build.
 * Returns how many files of the last build are gone: those pages, and the files `prepare`
 * removed that the build did not write again.
 */
export async function finish(prepared: Prepared, cacheDir: string, produced: Iterable<string>): Promise<{ pages: number; files: number }> {
  const built = new Set(produced);
  const pages = await removeFiles(prepared.outDir, [...prepared.pages].filter((file) => !built.has(file)));
  const rewritten = await Promise.all(prepared.removed.map((file) => stat(join(prepared.outDir, file)).then(() => true, () => false)));
  const gone = rewritten.filter((again) => !again).length;
  const states: Recorded['pages'] = {};
  await Promise.all(
    [...built].map(async (file) => {
      const now = await stat(join(prepared.outDir, file)).catch(() => undefined);
      if (now?.isFile()) states[file] = [now.size, now.mtimeMs];
    }),
  );
  const record: Recorded = { version: 1, outDir: prepared.outDir, pages: states };
  await mkdir(cacheDir, { recursive: true });
  await writeFile(recordFile(cacheDir), JSON.stringify(record));
  return { pages, files: pages + gone };
}
