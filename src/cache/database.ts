import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type Database, DatabaseSync } from './sqlite.ts';

/**
 * Opening the cache's database file, and the errors of doing so. SQLite does the locking:
 * a sync writes in one `BEGIN IMMEDIATE` transaction, so a second sync waits for the first,
 * readers never wait, and a process that dies holding the lock loses it with its file handles.
 */

export const cacheFileName = 'cache.sqlite';

/**
 * The page cache of a sync's connection, in KiB: 32 MB, or what `COMFORTABLE_CACHE_MEMORY_MB`
 * says (a machine short of memory; a transaction larger than the cache goes to disk earlier).
 */
const writerCacheKiB = Math.round((Number(process.env.COMFORTABLE_CACHE_MEMORY_MB) || 32) * 1024);

/** The size the write-ahead log is cut back to after a checkpoint. */
export const walLimitBytes = 8 * 1024 * 1024;

/** The cache cannot be used as it is: damaged, not writable, or held too long by another sync. */
export class CacheError extends Error {
  readonly code: 'cache_damaged' | 'cache_unwritable' | 'cache_busy' | 'cache_full';
  constructor(code: CacheError['code'], message: string, cause?: unknown) {
    super(message);
    this.name = 'CacheError';
    this.code = code;
    if (cause) Object.defineProperty(this, 'cause', { value: cause, enumerable: false });
  }
}

/** SQLite's extended result code of an error thrown by `node:sqlite`, if it is one. */
function extendedCode(error: unknown): number | undefined {
  const code = (error as { errcode?: unknown }).errcode;
  return typeof code === 'number' ? code : undefined;
}

/** SQLite's primary result code of an error thrown by `node:sqlite`, if it is one. */
function sqliteCode(error: unknown): number | undefined {
  const code = extendedCode(error);
  return code === undefined ? undefined : code & 0xff;
}

const sqliteError = 1;
const busy = 5;
const readOnly = 8;
const ioError = 10;
const corrupt = 11;
const full = 13;
const cantOpen = 14;
const notADatabase = 26;
/**
 * What a read-only connection answers when a writer that was killed left something only a
 * connection that may write can undo: the index of the write-ahead log to rebuild
 * (SQLITE_READONLY_RECOVERY), a rollback journal to play back (SQLITE_READONLY_ROLLBACK: a new
 * file is switched into WAL mode through one), or shared memory it cannot set up
 * (SQLITE_READONLY_CANTINIT).
 */
const leftByKilledWriter: ReadonlySet<number | undefined> = new Set([264, 776, 1288]);

/** Turns what SQLite throws into a CacheError a user can act on, naming the folder; other errors pass through. */
export function cacheErrorOf(error: unknown, dir: string): unknown {
  if (error instanceof CacheError) return error;
  const why = (error as Error).message;
  // What SQLite's JSON functions say of a stored value that does not parse: a record is damaged.
  if (sqliteCode(error) === sqliteError && why === 'malformed JSON')
    return new CacheError('cache_damaged', `The cache in ${dir} is damaged (a stored record does not parse)`, error);
  switch (sqliteCode(error)) {
    case corrupt:
    case notADatabase:
      return new CacheError('cache_damaged', `The cache in ${dir} is damaged (${why})`, error);
    case ioError:
      return new CacheError('cache_unwritable', `The cache in ${dir} could not be read or written (${why})`, error);
    case readOnly:
    case cantOpen:
      return new CacheError(
        'cache_unwritable',
        `The cache folder ${dir} cannot be written (${why}); ` +
          'check its permissions, or set cacheDir to a folder this process may write',
        error,
      );
    case full:
      return new CacheError(
        'cache_full',
        `The disk of the cache folder ${dir} is full (${why}); the cache was left as it was`,
        error,
      );
    default:
      return error;
  }
}

const isBusy = (error: unknown): boolean => sqliteCode(error) === busy;

/** The identity of the database file, or undefined when there is none. */
export function inodeOf(dir: string): number | undefined {
  try {
    return statSync(join(dir, cacheFileName)).ino;
  } catch {
    return undefined;
  }
}

