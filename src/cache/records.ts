import type { Reference, Stamp, StoredRecord } from '../model/records.ts';

import { CacheError } from './database.ts';
import type { Database, Statement } from './sqlite.ts';

/** What the cache knows of a record without reading its body or references. */
export interface RecordInfo {
  contentType: string;
  updatedAt: string;
  revision: number;
  digest: string;
  /** Only the fields a masked source asked for. */
  partial: boolean;
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

/** A record's stored JSON (its body or its references), parsed; a `cache_damaged` CacheError if it does not parse. */
export function parseStored<T>(json: string, id: string, dir: string): T {
  try {
    return JSON.parse(json) as T;
  } catch (error) {
    throw new CacheError('cache_damaged', `The cache in ${dir} is damaged: record ${id} does not parse`, error);
  }
}

/** References as `record.refs` holds them: `[[field, id, 1 or 0], …]`. */
const packReferences = (references: readonly Reference[]): string =>
  JSON.stringify(references.map((ref) => [ref.field, ref.id, ref.asset ? 1 : 0]));
export const unpackReferences = (refs: string, id: string, dir: string): Reference[] =>
  parseStored<[string, string, number][]>(refs, id, dir).map(([field, id, asset]) => ({
    field,
    id,
    asset: asset === 1,
  }));

/** A list as JSON, for `json_each`, so a batch is one statement. */
const asJson = (values: Iterable<string>) => JSON.stringify([...values]);

/**
 * The records of the cache as one sync's transaction sees them. Every write goes to the
 * database at once, so a query always sees the transaction's own writes; what this keeps in
 * memory is what was looked up (in batches, for the ids of a page) or written in this run.
 * What the transaction changed is worked out from what each touched record was first.
 */
export class Records {
  readonly #db: Database;
  /** The cache had no record when the transaction began: every record is new, nothing to remember. */
  readonly #startedEmpty: boolean;
  /** Records looked up or written in this run: their info, or null when there is none. */
  readonly #known = new Map<string, RecordInfo | null>();
  /** Each record the transaction changed, as it was before (undefined: it did not exist). */
  readonly #before = new Map<string, RecordInfo | undefined>();
  /** References of records put in this run, packed, until a walk reads their node. */
  readonly #packed = new Map<string, string>();
  readonly #nodes = new Map<string, Node>();
  /**
   * Records relinked (added, dropped, references changed) since `reference` was last brought up to date, with their
   * references before.
   */
  readonly #relinked = new Map<string, string | undefined>();
  /** Records dropped in this run. */
  readonly dropped = new Set<string>();
  /** Every record was removed (a fresh sync): `reference` is filled again from every record. */
  #cleared = false;
  readonly #dir: string;
  readonly #statements = new Map<string, Statement>();
  /** Bumped by every write. */
  #version = 0;

  constructor(db: Database, dir: string) {
    this.#db = db;
    this.#dir = dir;
    this.#startedEmpty = !this.#statement('SELECT EXISTS (SELECT 1 FROM record) AS any').get()!.any;
  }

