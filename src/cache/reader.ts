import { resolve } from 'node:path';
import type { Reference, StoredRecord } from '../model/records.ts';
import { CacheError, cacheErrorOf, inodeOf, openForReading, removeDatabase } from './database.ts';
import { parseStored, unpackReferences } from './records.ts';
import { memberColumns, schemaProblem } from './schema.ts';
import type { Database, Statement } from './sqlite.ts';
import { type CacheHead, readHead } from './head.ts';

/** A source as the cache keeps it. */
export interface StoredSource {
  key: string;
  kind: 'collection' | 'alias' | 'query';
  name: string;
  /** A hash of the source's options: another one means it is fetched in full again. */
  fingerprint: string;
  /** ISO time the source was last fetched. */
  syncedAt: string;
}

/** A reference whose target the server does not have. */
export interface DanglingReference {
  from: string;
  field: string;
  id: string;
}

/** A record as the reference graph holds it: its digest, and the ids of its references in order. */
export interface Link {
  digest: string;
  targets: string[];
}

/**
 * A member of a source, in the source's order: its record's content type and digest as the
 * record is now. Not the stamps (`updatedAt`, `revision`) it was listed with: only a sync's
 * transaction reads those (`CacheTransaction.members`).
 */
export interface Member {
  id: string;
  contentType: string;
  /** The digest of the member's record; changes when the record changes. */
  digest: string;
}

/**
 * The committed content of a cache, as every consumer reads it (the Astro loader and schemas,
 * the Vite plugin, the `types` command): the sources and their members, records by id, their
 * content types and references. Each read sees the last
 * committed sync. What does not read back (SQLite refuses it, a record does not parse) throws a
 * `cache_damaged` CacheError naming the folder: the cache is rebuilt, never served as it is.
 */
export class CacheReader {
  readonly dir: string;
  readonly #db: Database;
  readonly #statements = new Map<string, Statement>();
  #head: { version: number; head: CacheHead } | undefined;

  private constructor(dir: string, db: Database) {
    this.dir = dir;
    this.#db = db;
  }

  /** The cache in `dir`, or undefined when there is none (or none of this format, or none committed yet). */
  static open(dir: string): CacheReader | undefined {
    const db = openForReading(dir);
    if (!db) return undefined;
    try {
      if (schemaProblem(db) !== undefined) throw new Error('not a cache of this format');
      const reader = new CacheReader(dir, db);
      reader.head; // eslint-disable-line @typescript-eslint/no-unused-expressions -- a cache without a head is none
      return reader;
    } catch {
      db.close();
      return undefined;
    }
  }

  /** Whether the database is still a cache of this format (another version may have rebuilt it in place). */
  isCurrent(): boolean {
    try {
      return schemaProblem(this.#db) === undefined;
    } catch {
      return false;
    }
  }

  /** A statement, prepared once per reader. */
  #prepared(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (!statement) this.#statements.set(sql, (statement = this.#db.prepare(sql)));
    return statement;
  }