/** Removes the database and its WAL files. */
export function removeDatabase(dir: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(join(dir, cacheFileName + suffix), { force: true });
}

/**
 * Opens (creating the folder and file) the cache's database for a sync, in WAL mode. A file
 * SQLite refuses throws a `cache_damaged` CacheError: the sync rebuilds the cache from the CMS.
 */
export function openForWriting(dir: string): Database {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw new CacheError(
      'cache_unwritable',
      `The cache folder ${dir} cannot be created (${(error as Error).message}); ` +
        'set cacheDir to a folder this process may write',
      error,
    );
  }
  let db: Database | undefined;
  try {
    db = new DatabaseSync(join(dir, cacheFileName), { timeout: 5_000 });
    // A sync inserts with keys in no order into tables of hundreds of megabytes: with SQLite's
    // default 2 MB of page cache, most inserts went to the operating system for their pages
    // (inserting 100,000 references took 2.4 s; 1.4 s with 16 MB, 1.3 s with 64 MB).
    // The write-ahead log is cut back once checkpointed: left at the size of a cold sync, the
    // next process to open the cache would read all of it to rebuild its index.
    db.exec(
      `PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -${writerCacheKiB}; ` +
        `PRAGMA journal_size_limit = ${walLimitBytes};`,
    );
    return db;
  } catch (error) {
    db?.close();
    throw cacheErrorOf(error, dir);
  }
}

/** Opens the database, failing here rather than at the first read (opening is lazy). */
function openChecked(dir: string, options: { readOnly: boolean }): Database {
  const db = new DatabaseSync(join(dir, cacheFileName), { ...options, timeout: 5_000 });
  try {
    db.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get();
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * Opens the cache's database to read it, or undefined when there is none. The connection is
 * read-only; when a sync was killed while it wrote and no connection has opened the cache since,
 * a short connection that may write first recovers what the sync left (as any writer's first
 * read would: the last commit is kept, the rest undone), and the reader opens again.
 */
export function openForReading(dir: string): Database | undefined {
  try {
    return openChecked(dir, { readOnly: true });
  } catch (error) {
    if (sqliteCode(error) === cantOpen) return undefined;
    if (!leftByKilledWriter.has(extendedCode(error))) throw cacheErrorOf(error, dir);
  }
  try {
    openChecked(dir, { readOnly: false }).close();
    return openChecked(dir, { readOnly: true });
  } catch (error) {
    if (sqliteCode(error) === readOnly || sqliteCode(error) === cantOpen) {
      throw new CacheError(
        'cache_unwritable',
        `The cache in ${dir} was left by a sync that was killed while it wrote, and reading it needs the ` +
          `folder to be written once to recover it (${(error as Error).message}); run a sync where ${dir} ` +
          'can be written, or set cacheDir to a folder this process may write',
        error,
      );
    }
    throw cacheErrorOf(error, dir);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Begins the sync's write transaction. While another sync holds it, waits without blocking
 * (tries again every 50 ms), says so after a second, and gives up after `maxWaitMs`.
 */
export async function beginWrite(
  db: Database,
  dir: string,
  options: { waiting(): void; maxWaitMs: number },
): Promise<void> {
  const started = Date.now();
  let said = false;
  db.exec('PRAGMA busy_timeout = 0');
  try {
    for (;;) {
      try {
        db.exec('BEGIN IMMEDIATE');
        return;
      } catch (error) {
        if (!isBusy(error)) throw cacheErrorOf(error, dir);
      }
      const waited = Date.now() - started;
      if (waited >= options.maxWaitMs) {
        throw new CacheError(
          'cache_busy',
          `Another sync has held the cache in ${dir} for more than ${Math.round(options.maxWaitMs / 1000)} s; ` +
            'try again when it is done',
        );
      }
      if (!said && waited >= 1_000) {
        said = true;
        options.waiting();
      }
      await sleep(50);
    }
  } finally {
    db.exec('PRAGMA busy_timeout = 5000');
  }
}
