import { hash } from 'node:crypto';
import type { StoredRecord } from '../sync/records.ts';
import type { Database, Statement } from './sqlite.ts';

/** A reference of a record: the field, the target's id, and whether the target is an asset. */
export interface Reference {
  field: string;
  id: string;
  asset: boolean;
}

/** What the cache knows of a record without reading its body. */
export interface RecordInfo {
  contentType: string;
  updatedAt: string;
  revision: number;
  digest: string;
  /** Only the fields a masked source asked for. */
  partial: boolean;
  /** A hash of the content type and the references: another value means the record was relinked. */
  links: string;
}

/** A record as a closure or a digest walks it. */
export interface Node {
  id: string;
  contentType: string;
  digest: string;
  references: readonly Reference[];
}

/** What a put did to the record of an id. */
export interface Put {
  /** There was no record of this id. */
  added: boolean;
  /** The stored record changed (its digest or partial flag). */
  changed: boolean;
  /** It was added, or its content type or references changed. */
  relinked: boolean;
}

export interface RecordChanges {
  added: string[];
  updated: string[];
  removed: string[];
}

/** The digest of a record: a hash of its JSON. */
export const digestOfJson = (json: string): string => hash('sha1', json, 'base64url').slice(0, 22);

const linksOf = (contentType: string, references: readonly Reference[]) =>
  hash('sha1', JSON.stringify([contentType, references.map((r) => [r.field, r.id, r.asset ? 1 : 0])]), 'base64url').slice(0, 16);

/** A list of ids as a JSON array for `json_each`, so a batch is one statement. */
const asJson = (ids: Iterable<string>) => JSON.stringify([...ids]);

/**
 * The records of the cache as one sync's transaction sees them: their stamps (read all at
 * once, when first needed, and kept current with the run's writes), bodies, and references.
 * What the transaction changed is worked out from the stamps each touched record had first.
 */
export class Records {
  readonly #db: Database;
  #rows: Map<string, RecordInfo> | undefined;
  /** Each record the transaction changed, as it was before (undefined: it did not exist). */
  readonly #before = new Map<string, RecordInfo | undefined>();
  /** Nodes put in this transaction or read for a walk. */
  readonly #nodes = new Map<string, Node>();
  readonly #damaged: (id: string) => void;
  /** Records to write again even when what comes is what the digest says is stored (damaged ones). */
  readonly #rewrite = new Set<string>();
  readonly #statements = new Map<string, Statement>();

  /** `damaged` hears of a record whose stored JSON no longer matches its digest. */
  constructor(db: Database, damaged: (id: string) => void) {
    this.#db = db;
    this.#damaged = damaged;
  }

