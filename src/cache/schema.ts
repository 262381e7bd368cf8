import { CacheError } from './database.ts';
import type { Database } from './sqlite.ts';

/**
 * The cache's tables. One database per cache folder (`cache.sqlite`), in WAL mode: readers see
 * the last committed sync while the next one writes.
 *
 * - `meta`: the format, the fingerprint (base URL, repository, package; never the key), the time
 *   of the last sync, the locales and the model, as JSON values by name.
 * - `record`: one row per document or asset: its stamps (`updated_at`, `revision`), content
 *   type, digest, whether it is partial (a masked source's fields only), and its references in
 *   order, as JSON `[[field, id, 1 when an asset or 0], …]`.
 * - `body`: each record's normalised JSON, apart from the stamps a sync compares.
 * - `reference`: the references again, keyed by their target, so "who references X" is a
 *   lookup; brought up to date from `record.refs` when a transaction relinked records.
 * - `source`, `member`, `included`, `dangling`: each source's options fingerprint and sync time,
 *   its members in order with the stamps they were stored with (which the next listing compares
 *   with, in the same order), the other records its includes reach, and its references to
 *   records the server does not have. A source's members are one
 *   row of parallel JSON arrays: a listing compares with all of them at once, and a hundred
 *   thousand of them read as a few strings rather than as a hundred thousand rows.
 * - `etag`: answers kept for conditional GETs of the repository and of aliases.
 */

const cacheFormat = 7;

export const schema = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE record (
  id TEXT PRIMARY KEY,
  content_type TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  revision INTEGER NOT NULL,
  digest TEXT NOT NULL,
  partial INTEGER NOT NULL,
  refs TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX record_partial ON record (partial) WHERE partial = 1;
CREATE TABLE body (id TEXT PRIMARY KEY, json TEXT NOT NULL);
CREATE TABLE reference (to_id TEXT NOT NULL, from_id TEXT NOT NULL, field TEXT NOT NULL, asset INTEGER NOT NULL, PRIMARY KEY (to_id, from_id, field)) WITHOUT ROWID;
CREATE TABLE source (key TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL, fingerprint TEXT NOT NULL, synced_at TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE member (source TEXT PRIMARY KEY, count INTEGER NOT NULL, ids TEXT NOT NULL, updated_at TEXT NOT NULL, revisions TEXT NOT NULL);
CREATE TABLE included (source TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (source, id)) WITHOUT ROWID;
CREATE TABLE dangling (source TEXT NOT NULL, from_id TEXT NOT NULL, field TEXT NOT NULL, to_id TEXT NOT NULL);
CREATE TABLE etag (key TEXT PRIMARY KEY, etag TEXT NOT NULL, body TEXT NOT NULL) WITHOUT ROWID;
`;

/**
 * The lists of a source's `member` row named by `columns`, decoded, in that order; throws a
 * `cache_damaged` CacheError when one does not read back (not a JSON array of `count` items).
 */
export function memberColumns(
  row: Record<string, unknown>,
  columns: readonly string[],
  dir: string,
  source: string,
): unknown[][] {
  let values: unknown[] = [];
  try {
    values = columns.map((column) => JSON.parse(row[column] as string) as unknown);
  } catch {}
  if (values.length !== columns.length || values.some((list) => !Array.isArray(list) || list.length !== row.count)) {
    throw new CacheError('cache_damaged', `The cache in ${dir} is damaged: the members of ${source} do not read back`);
  }
  return values as unknown[][];
}

const tables = ['meta', 'record', 'body', 'reference', 'source', 'member', 'included', 'dangling', 'etag'];

/**
 * Why a database is not a cache of this format (to rebuild), or undefined when it is one. Empty databases are "new".
 */
export function schemaProblem(db: Database): 'new' | string | undefined {
  const names = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
    (row) => row.name,
  );
  if (names.length === 0) return 'new';
  if (!tables.every((table) => names.includes(table))) return 'it is not a cache of this package (other tables)';
  const format = (db.prepare("SELECT value FROM meta WHERE key = 'format'").get() as { value: string } | undefined)
    ?.value;
  if (format !== String(cacheFormat))
    return `it is of another format (${format ?? 'none'}; this version writes ${cacheFormat})`;
  return undefined;
}

/** Drops every table of the database and creates the cache's: inside a write transaction, all or nothing. */
export function recreate(db: Database): void {
  const names = (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as {
      name: string;
    }[]
  ).map((row) => row.name);
  for (const name of names) db.exec(`DROP TABLE "${name.replaceAll('"', '""')}"`);
  db.exec(schema);
  db.prepare("INSERT INTO meta (key, value) VALUES ('format', ?)").run(String(cacheFormat));
}
