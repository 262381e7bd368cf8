import { statSync } from 'node:fs';
import { join } from 'node:path';
import {
  beginWrite,
  cacheErrorOf,
  cacheFileName,
  inodeOf,
  openForWriting,
  removeDatabase,
  walLimitBytes,
} from './database.ts';
import { type CacheHead, headKeys, readHead } from './head.ts';
import { type CacheReader, type DanglingReference, openCache, type StoredSource } from './reader.ts';
import { Records } from './records.ts';
import { memberColumns, recreate, schemaProblem } from './schema.ts';
import type { Database } from './sqlite.ts';

export type Etags = Record<string, { etag: string; body: string }>;

/** A source's members in order, as parallel lists: ids and the stamps each was stored with. */
export interface StoredMembers {
  ids: string[];
  updatedAt: string[];
  revisions: number[];
}

/**
 * One sync's write transaction on the cache: everything it reads sees what it wrote before,
 * and nothing it writes is seen by anyone else until `commit`. `rollback` (or a process that
 * dies) leaves the cache as it was.
 */
export class CacheTransaction {
  readonly records: Records;
  readonly #db: Database;
  readonly #dir: string;
  readonly #members = new Map<string, StoredMembers>();
  /** The cache as it was when the transaction began; undefined for a new or rebuilt one. */
  readonly head: CacheHead | undefined;

  private constructor(db: Database, dir: string, head: CacheHead | undefined) {
    this.#db = db;
    this.#dir = dir;
    this.head = head;
    this.records = new Records(db, dir);
  }

  /**
   * Opens the cache in `dir` and begins a write transaction, waiting while another sync holds
   * one. A database that is no cache of this format is emptied and set up again (in the same
   * transaction), with a warning that says why.
   */
  static async begin(
    dir: string,
    events: { warn(message: string): void; waiting(): void },
    maxWaitMs = 120_000,
  ): Promise<CacheTransaction> {
    const db = openForWriting(dir);
    const opened = inodeOf(dir);
    try {
      await beginWrite(db, dir, { waiting: events.waiting, maxWaitMs });
      if (inodeOf(dir) !== opened) {
        // The sync it waited for removed the file (a first sync that failed, a damaged cache):
        // what this connection holds is no longer the cache. Open the file that is.
        db.exec('ROLLBACK');
        db.close();
        return CacheTransaction.begin(dir, events, maxWaitMs);
      }
      let problem = schemaProblem(db);
      let head: CacheHead | undefined;
      if (problem === undefined) {
        try {
          head = readHead(db);
        } catch (error) {
          problem = (error as Error).message;
        }
      }
      if (problem !== undefined) {
        if (problem !== 'new') events.warn(`The cache in ${dir} cannot be used: ${problem}; rebuilding it`);
        recreate(db);
      }
      return new CacheTransaction(db, dir, head);
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      db.close();
      throw cacheErrorOf(error, dir);
    }
  }