  #all<T>(sql: string, ...parameters: (string | number)[]): T[] {
    try {
      return this.#prepared(sql).all(...parameters) as T[];
    } catch (error) {
      throw cacheErrorOf(error, this.dir);
    }
  }

  /** Whose cache it is, its last sync, locales and model; read again after each commit. */
  get head(): CacheHead {
    const version = (this.#prepared('PRAGMA data_version').get() as { data_version: number }).data_version;
    if (this.#head?.version !== version) {
      try {
        this.#head = { version, head: readHead(this.#db) };
      } catch (error) {
        throw error instanceof CacheError
          ? new CacheError('cache_damaged', `The cache in ${this.dir} is damaged: ${error.message}`)
          : cacheErrorOf(error, this.dir);
      }
    }
    return this.#head.head;
  }

  sources(): StoredSource[] {
    return this.#all<StoredSource>(
      'SELECT key, kind, name, fingerprint, synced_at AS syncedAt FROM source ORDER BY key',
    ).map((row) => ({ ...row }));
  }

  /**
   * A source's members in order, each with its record's content type and digest (not the stamps
   * it was listed with; see `Member`); none for a source not synced. A member whose record is
   * missing is left out.
   */
  members(source: string): Member[] {
    const row = this.#all<{ count: number; ids: string }>('SELECT count, ids FROM member WHERE source = ?', source)[0];
    if (!row) return [];
    memberColumns(row, ['ids'], this.dir, source); // a list that does not read back is damage, not an empty source
    // The ids are joined with their records in SQL, straight from the row's JSON.
    return this.#all<Member>(
      'SELECT j.value AS id, r.content_type AS contentType, r.digest FROM json_each(?) j ' +
        'JOIN record r ON r.id = j.value ORDER BY j.key',
      row.ids,
    ).map(({ id, contentType, digest }) => ({ id, contentType, digest }));
  }

  /** The records a source's includes reach from its members, not counting the members. */
  included(source: string): string[] {
    return this.#all<{ id: string }>('SELECT id FROM included WHERE source = ?', source).map((row) => row.id);
  }

  /** A record by id. */
  record(id: string): StoredRecord | undefined {
    return this.records([id]).get(id);
  }

  /** Records by id (those that exist), read in one statement. */
  records(ids: Iterable<string>): Map<string, StoredRecord> {
    const rows = this.#all<{ id: string; json: string }>(
      'SELECT id, json FROM body WHERE id IN (SELECT value FROM json_each(?))',
      JSON.stringify([...ids]),
    );
    return new Map(rows.map((row) => [row.id, parseStored<StoredRecord>(row.json, row.id, this.dir)]));
  }

  has(id: string): boolean {
    return this.contentType(id) !== undefined;
  }

  contentType(id: string): string | undefined {
    return this.contentTypesOf([id]).get(id);
  }

  /** The content type of each record of `ids` that exists, read in one statement. */
  contentTypesOf(ids: Iterable<string>): Map<string, string> {
    const rows = this.#all<{ id: string; content_type: string }>(
      'SELECT id, content_type FROM record WHERE id IN (SELECT value FROM json_each(?))',
      JSON.stringify([...ids]),
    );
    return new Map(rows.map((row) => [row.id, row.content_type]));
  }

  /** How many records of a content type the cache holds. */
  countOfType(contentType: string): number {
    return this.#all<{ n: number }>('SELECT count(*) AS n FROM record WHERE content_type = ?', contentType)[0]!.n;
  }

  /** A record's references, in order. */
  references(id: string): Reference[] {
    const refs = this.#all<{ refs: string }>('SELECT refs FROM record WHERE id = ?', id)[0]?.refs;
    return refs === undefined ? [] : unpackReferences(refs, id, this.dir);
  }

  /**
   * Every record's digest and the ids its references point to, in order: the whole reference
   * graph, read in one statement (for what depends on what beyond one source's includes).
   */
  links(): Map<string, Link> {
    const rows = this.#all<{ id: string; digest: string; targets: string | null }>(
      "SELECT id, digest, (SELECT group_concat(j.value ->> 1, ' ') FROM json_each(refs) j) AS targets FROM record",
    );
    return new Map(
      rows.map((row) => [row.id, { digest: row.digest, targets: row.targets ? row.targets.split(' ') : [] }]),
    );
  }

  /**
   * The origins (`https://images.example.com`) of the files of the assets the cache holds,
   * sorted: the hosts their images come from. Cut from each `file.url` (of every locale) in
   * SQL, so that a cache of many assets gives a few rows; relative URLs have none.
   */
  assetOrigins(): string[] {
    const rows = this.#all<{ origin: string }>(
      `WITH url AS (
         SELECT b.json ->> '$.fields.file.url' AS url FROM record r JOIN body b ON b.id = r.id WHERE r.content_type = '_asset'
         UNION ALL
         SELECT f.value ->> '$.url' FROM record r JOIN body b ON b.id = r.id, json_each(b.json, '$.fields.file') f WHERE r.content_type = '_asset' AND f.type = 'object'
       ), scheme AS (SELECT url, instr(url, '://') AS at FROM url WHERE url IS NOT NULL)
       SELECT DISTINCT substr(url, 1, at + 1 + instr(substr(url, at + 3) || '/', '/')) AS origin FROM scheme WHERE at > 0`,
    );
    const origins = new Set<string>();
    for (const { origin } of rows) {
      const url = URL.parse(origin);
      if (url && (url.protocol === 'https:' || url.protocol === 'http:')) origins.add(url.origin);
    }
    return [...origins].sort();
  }

  /** The file of every asset the cache holds (of every locale), by URL, with its size when known. */
  assetFiles(): Map<string, { width?: number; height?: number }> {
    type File = { url?: unknown; width?: unknown; height?: unknown };
    const files = new Map<string, { width?: number; height?: number }>();
    const add = (file: File | null | undefined) => {
      if (typeof file?.url !== 'string') return;
      files.set(file.url, {
        ...(typeof file.width === 'number' ? { width: file.width } : {}),
        ...(typeof file.height === 'number' ? { height: file.height } : {}),
      });
    };
    for (const { file } of this.#all<{ file: string | null }>(
      "SELECT b.json ->> '$.fields.file' AS file FROM record r JOIN body b ON b.id = r.id WHERE " +
        "r.content_type = '_asset'",
    )) {
      const value = file === null ? null : (JSON.parse(file) as File | Record<string, File>);
      if (value && 'url' in value) add(value as File);
      else if (value) for (const byLocale of Object.values(value as Record<string, File>)) add(byLocale);
    }
    return files;
  }

  /**
   * The distinct URLs starting with `prefix` that the documents hold (the links and images of
   * their richtext), sorted. Only the documents that hold `prefix` at all are read.
   */
  urlsInDocuments(prefix: string): string[] {
    const rows = this.#all<{ json: string }>(
      "SELECT b.json FROM record r JOIN body b ON b.id = r.id WHERE r.content_type <> '_asset' AND " +
        'instr(b.json, ?) > 0',
      prefix,
    );
    // In the stored JSON a URL ends where its string or attribute does: at a quote, escaped or not.
    const url = new RegExp(`${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}${String.raw`[^"'\\\s<>]*`}`, 'g');
    return [...new Set(rows.flatMap((row) => row.json.match(url) ?? []))].sort();
  }

  /** Content types of the members of some sources, sorted. */
  contentTypes(sources: readonly string[]): string[] {
    return this.#all<{ content_type: string }>(
      'SELECT DISTINCT r.content_type FROM member m, json_each(m.ids) j JOIN record r ON r.id = j.value ' +
        'WHERE m.source IN (SELECT value FROM json_each(?)) ORDER BY r.content_type',
      JSON.stringify(sources),
    ).map((row) => row.content_type);
  }

  /** Field → the content types its stored references of records of `contentType` point to. */
  referenceTargets(contentType: string): Map<string, string[]> {
    const rows = this.#all<{ field: string; target: string }>(
      'SELECT DISTINCT j.value ->> 0 AS field, t.content_type AS target FROM record f, json_each(f.refs) j ' +
        'JOIN record t ON t.id = j.value ->> 1 WHERE f.content_type = ? ORDER BY field, target',
      contentType,
    );
    const targets = new Map<string, string[]>();
    for (const { field, target } of rows) targets.set(field, [...(targets.get(field) ?? []), target]);
    return targets;
  }

  /** How many records (documents and assets) the cache holds. */
  recordCount(): number {
    return this.head.records;
  }

  /** References whose target the server does not have, each once: of one source, or of all. */
  dangling(source?: string): DanglingReference[] {
    const where = source === undefined ? '' : 'WHERE source = ?';
    return this.#all<DanglingReference>(
      `SELECT DISTINCT from_id AS "from", field, to_id AS id FROM dangling ${where} ORDER BY from_id, field, to_id`,
      ...(source === undefined ? [] : [source]),
    ).map((row) => ({ ...row }));
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }
}

/** One reader per cache folder in a process, opened again when the database file was replaced. */
const readers = new Map<string, { reader: CacheReader; inode: number }>();

/**
 * The committed content of the cache in `dir`, or undefined when there is none (yet). Readers
 * are shared within a process; each read sees the last committed sync.
 */
export function openCache(dir: string): CacheReader | undefined {
  const path = resolve(dir);
  const inode = inodeOf(path);
  const known = readers.get(path);
  if (known && known.inode === inode && known.reader.isCurrent()) return known.reader;
  known?.reader.close();
  readers.delete(path);
  if (inode === undefined) return undefined;
  const reader = CacheReader.open(path);
  if (reader) readers.set(path, { reader, inode });
  return reader;
}

/** Removes the cache in `dir` (the next sync starts from nothing). */
export function clearCache(dir: string): void {
  const path = resolve(dir);
  readers.get(path)?.reader.close();
  readers.delete(path);
  removeDatabase(path);
}