  #statement(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (!statement) this.#statements.set(sql, (statement = this.#db.prepare(sql)));
    return statement;
  }

  #all(): Map<string, RecordInfo> {
    if (this.#rows) return this.#rows;
    const statement = this.#statement('SELECT id, content_type, updated_at, revision, digest, partial, links FROM record');
    statement.setReturnArrays(true);
    const rows = new Map<string, RecordInfo>();
    for (const [id, contentType, updatedAt, revision, digest, partial, links] of statement.all() as unknown as [string, string, string, number, string, number, string][]) {
      rows.set(id, { contentType, updatedAt, revision, digest, partial: partial === 1, links });
    }
    return (this.#rows = rows);
  }

  get size(): number {
    return this.#all().size;
  }

  info(id: string): RecordInfo | undefined {
    return this.#all().get(id);
  }

  ids(): IterableIterator<string> {
    return this.#all().keys();
  }

  /** True when the record is stored whole with these stamps. */
  sameStamps(id: string, updatedAt: string | undefined, revision: number | undefined): boolean {
    const info = this.#all().get(id);
    return info !== undefined && !info.partial && info.updatedAt === (updatedAt ?? '') && info.revision === (revision ?? 0);
  }

  /** The stored record; undefined when there is none, or when its JSON no longer matches its digest (reported as damaged). */
  body(id: string): StoredRecord | undefined {
    const info = this.#all().get(id);
    const row = info && (this.#statement('SELECT json FROM body WHERE id = ?').get(id) as { json: string } | undefined);
    if (!info || !row) return undefined;
    if (digestOfJson(row.json) !== info.digest) {
      this.#rewrite.add(id);
      this.#damaged(id);
      return undefined;
    }
    return JSON.parse(row.json) as StoredRecord;
  }

  /** Stores a record (its JSON, digest and references); nothing is written when it is stored so already. */
  put(record: StoredRecord, json: string, digest: string, partial: boolean, references: readonly Reference[]): Put {
    const rows = this.#all();
    const before = rows.get(record.id);
    if (before && before.digest === digest && before.partial === partial && !this.#rewrite.delete(record.id)) {
      return { added: false, changed: false, relinked: false };
    }
    const links = linksOf(record.contentType, references);
    const info: RecordInfo = { contentType: record.contentType, updatedAt: record.updatedAt, revision: record.revision, digest, partial, links };
    this.#touch(record.id, before);
    this.#statement('INSERT OR REPLACE INTO record (id, content_type, updated_at, revision, digest, partial, links) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
      record.id, info.contentType, info.updatedAt, info.revision, digest, partial ? 1 : 0, links,
    );
    this.#statement('INSERT OR REPLACE INTO body (id, json) VALUES (?, ?)').run(record.id, json);
    const relinked = before?.links !== links;
    if (relinked) {
      if (before) this.#statement('DELETE FROM reference WHERE from_id = ?').run(record.id);
      const insert = this.#statement('INSERT INTO reference (from_id, position, field, to_id, asset) VALUES (?, ?, ?, ?, ?)');
      references.forEach((ref, i) => insert.run(record.id, i, ref.field, ref.id, ref.asset ? 1 : 0));
    }
    rows.set(record.id, info);
    this.#nodes.set(record.id, { id: record.id, contentType: info.contentType, digest, references });
    return { added: !before, changed: true, relinked };
  }

  /** Writes these records again when they come, even with the digest stored (their stored JSON is damaged). */
  rewrite(ids: Iterable<string>): void {
    for (const id of ids) this.#rewrite.add(id);
  }

  /** Removes a record; true when there was one. */
  drop(id: string): boolean {
    const rows = this.#all();
    const before = rows.get(id);
    if (!before) return false;
    this.#touch(id, before);
    for (const table of ['record', 'body']) this.#statement(`DELETE FROM ${table} WHERE id = ?`).run(id);
    this.#statement('DELETE FROM reference WHERE from_id = ?').run(id);
    rows.delete(id);
    this.#nodes.delete(id);
    return true;
  }

  /** Removes every record (a fresh sync); what was there still counts as before. */
  clear(): void {
    const rows = this.#all();
    for (const [id, info] of rows) this.#touch(id, info);
    this.#db.exec('DELETE FROM record; DELETE FROM body; DELETE FROM reference;');
    rows.clear();
    this.#nodes.clear();
  }

  #touch(id: string, before: RecordInfo | undefined): void {
    if (!this.#before.has(id)) this.#before.set(id, before);
  }

  /** The nodes of the records of `ids` that exist; read in one statement for those not at hand. */
  nodes(ids: Iterable<string>): Map<string, Node> {
    const rows = this.#all();
    const found = new Map<string, Node>();
    const wanted: string[] = [];
    for (const id of ids) {
      const node = this.#nodes.get(id);
      if (node) found.set(id, node);
      else if (rows.has(id)) wanted.push(id);
    }
    if (wanted.length === 0) return found;
    const references = new Map<string, Reference[]>(wanted.map((id) => [id, []]));
    const statement = this.#statement('SELECT from_id, field, to_id, asset FROM reference WHERE from_id IN (SELECT value FROM json_each(?)) ORDER BY from_id, position');
    statement.setReturnArrays(true);
    for (const [from, field, id, asset] of statement.all(asJson(wanted)) as unknown as [string, string, string, number][]) {
      references.get(from)!.push({ field, id, asset: asset === 1 });
    }
    for (const [id, refs] of references) {
      const info = rows.get(id)!;
      const node: Node = { id, contentType: info.contentType, digest: info.digest, references: refs };
      this.#nodes.set(id, node);
      found.set(id, node);
    }
    return found;
  }

  /** The records with a reference to one of `targets` (only through asset references, with `assetsOnly`). */
  referrers(targets: Iterable<string>, assetsOnly = false): Set<string> {
    const statement = this.#statement(`SELECT DISTINCT from_id FROM reference WHERE to_id IN (SELECT value FROM json_each(?))${assetsOnly ? ' AND asset = 1' : ''}`);
    statement.setReturnArrays(true);
    return new Set((statement.all(asJson(targets)) as unknown as [string][]).map(([id]) => id));
  }

  /** The records the transaction added, changed (another digest) and removed. */
  changes(): RecordChanges {
    const rows = this.#all();
    const changes: RecordChanges = { added: [], updated: [], removed: [] };
    for (const [id, before] of this.#before) {
      const now = rows.get(id);
      if (!before && now) changes.added.push(id);
      else if (before && !now) changes.removed.push(id);
      else if (before && now && before.digest !== now.digest) changes.updated.push(id);
    }
    return changes;
  }

  /** The digest each record had when the transaction began, of those it changed or removed. */
  digestBefore(id: string): string | undefined {
    return this.#before.has(id) ? this.#before.get(id)?.digest : this.#all().get(id)?.digest;
  }
}