  /** Runs `work` on the database, turning SQLite's errors into CacheErrors that name the folder. */
  #run<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      throw cacheErrorOf(error, this.#dir);
    }
  }

  sources(): Map<string, StoredSource> {
    return this.#run(() => {
      const rows = this.#db
        .prepare('SELECT key, kind, name, fingerprint, synced_at AS syncedAt FROM source')
        .all() as unknown as StoredSource[];
      return new Map(rows.map((row) => [row.key, { ...row }]));
    });
  }

  /** A source's members in order, with the stamps they were stored with (read once). */
  members(key: string): StoredMembers {
    let members = this.#members.get(key);
    if (!members) {
      const [ids, updatedAt, revisions] = this.#columns(key, ['ids', 'updated_at', 'revisions']);
      this.#members.set(
        key,
        (members = { ids: ids as string[], updatedAt: updatedAt as string[], revisions: revisions as number[] }),
      );
    }
    return members;
  }

  /** Columns of a source's members, each a list in member order (none for a source not stored). */
  #columns(key: string, columns: string[]): unknown[][] {
    return this.#run(() => {
      const row = this.#db.prepare(`SELECT count, ${columns.join(', ')} FROM member WHERE source = ?`).get(key) as
        | Record<string, unknown>
        | undefined;
      return row ? memberColumns(row, columns, this.#dir, key) : columns.map(() => []);
    });
  }

  /** The records a source's includes reach that are not its members. */
  included(key: string): string[] {
    return this.#run(() =>
      (this.#db.prepare('SELECT id FROM included WHERE source = ?').all(key) as { id: string }[]).map((row) => row.id),
    );
  }

  dangling(key: string): DanglingReference[] {
    return this.#run(
      () =>
        this.#db
          .prepare('SELECT from_id AS "from", field, to_id AS id FROM dangling WHERE source = ? ORDER BY rowid')
          .all(key) as unknown as DanglingReference[],
    );
  }

  etags(): Etags {
    return this.#run(() =>
      Object.fromEntries(
        (
          this.#db.prepare('SELECT key, etag, body FROM etag').all() as { key: string; etag: string; body: string }[]
        ).map((row) => [row.key, { etag: row.etag, body: row.body }]),
      ),
    );
  }

  /**
   * Writes a source's state: its members with their stamps (unless undefined: as stored), and its included records
   * unless `included` is undefined (kept).
   */
  writeSource(
    source: StoredSource,
    members: StoredMembers | undefined,
    included: readonly string[] | undefined,
    dangling: readonly DanglingReference[],
  ): void {
    this.#members.delete(source.key);
    this.#run(() => {
      this.#db
        .prepare('INSERT OR REPLACE INTO source (key, kind, name, fingerprint, synced_at) VALUES (?, ?, ?, ?, ?)')
        .run(source.key, source.kind, source.name, source.fingerprint, source.syncedAt);
      if (members) {
        const row = [members.ids, members.updatedAt, members.revisions].map((column) => JSON.stringify(column));
        this.#db
          .prepare('INSERT OR REPLACE INTO member (source, count, ids, updated_at, revisions) VALUES (?, ?, ?, ?, ?)')
          .run(source.key, members.ids.length, ...row);
      }
      if (included) {
        this.#db.prepare('DELETE FROM included WHERE source = ?').run(source.key);
        const insert = this.#db.prepare('INSERT INTO included (source, id) VALUES (?, ?)');
        for (const id of included) insert.run(source.key, id);
      }
      this.#db.prepare('DELETE FROM dangling WHERE source = ?').run(source.key);
      const insert = this.#db.prepare('INSERT INTO dangling (source, from_id, field, to_id) VALUES (?, ?, ?, ?)');
      for (const ref of dangling) insert.run(source.key, ref.from, ref.field, ref.id);
    });
  }

  /** Empties the cache: records, sources and ETags (it was made for another repository, base URL or version). */
  clear(): void {
    this.#members.clear();
    this.records.clear();
    this.#run(() =>
      this.#db.exec(
        'DELETE FROM source; DELETE FROM member; DELETE FROM included; DELETE FROM dangling; DELETE FROM etag;',
      ),
    );
  }

  /** Removes a source no longer configured. */
  removeSource(key: string): void {
    this.#members.delete(key);
    this.#run(() => {
      for (const table of ['source', 'member', 'included', 'dangling'])
        this.#db.prepare(`DELETE FROM ${table} WHERE ${table === 'source' ? 'key' : 'source'} = ?`).run(key);
    });
  }

  /**
   * Writes the head and the ETags, and commits: the cache is now what this transaction made it.
   * Returns the process's reader of the committed cache, opened before this connection closes:
   * the last connection to close would checkpoint, sync and remove the log, for nothing.
   */
  commit(given: Omit<CacheHead, 'records'>, etags: Etags): CacheReader {
    this.#run(() => {
      this.records.settle();
      const { added, removed } = this.records.changes();
      // (Emptied records count as removed: the sum holds whatever this transaction did.)
      const head: CacheHead = { ...given, records: (this.head?.records ?? 0) + added.length - removed.length };
      const meta = this.#db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
      for (const key of headKeys) meta.run(key, JSON.stringify(head[key]));
      this.#db.exec('DELETE FROM etag');
      const insert = this.#db.prepare('INSERT INTO etag (key, etag, body) VALUES (?, ?, ?)');
      for (const [key, { etag, body }] of Object.entries(etags)) insert.run(key, etag, body);
      this.#db.exec('COMMIT');
      // A large transaction leaves a log as large: checkpoint it now and cut it back (unless readers hold it).
      if (this.#largeLog())
        this.#db.exec('PRAGMA busy_timeout = 0; PRAGMA wal_checkpoint(TRUNCATE); PRAGMA busy_timeout = 5000');
    });
    const reader = openCache(this.#dir)!;
    this.#db.close();
    return reader;
  }

  /** Whether the write-ahead log holds more than the limit it is cut back to. */
  #largeLog(): boolean {
    try {
      return statSync(join(this.#dir, `${cacheFileName}-wal`)).size > walLimitBytes;
    } catch {
      return false;
    }
  }

  /**
   * Ends the transaction without a trace; the cache is as it was. When there was no cache
   * before it, the file the transaction began in is removed too: a first sync that fails
   * leaves nothing behind (a sync waiting for this one finds the file gone and opens anew).
   */
  rollback(): void {
    if (!this.#db.isOpen) return;
    try {
      if (this.head === undefined) removeDatabase(this.#dir); // still holding the lock
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
    } finally {
      this.#db.close();
    }
  }
}