  #statement(sql: string, arrays = false): Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      this.#statements.set(sql, (statement = this.#db.prepare(sql)));
      if (arrays) statement.setReturnArrays(true);
    }
    return statement;
  }

  /** Whether the cache had no record when the transaction began. */
  get startedEmpty(): boolean {
    return this.#startedEmpty;
  }

  /** How many records there are now. */
  get size(): number {
    return this.#statement('SELECT count(*) AS n FROM record').get()!.n as number;
  }

  /** Every record id there is now. */
  ids(): string[] {
    return (this.#statement('SELECT id FROM record', true).all() as unknown as [string][]).map(([id]) => id);
  }

  info(id: string): RecordInfo | undefined {
    if (!this.#known.has(id)) this.infos([id]);
    return this.#known.get(id) ?? undefined;
  }

  /** Looks records up in one statement (those not looked up before); every later `info` of them is at hand. */
  infos(ids: Iterable<string>): void {
    const wanted = [...ids].filter((id) => !this.#known.has(id));
    if (wanted.length === 0) return;
    for (const id of wanted) this.#known.set(id, null);
    if (this.#startedEmpty && this.#before.size === 0) return; // nothing there but what this run wrote, which is known
    const statement = this.#statement(
      'SELECT id, content_type, updated_at, revision, digest, partial FROM record WHERE id IN (SELECT value ' +
        'FROM json_each(?))',
      true,
    );
    for (const [id, contentType, updatedAt, revision, digest, partial] of statement.all(asJson(wanted)) as unknown as [
      string,
      string,
      string,
      number,
      string,
      number,
    ][]) {
      this.#known.set(id, { contentType, updatedAt, revision, digest, partial: partial === 1 });
    }
  }

  /** Whether the record of `id` is an asset (looked up as `info` does). */
  isAsset(id: string): boolean {
    return this.info(id)?.contentType === '_asset';
  }

  /** True when the record is stored with these stamps, and whole unless `orPartial`. */
  sameStamps({ id, updatedAt, revision }: Stamp, orPartial = false): boolean {
    const info = this.info(id);
    return (
      info !== undefined &&
      (orPartial || !info.partial) &&
      info.updatedAt === (updatedAt ?? '') &&
      info.revision === (revision ?? 0)
    );
  }

  /** Whether any record is partial now. */
  anyPartial(): boolean {
    return this.#statement('SELECT EXISTS (SELECT 1 FROM record WHERE partial = 1) AS any').get()!.any === 1;
  }

  /** The stored record; undefined when there is none. */
  body(id: string): StoredRecord | undefined {
    const row = this.#statement('SELECT json FROM body WHERE id = ?').get(id) as { json: string } | undefined;
    return row && parseStored<StoredRecord>(row.json, id, this.#dir);
  }

  /** Stores a record (its JSON, digest and references); nothing is written when it is stored so already. */
  put(record: StoredRecord, json: string, digest: string, partial: boolean, references: readonly Reference[]): Put {
    const before = this.info(record.id);
    if (before && before.digest === digest && before.partial === partial) {
      return { added: false, changed: false, relinked: false };
    }
    const refs = packReferences(references);
    const refsBefore = before && this.#refsOf(record.id);
    const relinked = !before || before.contentType !== record.contentType || refsBefore !== refs;
    const info: RecordInfo = {
      contentType: record.contentType,
      updatedAt: record.updatedAt,
      revision: record.revision,
      digest,
      partial,
    };
    this.#version++;
    this.#touch(record.id, before, relinked ? refsBefore : undefined, relinked);
    this.#statement(
      'INSERT OR REPLACE INTO record (id, content_type, updated_at, revision, digest, partial, refs) VALUES ' +
        '(?, ?, ?, ?, ?, ?, ?)',
    ).run(record.id, info.contentType, info.updatedAt, info.revision, digest, partial ? 1 : 0, refs);
    this.#statement('INSERT OR REPLACE INTO body (id, json) VALUES (?, ?)').run(record.id, json);
    this.#known.set(record.id, info);
    this.#packed.set(record.id, refs);
    this.#nodes.delete(record.id);
    this.dropped.delete(record.id);
    return { added: !before, changed: true, relinked };
  }

  /** Removes a record; true when there was one. */
  drop(id: string): boolean {
    const before = this.info(id);
    if (!before) return false;
    this.#version++;
    this.#touch(id, before, this.#refsOf(id), true);
    for (const table of ['record', 'body']) this.#statement(`DELETE FROM ${table} WHERE id = ?`).run(id);
    this.#known.set(id, null);
    this.#packed.delete(id);
    this.#nodes.delete(id);
    this.dropped.add(id);
    return true;
  }

  /** Removes every record (a fresh sync); what was there still counts as before. */
  clear(): void {
    if (!this.#startedEmpty) {
      const statement = this.#statement(
        'SELECT id, content_type, updated_at, revision, digest, partial FROM record',
        true,
      );
      for (const [id, contentType, updatedAt, revision, digest, partial] of statement.all() as unknown as [
        string,
        string,
        string,
        number,
        string,
        number,
      ][]) {
        if (!this.#before.has(id))
          this.#before.set(id, { contentType, updatedAt, revision, digest, partial: partial === 1 });
      }
    }
    this.#version++;
    this.#db.exec('DELETE FROM record; DELETE FROM body; DELETE FROM reference;');
    for (const id of this.#before.keys()) this.#known.set(id, null);
    for (const id of this.#known.keys()) this.#known.set(id, null);
    this.#packed.clear();
    this.#nodes.clear();
    this.#relinked.clear();
    this.#cleared = true;
    this.#relinkedAll = true;
  }

  /** The packed references a record has now (read once). */
  #refsOf(id: string): string | undefined {
    const node = this.#nodes.get(id);
    if (node) return packReferences(node.references);
    return (
      this.#packed.get(id) ??
      (this.#statement('SELECT refs FROM record WHERE id = ?').get(id) as { refs: string } | undefined)?.refs
    );
  }

  #touch(id: string, before: RecordInfo | undefined, refsBefore: string | undefined, relinked: boolean): void {
    // A cache that started empty remembers nothing: every record is new, and `reference` is filled from all of them.
    if (this.#startedEmpty && !this.#cleared) {
      this.#relinkedAll = true;
      return;
    }
    if (!this.#before.has(id)) this.#before.set(id, before);
    if (relinked && !this.#relinked.has(id)) this.#relinked.set(id, refsBefore);
  }

  /** Some record was written in a cache that started empty: `reference` is to be filled from every record. */
  #relinkedAll = false;

  /** The nodes of the records of `ids` that exist; read in one statement for those not at hand. */
  nodes(ids: Iterable<string>): Map<string, Node> {
    const found = new Map<string, Node>();
    const wanted: string[] = [];
    for (const id of ids) {
      let node = this.#nodes.get(id);
      const packed = node ? undefined : this.#packed.get(id);
      if (packed !== undefined) {
        const info = this.#known.get(id)!;
        this.#nodes.set(
          id,
          (node = {
            id,
            contentType: info.contentType,
            digest: info.digest,
            references: unpackReferences(packed, id, this.#dir),
          }),
        );
        this.#packed.delete(id); // the node holds them now (a first sync reads every record's)
      }
      if (node) found.set(id, node);
      else if (this.#known.get(id) !== null) wanted.push(id);
    }
    if (wanted.length === 0) return found;
    const statement = this.#statement(
      'SELECT id, content_type, digest, refs FROM record WHERE id IN (SELECT value FROM json_each(?))',
      true,
    );
    for (const [id, contentType, digest, refs] of statement.all(asJson(wanted)) as unknown as [
      string,
      string,
      string,
      string,
    ][]) {
      const node: Node = { id, contentType, digest, references: unpackReferences(refs, id, this.#dir) };
      this.#nodes.set(id, node);
      found.set(id, node);
    }
    return found;
  }

  /** The records with a reference to one of `targets` (only through asset references, with `assetsOnly`). */
  referrers(targets: Iterable<string>, assetsOnly = false): Set<string> {
    this.#index();
    const statement = this.#statement(
      `SELECT DISTINCT from_id FROM reference WHERE to_id IN (SELECT value FROM ` +
        `json_each(?))${assetsOnly ? ' AND asset = 1' : ''}`,
      true,
    );
    return new Set((statement.all(asJson(targets)) as unknown as [string][]).map(([id]) => id));
  }

  /** For each of `targets` that some record references as an asset, one record that does, each named once. */
  assetReferrers(targets: Iterable<string>): string[] {
    this.#index();
    const statement = this.#statement(
      'SELECT DISTINCT (SELECT from_id FROM reference WHERE to_id = t.value AND asset = 1 LIMIT 1) FROM json_each(?) t',
      true,
    );
    return (statement.all(asJson(targets)) as unknown as [string | null][]).flatMap(([id]) =>
      id === null ? [] : [id],
    );
  }

  /**
   * Brings `reference` (references by target) up to date with the records relinked since it
   * last was: their old rows out, their new ones in. When every record is new (a first or a
   * fresh sync), in one statement over every record.
   */
  #index(): void {
    if (this.#relinked.size === 0 && !this.#relinkedAll) return;
    if (this.#relinkedAll) {
      this.#db.exec('DELETE FROM reference');
      this.#statement(
        'INSERT OR IGNORE INTO reference (to_id, from_id, field, asset) SELECT j.value ->> 1, r.id, j.value ' +
          '->> 0, j.value ->> 2 FROM record r, json_each(r.refs) j',
      ).run();
      this.#relinkedAll = false;
    } else {
      const remove = this.#statement(
        'DELETE FROM reference WHERE (to_id, from_id, field) IN (SELECT value ->> 1, ?, value ->> 0 FROM json_each(?))',
      );
      for (const [id, refs] of this.#relinked) if (refs !== undefined) remove.run(id, refs);
      this.#statement(
        'INSERT OR IGNORE INTO reference (to_id, from_id, field, asset) SELECT j.value ->> 1, r.id, j.value ' +
          '->> 0, j.value ->> 2 FROM record r, json_each(r.refs) j WHERE r.id IN (SELECT value FROM json_each(?))',
      ).run(asJson(this.#relinked.keys()));
    }
    this.#relinked.clear();
  }

  /** Brings everything the transaction wrote up to date, before it commits. */
  settle(): void {
    this.#index();
  }

  /** The records the transaction added, changed (another digest) and removed (worked out again only after a write). */
  changes(): RecordChanges {
    if (this.#changes?.version !== this.#version)
      this.#changes = { version: this.#version, changes: this.#workOutChanges() };
    return this.#changes.changes;
  }

  #changes: { version: number; changes: RecordChanges } | undefined;

  #workOutChanges(): RecordChanges {
    if (this.#startedEmpty && this.#before.size === 0) return { added: this.ids(), updated: [], removed: [] };
    const changes: RecordChanges = { added: [], updated: [], removed: [] };
    const now = new Map<string, RecordInfo | undefined>();
    const unknown = [...this.#before.keys()].filter((id) => !this.#known.has(id));
    this.infos(unknown);
    for (const id of this.#before.keys()) now.set(id, this.#known.get(id) ?? undefined);
    for (const [id, before] of this.#before) {
      const after = now.get(id);
      if (!before && after) changes.added.push(id);
      else if (before && !after) changes.removed.push(id);
      else if (before && after && before.digest !== after.digest) changes.updated.push(id);
    }
    return changes;
  }
}
