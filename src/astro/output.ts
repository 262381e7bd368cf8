import { constants, copyFileSync, linkSync, mkdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import pLimit from 'p-limit';

/**
 * The `dist/` of an incremental build (`experimental.incrementalBuild`). Astro renders again only
 * the pages whose `cacheKey` changed, but it empties `dist/` first and then copies every other
 * page back from its cache, one file after the other: most of a one-edit rebuild. Instead:
 *
 * - Astro is told to leave `dist/` alone (`vite.build.emptyOutDir: false`, see incremental.ts);
 * - `scan` reads, while Astro syncs the content, what `dist/` holds and which pages Astro may
 *   reuse (those its manifest keys); `prepare`, when the build starts, empties `dist/` as Astro
 *   would, except for those pages that are as the last build left them, and links the others
 *   (in CI, all of them) to their copies in Astro's cache: Astro finds them in place and
 *   renders only the pages whose key changed. A hard link costs a fraction of a copy (30,000
 *   pages: 2 to 4 s against 4 to 9 s on the benchmark's machine). Astro writes a page it
 *   renders again in place, into both names, which is what it then writes into its copy too; a
 *   page modified in `dist/` (by hand) whose link is Astro's copy takes that copy with it: the
 *   copy is removed, and Astro renders the page;
 * - `finish`, after the build, removes the pages kept or copied that the build no longer
 *   produced, so `dist/` holds exactly what a clean build would, and records which pages the
 *   build left, and when: a page modified since (by hand) is replaced by the next build.
 *
 * This relies on the layout of Astro's incremental cache (`incremental-build.json`, version 1,
 * and the copies in `<cacheDir>/dist/`): when it is not as known, `dist/` is emptied entirely,
 * as Astro would, and the build is a correct one, if slower.
 */

/** The pages the last build left in `dist/`, and when it was done: a page modified later is not as it left it. */
interface Recorded {
  version: 2;
  outDir: string;
  finishedAt: number;
  pages: string[];
}

/** What `dist/` and Astro's cache hold before a build: read only, so it can be read while the content syncs. */
type Scan = Awaited<ReturnType<typeof scan>>;

/** What `prepare` did: the pages it left in `dist/`, kept or copied, and the files of the last build it removed. */
export type Prepared = Awaited<ReturnType<typeof prepare>>;

const recordFile = (cacheDir: string) => join(cacheDir, 'comfortable-output.json');
const manifestFile = (cacheDir: string) => join(cacheDir, 'incremental-build.json');
const copiesDir = (cacheDir: string) => join(cacheDir, 'dist');

/** Files read, copied or removed at once. */
const concurrency = 64;

/**
 * The pages Astro's manifest keys (paths relative to `dist/`), or why they cannot be read; none when there is no
 * manifest yet.
 */
async function manifestPages(cacheDir: string): Promise<Set<string> | { problem: string }> {
  let text: string;
  try {
    text = await readFile(manifestFile(cacheDir), 'utf8');
  } catch {
    return new Set(); // a first build: nothing to reuse
  }
  try {
    const manifest = JSON.parse(text) as {
      version?: unknown;
      routes?: Record<string, { paths?: Record<string, { outputFile?: unknown }> }>;
    };
    if (manifest.version !== 1 || typeof manifest.routes !== 'object' || manifest.routes === null)
      return { problem: `its version is ${JSON.stringify(manifest.version)}, not 1` };
    const pages = new Set<string>();
    for (const route of Object.values(manifest.routes)) {
      for (const path of Object.values(route.paths ?? {})) {
        const file = path.outputFile;
        if (typeof file !== 'string' || file === '' || file.startsWith('/') || file.split('/').includes('..'))
          return { problem: `a page's outputFile is ${JSON.stringify(file)}` };
        pages.add(file);
      }
    }
    return pages;
  } catch (error) {
    return { problem: (error as Error).message };
  }
}

async function readRecord(cacheDir: string, outDir: string): Promise<Recorded | undefined> {
  try {
    const record = JSON.parse(await readFile(recordFile(cacheDir), 'utf8')) as Recorded;
    return record.version === 2 && record.outDir === outDir && Array.isArray(record.pages) ? record : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every file under `dir`, relative to it (symlinks as files, never followed); `.git` at the top
 * left out, as Astro leaves it. Folder by folder, many at once: `readdir` with `recursive` took
 * 5.6 s for the 30,000 page folders of the benchmark's site, this well under a second.
 */
async function filesUnder(dir: string): Promise<string[]> {
  const files: string[] = [];
  const limit = pLimit(concurrency);
  const walk = async (folder: string, prefix: string): Promise<void> => {
    const entries = await limit(() => readdir(folder, { withFileTypes: true }));
    await Promise.all(
      entries.map((entry) => {
        if (prefix === '' && entry.name === '.git') return undefined;
        if (entry.isDirectory()) return walk(join(folder, entry.name), `${prefix}${entry.name}/`);
        files.push(prefix + entry.name);
        return undefined;
      }),
    );
  };
  await walk(dir, '').catch(() => undefined); // no dist/ yet
  return files;
}

/**
 * What `dist/` and Astro's cache hold now; reads only: the pages Astro may reuse (or why its
 * manifest cannot be read), every file in `dist/` (relative to it, `.git` aside), the reusable
 * pages in `dist/` that are as the last build left them (`intact`), and those modified since
 * whose copy in Astro's cache is the same file, which makes that copy no good (`spoilt`).
 */
export async function scan(outDir: string, cacheDir: string) {
  const [reusable, record, present] = await Promise.all([
    manifestPages(cacheDir),
    readRecord(cacheDir, outDir),
    filesUnder(outDir),
  ]);
  const intact = new Set<string>();
  const spoilt = new Set<string>();
  if (reusable instanceof Set) {
    const left = new Set(record?.pages ?? []);
    const limit = pLimit(concurrency);
    await Promise.all(
      present
        .filter((file) => reusable.has(file))
        .map((file) =>
          limit(async () => {
            const now = await stat(join(outDir, file)).catch(() => undefined);
            if (record && left.has(file) && now?.isFile() && now.mtimeMs <= record.finishedAt) intact.add(file);
            else if (now && (await sameFile(now, join(copiesDir(cacheDir), file)))) spoilt.add(file);
          }),
        ),
    );
  }
  return { outDir, cacheDir, reusable, present, intact, spoilt };
}

/** Whether a file (its stats) and a path are one file (hard links of each other). */
const sameFile = (file: { dev: number; ino: number }, path: string) =>
  stat(path).then(
    (other) => other.dev === file.dev && other.ino === file.ino,
    () => false,
  );

/**
 * Links pages of Astro's cache into `dist/` (copies them where a link cannot be made: another
 * file system); returns those linked (Astro renders those it has no copy of). One after the
 * other, without waiting between them: on the benchmark's machine this took half the time of
 * the same calls made 64 at a time while Astro synced the content.
 */
function restore(outDir: string, cacheDir: string, files: string[]): string[] {
  const made = new Set<string>();
  return files.filter((file) => {
    const [source, target] = [join(copiesDir(cacheDir), file), join(outDir, file)];
    const folder = dirname(target);
    try {
      if (!made.has(folder)) mkdirSync(folder, { recursive: true });
      made.add(folder);
      try {
        linkSync(source, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false; // no copy in the cache
        copyFileSync(source, target, constants.COPYFILE_FICLONE);
      }
      return true;
    } catch {
      return false;
    }
  });
}

/** Removes files of `dir` and then the folders they leave empty (up to `dir`, which stays). */
async function removeFiles(dir: string, files: readonly string[]): Promise<void> {
  const limit = pLimit(concurrency);
  const folders = new Set<string>();
  await Promise.all(
    files.map((file) =>
      limit(async () => {
        await rm(join(dir, file), { force: true });
        for (let folder = dirname(file); folder !== '.'; folder = dirname(folder)) folders.add(folder);
      }),
    ),
  );
  // Deepest first; a folder that still holds something stays.
  for (const folder of [...folders].sort((a, b) => b.split('/').length - a.split('/').length))
    await rmdir(join(dir, folder)).catch(() => {});
}

/** Empties `dir` as Astro does (everything but `.git`). */
async function emptyAsAstro(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(
    names.filter((name) => name !== '.git').map((name) => rm(join(dir, name), { recursive: true, force: true })),
  );
}

/** When the build starts: `dist/` as Astro would start it, less the copying of every page it reuses. */
export async function prepare({ outDir, cacheDir, reusable, present, intact, spoilt }: Scan) {
  if (!(reusable instanceof Set)) {
    await emptyAsAstro(outDir);
    return {
      outDir,
      kept: 0,
      restored: new Set<string>(),
      removed: present,
      pages: new Set<string>(),
      startedAt: Date.now(),
      // Why the pages could not be kept.
      fallback:
        `Astro's incremental cache is not laid out as this package knows it ` +
        `(${manifestFile(cacheDir)}: ${reusable.problem})`,
    };
  }
  const outdated = present.filter((file) => !intact.has(file));
  await removeFiles(outDir, outdated);
  // Copies modified with their page in dist/ go too: Astro renders those pages.
  await Promise.all([...spoilt].map((file) => rm(join(copiesDir(cacheDir), file), { force: true })));
  const restored = restore(
    outDir,
    cacheDir,
    [...reusable].filter((file) => !intact.has(file) && !spoilt.has(file)),
  );
  const pages = new Set([...intact, ...restored]);
  return {
    outDir,
    // The pages left in place, and those copied back from Astro's cache.
    kept: intact.size,
    restored: new Set(restored),
    // Files of the last build removed (the build writes most of them again); relative to `dist/`.
    removed: outdated.filter((file) => !pages.has(file)),
    // The pages in `dist/` when the build starts, relative to it.
    pages,
    // When the build started: a page of `pages` written since was rendered by it.
    startedAt: Date.now(),
  };
}

/**
 * After the build: removes the pages `prepare` left that the build did not produce (`produced`,
 * relative to `dist/`), records the pages produced for the next build, and counts what the
 * build did (pages rendered, left as they were, no longer built; files of the last build gone): a
 * page `prepare` left that was written since the build started was rendered.
 */
export async function finish(prepared: Prepared, cacheDir: string, produced: Iterable<string>) {
  const built = new Set(produced);
  const stale = [...prepared.pages].filter((file) => !built.has(file));
  await removeFiles(prepared.outDir, stale);
  const limit = pLimit(concurrency);
  const left = [...built].filter((file) => prepared.pages.has(file));
  const untouched = (
    await Promise.all(
      left.map((file) =>
        limit(async () => {
          const now = await stat(join(prepared.outDir, file)).catch(() => undefined);
          return now !== undefined && now.mtimeMs < prepared.startedAt ? file : undefined;
        }),
      ),
    )
  ).filter((file): file is string => file !== undefined);
  const restored = untouched.filter((file) => prepared.restored.has(file)).length;
  const rewritten = await Promise.all(
    prepared.removed.map((file) =>
      limit(() =>
        stat(join(prepared.outDir, file)).then(
          () => true,
          () => false,
        ),
      ),
    ),
  );
  const record: Recorded = { version: 2, outDir: prepared.outDir, finishedAt: Date.now(), pages: [...built] };
  await mkdir(cacheDir, { recursive: true });
  await writeFile(recordFile(cacheDir), JSON.stringify(record));
  return {
    /** Pages the build wrote. */
    rendered: built.size - untouched.length,
    /** Pages left as `prepare` left them, kept or restored. */
    kept: untouched.length - restored,
    restored,
    /** Pages no longer built, removed. */
    pages: stale.length,
    /** Files of the last build gone: those pages, and the files `prepare` removed that the build did not write again. */
    files: stale.length + rewritten.filter((again) => !again).length,
  };
}
