import { hash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { cacheFileName, removeDatabase } from './database.ts';

/**
 * One cache per origin of the content inside a cache folder: the CMS at a base URL and
 * repository, or a copy (a snapshot file) served in-process. A site that switches between them
 * (a build from the copy, then one from the CMS) finds each one's last good content where it
 * left it, instead of one evicting the other: a sync rebuilds a cache made for another base URL
 * or repository.
 *
 * A copy is told by its file, not by the base URL of the server that serves it, whose port may
 * change. Each origin's folder holds a marker, `origin.json`, saying whose it is (never a key);
 * its modification time is the origin's last use. A folder not used for `pruneAfterDays` is
 * removed by the next use of another origin of the same cache folder, and so is a database of
 * the earlier layout (one cache directly in the folder).
 */

/** Where content comes from: the CMS, or a copy by the path of its file (relative to the project). */
export type ContentOrigin = { baseUrl: string; repository: string } | { snapshot: string };

/** Days after which the cache of an origin not used since is removed. */
export const pruneAfterDays = 30;

const markerName = 'origin.json';

/** A folder name that says whose cache it is: `cms-<host>-<repository>-<hash>` or `copy-<file>-<hash>`. */
function folderName(origin: ContentOrigin): string {
  const words = (text: string) =>
    text
      .toLowerCase()
      .replace(/[^a-z0-9.]+/g, '-')
      .replace(/^[-.]+|-+$/g, '')
      .slice(0, 40) || 'x';
  const id = hash('sha1', JSON.stringify(origin), 'hex').slice(0, 10);
  if ('snapshot' in origin) return `copy-${words(basename(origin.snapshot).replace(/\.json$/i, ''))}-${id}`;
  const host = URL.parse(origin.baseUrl)?.host ?? origin.baseUrl;
  return `cms-${words(host)}-${words(origin.repository)}-${id}`;
}

/** The origin as the cache tells it apart: a base URL without its trailing slashes. */
const normalised = (origin: ContentOrigin): ContentOrigin =>
  'snapshot' in origin
    ? { snapshot: origin.snapshot.split('\\').join('/') }
    : { baseUrl: origin.baseUrl.replace(/\/+$/, ''), repository: origin.repository };

/** Whether a folder name is one `originCacheDir` makes. */
const isOriginFolder = (name: string) => /^(cms|copy)-.+-[0-9a-f]{10}$/.test(name);

/**
 * The folder of the cache of `origin` inside `root`, marked as used now; the caches of other
 * origins not used for `pruneAfterDays` are removed. Nothing here fails: a folder that cannot be
 * written is the sync's to report (it names the folder).
 *
 * @example originCacheDir('node_modules/.astro/comfortable', { snapshot: 'content/acme.json' }) // …/copy-acme-3f2a…
 */
export function originCacheDir(root: string, origin: ContentOrigin, now = Date.now()): string {
  const given = normalised(origin);
  const dir = join(root, folderName(given));
  try {
    mkdirSync(dir, { recursive: true });
    const marker = join(dir, markerName);
    // Written once; touched at every use, which is what its age counts from.
    if (!existsSync(marker)) writeFileSync(marker, `${JSON.stringify(given, null, 2)}\n`);
    utimesSync(marker, now / 1000, now / 1000);
    pruneOthers(root, dir, now);
  } catch {
    // The sync opens the folder itself and says why it cannot.
  }
  return dir;
}

/** Marks the cache of `dir` as used now (a dev server that runs for days syncs it again and again). */
export function touchOrigin(dir: string, now = Date.now()): void {
  try {
    utimesSync(join(dir, markerName), now / 1000, now / 1000);
  } catch {
    // Not an origin's folder, or gone: nothing to keep alive.
  }
}

/** Removes the origins' caches (and a cache of the earlier layout) under `root` unused for `pruneAfterDays`. */
function pruneOthers(root: string, keep: string, now: number): void {
  const limit = now - pruneAfterDays * 24 * 60 * 60 * 1000;
  const lastUse = (path: string) => {
    try {
      return statSync(path).mtimeMs;
    } catch {
      return undefined;
    }
  };
  for (const name of readdirSync(root)) {
    const path = join(root, name);
    if (path === keep || !isOriginFolder(name)) continue;
    // A folder without its marker was being made, or is not ours: left alone.
    const used = lastUse(join(path, markerName));
    if (used !== undefined && used < limit) rmSync(path, { recursive: true, force: true });
  }
  // In WAL mode a commit writes the log; the database file changes only when the log is merged.
  const earlier = [cacheFileName, `${cacheFileName}-wal`].map((name) => lastUse(join(root, name)) ?? -Infinity);
  if (existsSync(join(root, cacheFileName)) && Math.max(...earlier) < limit) removeDatabase(root);
}

/** The cache folder holding the origin's folder `dir` (the `cacheDir` option), or `dir` when it is none. */
export function cacheRootOf(dir: string): string {
  return isOriginFolder(basename(dir)) ? dirname(dir) : dir;
}
