import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Locales } from './locales.ts';
import type { Model, References, StoredRecord } from './records.ts';

/**
 * The local cache: records in append-only JSON-lines segments, and a manifest that says where
 * each live record is. A sync writes new and changed records to a new segment, then replaces
 * the manifest (temporary file renamed, manifest last), so a crash leaves the last good cache.
 * Segments nothing points to any more are removed; mostly-dead ones are compacted (`compactSegments`).
 */

export const cacheFormat = 4;

/** Where a record is and what it is, by id. */
export interface RecordEntry {
  /** Segment name, offset, length. */
  s: string;
  o: number;
  l: number;
  /** updatedAt, revision, contentType, digest. */
  u: string;
  r: number;
  t: string;
  d: string;
  /** References: `[field, target id, field, target id, …]`, a pair per reference. */
  f: References;
  /** Partial: only the fields a masked source asked for; fetched in full when a source without a mask needs it. */
  p?: true;
}

/** A reference whose target the server does not have. */
export interface DanglingReference {
  from: string;
  field: string;
  id: string;
}

export interface SourceState {
  kind: 'collection' | 'alias' | 'query';
  name: string;
  fingerprint: string;
  /** Members in the source's order. */
  members: string[];
  /** The records the source needs (members and what they include), for the changeset. */
  closure: string[];
  /** The records of the closure that are not members. */
  included: string[];
  /** Each member's dependency digest (its own digest and those of the records it includes), in the order of `members`. */
  digests: string[];
  /** References of the closure whose target the server does not have. */
  dangling: DanglingReference[];
  /** ISO time the source was last fetched; changes since then (minus a margin) are fetched next time. */
  syncedAt: string;
  etag?: string;
}

const danglingSchema = z.array(z.object({ from: z.string(), field: z.string(), id: z.string() }));

const headSchema = z.object({
  format: z.literal(cacheFormat),
  /** Base URL, repository and package version, hashed; never the key. */
  fingerprint: z.string(),
  repository: z.string(),
  baseUrl: z.string(),
  package: z.string(),
  lastSync: z.string(),
  locales: z.object({
    defaultLocale: z.string(),
    locales: z.array(z.object({ key: z.string(), fallback: z.string().optional() })),
    source: z.enum(['repository', 'data', 'config']),
  }),
  model: z.record(z.string(), z.record(z.string(), z.object({ kind: z.string().optional(), localized: z.boolean(), multiple: z.boolean().optional() }))),
  /** References whose target the server does not have: `<document id>.<field>` → target id. */
  dangling: danglingSchema,
  /** Answers kept for conditional GETs of aliases and the repository (small; never list pages). */
  etags: z.record(z.string(), z.object({ etag: z.string(), body: z.string() })),
});

export type Manifest = Omit<z.infer<typeof headSchema>, 'locales' | 'model'> & {
  locales: Locales;
  model: Model;
  sources: Record<string, SourceState>;
  /** Record id → entry. */
  records: RecordTable;
};

/**
 * The manifest on disk is the head (what `Manifest` holds but its records) in `manifest.json`,
 * and the records in index files it names, read in order: the first holds every record of its
 * time, each later one the records added or changed since and the ids removed. A sync that
 * changed few records writes one small index file instead of all records again; when the later
 * files would hold more than a quarter as many rows as the records, or there are more than
 * `maxLaterFiles`, they are folded into one.
 * Like segments, index files are never changed once written, and removed when the head no
 * longer names them.
 *
 * The bulk (a hundred thousand records make tens of megabytes) is stored in flat arrays, which
 * JSON parses several times faster than objects and nested arrays, and whose values need little
 * of the garbage collector's time after:
 * - an index file's columns (see `encodeIndex`): `ids`, `updatedAt` and `digests` of its rows,
 *   and `rows`, numbers only: each row's segment, offset, length, revision, content type,
 *   partial (1 or 0) and reference count, then that many pairs `field, target`, where strings
 *   are numbers in the file's `segments`, `types`, `fields` and `ids`;
 * - each source's `digests`: the dependency digests in the order of `members`, and `included`
 *   the records of its closure that are not members (the closure is the two together).
 */
const storedSchema = headSchema.extend({
  index: z.array(z.string().regex(/^index-[\w.-]+\.json$/)),
  sources: z.record(
    z.string(),
    z.object({
      kind: z.enum(['collection', 'alias', 'query']),
      name: z.string(),
      fingerprint: z.string(),
      syncedAt: z.string(),
      etag: z.string().optional(),
      dangling: danglingSchema,
      members: z.custom<unknown[]>(Array.isArray, 'expected an array'),
      included: z.custom<unknown[]>(Array.isArray, 'expected an array'),
      digests: z.custom<unknown[]>(Array.isArray, 'expected an array'),
    }),
  ),
});

const indexFileSchema = z.object({
  segments: z.array(z.string().regex(/^records-[\w.-]+\.jsonl$/)),
  types: z.array(z.string()),
  fields: z.array(z.string()),
  ids: z.custom<unknown[]>(Array.isArray, 'expected an array'),
  updatedAt: z.custom<unknown[]>(Array.isArray, 'expected an array'),
  digests: z.custom<unknown[]>(Array.isArray, 'expected an array'),
  rows: z.custom<unknown[]>(Array.isArray, 'expected an array'),
  removed: z.array(z.string()),
});

/** The numbers of a row before its reference pairs: segment, offset, length, revision, type, partial, count. */
const rowHead = 7;

/** A table of distinct strings, numbered in order of first use. */
function numbering(): { list: string[]; number(value: string): number } {
  const list: string[] = [];
  const numbers = new Map<string, number>();
  return {
    list,
    number(value) {
      let n = numbers.get(value);
      if (n === undefined) numbers.set(value, (n = list.push(value) - 1));
      return n;
    },
  };
}

/** The index files a manifest was read from or written to, and how many rows the later ones hold. */
const stored = new WeakMap<Manifest, { index: string[]; laterRows: number }>();

/** Index files beyond the first that are folded into one on the next write. */
const maxLaterFiles = 16;

/**
 * An index file's content: rows for `ids` of `records`, and the ids removed. Stored by column:
 * ids, stamps and digests as lists of strings, everything else as numbers in `rows` (segments,
 * content types and field names by their number in a table; reference targets by their number
 * in `ids`, where the ids of targets without a row here follow those of the rows). Numbers parse
 * several times faster than strings, and leave the garbage collector little to copy.
 */
function encodeIndex(records: Map<string, RecordEntry>, ids: string[], removed: string[]): string {
  const segments = numbering();
  const types = numbering();
  const fields = numbering();
  const targets = numbering();
  for (const id of ids) targets.number(id);
  const updatedAt: string[] = [];
  const digests: string[] = [];
  const rows: number[] = [];
  for (const id of ids) {
    const entry = records.get(id)!;
    updatedAt.push(entry.u);
    digests.push(entry.d);
    rows.push(segments.number(entry.s), entry.o, entry.l, entry.r, types.number(entry.t), entry.p ? 1 : 0, entry.f.length / 2);
    for (let i = 0; i < entry.f.length; i += 2) rows.push(fields.number(entry.f[i]!), targets.number(entry.f[i + 1]!));
  }
  return JSON.stringify({
    segments: segments.list,
    types: types.list,
    fields: fields.list,
    ids: targets.list,
    updatedAt,
    digests,
    rows,
    removed,
  });
}

/** Applies an index file to `records` (its rows checked now, made entries when asked for); a CacheError names the first damaged place. */
function decodeIndex(json: unknown, file: string, records: RecordTable): number {
  const parsed = indexFileSchema.safeParse(json);
  if (!parsed.success) throw damaged(file, parsed.error.issues[0]!.path.join('.'));
  const { segments, types, fields, ids, updatedAt, digests, rows, removed } = parsed.data;
  if (!ids.every(isString)) throw damaged(file, 'ids');
  if (updatedAt.length > ids.length || !updatedAt.every(isString)) throw damaged(file, 'updatedAt');
  if (digests.length !== updatedAt.length || !digests.every(isString)) throw damaged(file, 'digests');
  if (updatedAt.length > maxRows) throw damaged(file, 'rows');
  if (types.length > 0xffff) throw damaged(file, 'types'); // (a row's type is kept as 16 bits)
  const columns: IndexColumns = { segments, types, fields, ids: ids as string[], updatedAt: updatedAt as string[], digests: digests as string[], rows: rows as number[], starts: new Int32Array(updatedAt.length), typeOfRow: new Uint16Array(updatedAt.length), partialRows: 0, live: new Uint8Array(updatedAt.length).fill(1) };
  let at = 0;
  for (let row = 0; row < updatedAt.length; row++) {
    if (!soundRow(rows, at, columns)) throw damaged(file, `rows.${at}`);
    columns.starts[row] = at;
    columns.typeOfRow[row] = rows[at + 4] as number;
    if (rows[at + 5] === 1) columns.partialRows++;
    at += rowHead + 2 * (rows[at + 6] as number);
  }
  if (at !== rows.length) throw damaged(file, `rows.${at}`);
  records.addRows(columns, removed);
  return updatedAt.length + removed.length;
}

/** The head as stored, naming the index files. */
function encodeHead(manifest: Manifest, index: string[]): string {
  const { records: _records, sources, ...head } = manifest;
  const storedSources: Record<string, object> = {};
  for (const [key, { closure: _closure, ...state }] of Object.entries(sources)) storedSources[key] = state;
  return JSON.stringify({ ...head, index, sources: storedSources });
}

function decodeHead(json: unknown, file: string): { manifest: Manifest; index: string[] } {
  const parsed = storedSchema.safeParse(json);
  if (!parsed.success) throw damaged(file, parsed.error.issues[0]!.path.join('.'));
  const { index, sources: storedSources, ...head } = parsed.data;
  if (index.length > maxIndexFiles) throw damaged(file, 'index');
  const sources: Record<string, SourceState> = {};
  for (const [key, { members, included, digests, ...state }] of Object.entries(storedSources)) {
    if (!members.every(isString)) throw damaged(file, `sources.${key}.members`);
    if (!included.every(isString)) throw damaged(file, `sources.${key}.included`);
    if (digests.length !== members.length || !digests.every(isString)) throw damaged(file, `sources.${key}.digests`);
    sources[key] = { ...state, members, closure: members.concat(included), included, digests };
  }
  return { manifest: { ...head, sources, records: new RecordTable() } as Manifest, index };
}

const isString = (value: unknown): value is string => typeof value === 'string';
/** The string a number of an index file stands for; `undefined` when it names none. */
const nameOf = (list: string[], n: unknown): string | undefined => (Number.isInteger(n) ? list[n as number] : undefined);
const damaged = (file: string, at: string) => new CacheError(`the cache file ${file} is damaged at ${at}`);

/** Whether the row of an index file's `rows` that starts `at` is what `encodeIndex` writes: numbers that name strings of the file's tables. */
function soundRow(rows: unknown[], at: number, table: { segments: string[]; types: string[]; fields: string[]; ids: string[] }): boolean {
  const s = rows[at], o = rows[at + 1], l = rows[at + 2], r = rows[at + 3], t = rows[at + 4], p = rows[at + 5], count = rows[at + 6];
  if (nameOf(table.segments, s) === undefined || nameOf(table.types, t) === undefined || (p !== 0 && p !== 1)) return false;
  if (!Number.isSafeInteger(o) || (o as number) < 0 || !Number.isSafeInteger(l) || (l as number) <= 0) return false;
  if (typeof r !== 'number' || !Number.isFinite(r) || !Number.isSafeInteger(count) || (count as number) < 0 || at + rowHead + 2 * (count as number) > rows.length) return false;
  for (let i = at + rowHead; i < at + rowHead + 2 * (count as number); i += 2) {
    if (nameOf(table.fields, rows[i]) === undefined || nameOf(table.ids, rows[i + 1]) === undefined) return false;
  }
  return true;
}

/** An index file as read, by column (see `encodeIndex`), with where each row starts in `rows`. */
interface IndexColumns {
  segments: string[];
  types: string[];
  fields: string[];
  ids: string[];
  updatedAt: string[];
  digests: string[];
  rows: number[];
  starts: Int32Array;
  /** Each row's content type (its number in `types`), kept apart so that looking it up reads one small array. */
  typeOfRow: Uint16Array;
  /** How many rows are partial (most caches have none). */
  partialRows: number;
  /** 1 for a row that is still its id's record: not replaced by a later file, removed, or made an entry. */
  live: Uint8Array;
}

/** What a segment holds that records of a table still use (see `RecordTable.segmentUse`). */
export interface SegmentUse {
  count: number;
  bytes: number;
  end: number;
}

/** A table's rows are numbered `row * 32 + file`: up to 32 index files (a cache has `maxLaterFiles` and the first) of up to 2^26 rows. */
const fileBits = 5;
const maxIndexFiles = 1 << fileBits;
const fileMask = maxIndexFiles - 1;
const maxRows = 2 ** (31 - fileBits);

/**
 * The records of a cache as read: a `Map` whose entries are made from the index files' rows when
 * first asked for, so a sync that touches a few records does not make 100,000 objects. Passes
 * over every record that need only part of one (stamps, partial flags, references, locations)
 * read the rows as they are: `sameStamps` (and `sameStampsInOrder`), `typeOf`, `anyPartial`,
 * `eachReferrer`, `segmentUse`, `eachLocation`.
 */
export class RecordTable extends Map<string, RecordEntry> {
  readonly #files: IndexColumns[] = [];
  /** The ids whose entry is not made yet, and their row. */
  readonly #rows = new Map<string, number>();

  constructor() {
    super();
  }

  /** Takes the rows of an index file (in place of the rows or entries of the same ids) and removes its removed ids. */
  addRows(columns: IndexColumns, removed: Iterable<string>): void {
    if (this.#files.length >= maxIndexFiles || columns.starts.length > maxRows) throw new RangeError(`a record table holds ${maxIndexFiles} index files of up to ${maxRows} rows`);
    const file = this.#files.push(columns) - 1;
    for (let row = 0; row < columns.starts.length; row++) {
      const id = columns.ids[row]!;
      if (file > 0) this.#retire(id);
      super.delete(id);
      this.#rows.set(id, (row << fileBits) | file);
    }
    for (const id of removed) this.delete(id);
  }

  /** Takes an id out of the rows, its row no longer live; false when it had none. */
  #retire(id: string): boolean {
    const row = this.#rows.get(id);
    if (row === undefined) return false;
    this.#files[row & fileMask]!.live[row >>> fileBits] = 0;
    this.#rows.delete(id);
    return true;
  }

  override get size(): number {
    return super.size + this.#rows.size;
  }
  override get(id: string): RecordEntry | undefined {
    const entry = super.get(id);
    if (entry !== undefined || this.#rows.size === 0) return entry;
    const row = this.#rows.get(id);
    return row === undefined ? undefined : this.#take(id, row);
  }
  override has(id: string): boolean {
    return super.has(id) || this.#rows.has(id);
  }
  override set(id: string, entry: RecordEntry): this {
    if (this.#rows.size > 0) this.#retire(id);
    return super.set(id, entry);
  }
  override delete(id: string): boolean {
    const row = this.#rows.size > 0 && this.#retire(id);
    return super.delete(id) || row;
  }
  override clear(): void {
    this.#dropFiles();
    super.clear();
  }
  override keys(): MapIterator<string> {
    this.#takeAll();
    return super.keys();
  }
  override values(): MapIterator<RecordEntry> {
    this.#takeAll();
    return super.values();
  }
  override entries(): MapIterator<[string, RecordEntry]> {
    this.#takeAll();
    return super.entries();
  }
  override [Symbol.iterator](): MapIterator<[string, RecordEntry]> {
    return this.entries();
  }
  override forEach(callback: (entry: RecordEntry, id: string, map: Map<string, RecordEntry>) => void, thisArg?: unknown): void {
    this.#takeAll();
    super.forEach(callback, thisArg);
  }

  /** Whether a record has these stamps (false when there is no such record). */
  sameStamps(id: string, updatedAt: string | undefined, revision: number | undefined): boolean {
    const row = this.#rows.get(id);
    if (row === undefined) {
      const entry = super.get(id);
      return entry !== undefined && entry.u === updatedAt && entry.r === revision;
    }
    const columns = this.#files[row & fileMask]!;
    const at = row >>> fileBits;
    return columns.updatedAt[at] === updatedAt && columns.rows[columns.starts[at]! + 3] === revision;
  }

  /**
   * `sameStamps` for the members of a listing, asked in the order listed: the id when the record
   * has these stamps (the table's own string of it when read from a row, so that member lists share
   * one string per id), else undefined. While the ids come in the order of the first index file's
   * rows (`encodeIndex` writes a full index in the order of the sources' members), each is
   * compared with the next row instead of being looked up, which reads memory in order rather
   * than all over 100,000 entries.
   */
  sameStampsInOrder(): (id: string, updatedAt: string | undefined, revision: number | undefined) => string | undefined {
    const first = this.#files[0];
    const next = this.#inOrder(first);
    return (id, updatedAt, revision) => {
      const at = next(id);
      if (at === undefined) return this.sameStamps(id, updatedAt, revision) ? id : undefined;
      return first!.updatedAt[at] === updatedAt && first!.rows[first!.starts[at]! + 3] === revision ? first!.ids[at] : undefined;
    };
  }

  /** Puts in `ids`, in place, the table's own string of each id its first index file holds in that order (see `sameStampsInOrder`). */
  shareIds(ids: string[]): void {
    const first = this.#files[0];
    const next = this.#inOrder(first);
    for (let i = 0; i < ids.length; i++) {
      const at = next(ids[i]!);
      if (at !== undefined) ids[i] = first!.ids[at]!;
    }
  }

  /**
   * For ids asked in turn, the row of `first` (the first index file) that holds each, live
   * (undefined when none does): the row after the last one found, else (one lookup) wherever it is.
   */
  #inOrder(first: IndexColumns | undefined): (id: string) => number | undefined {
    let next = 0;
    return (id) => {
      if (first === undefined) return undefined;
      if (first.live[next] !== 1 || first.ids[next] !== id) {
        const row = this.#rows.get(id);
        if (row === undefined || (row & fileMask) !== 0) return undefined;
        next = row >>> fileBits;
      }
      return next++;
    };
  }

  /** A record's content type (undefined when there is no such record). */
  typeOf(id: string): string | undefined {
    const row = this.#rows.get(id);
    if (row === undefined) return super.get(id)?.t;
    const columns = this.#files[row & fileMask]!;
    return columns.types[columns.typeOfRow[row >>> fileBits]!];
  }

  /** Whether any record is partial. */
  anyPartial(): boolean {
    for (const entry of super.values()) if (entry.p) return true;
    for (const { partialRows, rows, starts, live } of this.#files) {
      if (partialRows === 0) continue;
      for (let row = 0; row < live.length; row++) if (live[row] === 1 && rows[starts[row]! + 5] === 1) return true;
    }
    return false;
  }

  /** Calls back with every record that references one of `targets`; rows are read as numbers. */
  eachReferrer(targets: ReadonlySet<string>, referrer: (id: string) => void): void {
    for (const [id, entry] of super.entries()) if (referencesOne(entry.f, targets)) referrer(id);
    if (this.#rows.size === 0) return;
    // Per file, which of the numbers of its ids stand for a target.
    const marks = this.#files.map(({ ids }) => {
      const marked = new Uint8Array(ids.length);
      for (let n = 0; n < ids.length; n++) if (targets.has(ids[n]!)) marked[n] = 1;
      return marked;
    });
    for (const [id, row] of this.#rows) {
      const file = row & fileMask;
      const { rows, starts } = this.#files[file]!;
      const marked = marks[file]!;
      const at = starts[row >>> fileBits]!;
      const end = at + rowHead + 2 * rows[at + 6]!;
      for (let i = at + rowHead + 1; i < end; i += 2) {
        if (marked[rows[i]!] === 1) {
          referrer(id);
          break;
        }
      }
    }
  }

  /** Per segment, the records stored in it: how many, their bytes (with line ends), and where the last of them ends. Rows are read as numbers. */
  segmentUse(): Map<string, SegmentUse> {
    const use = new Map<string, SegmentUse>();
    const add = (segment: string, count: number, bytes: number, end: number) => {
      const known = use.get(segment);
      if (!known) use.set(segment, { count, bytes, end });
      else use.set(segment, { count: known.count + count, bytes: known.bytes + bytes, end: Math.max(known.end, end) });
    };
    for (const entry of super.values()) add(entry.s, 1, entry.l + 1, entry.o + entry.l);
    for (const { segments, rows, starts, live } of this.#files) {
      const [count, bytes, end] = [new Float64Array(segments.length), new Float64Array(segments.length), new Float64Array(segments.length)];
      for (let row = 0; row < live.length; row++) {
        if (live[row] !== 1) continue;
        const at = starts[row]!;
        const segment = rows[at]!;
        count[segment]!++;
        bytes[segment]! += rows[at + 2]! + 1;
        end[segment] = Math.max(end[segment]!, rows[at + 1]! + rows[at + 2]!);
      }
      for (let n = 0; n < segments.length; n++) if (count[n]! > 0) add(segments[n]!, count[n]!, bytes[n]!, end[n]!);
    }
    return use;
  }

  /** Calls back with every record's id and where it is stored. */
  eachLocation(visit: (id: string, segment: string, offset: number, length: number) => void): void {
    for (const [id, entry] of super.entries()) visit(id, entry.s, entry.o, entry.l);
    for (const [id, row] of this.#rows) {
      const columns = this.#files[row & fileMask]!;
      const at = columns.starts[row >>> fileBits]!;
      visit(id, columns.segments[columns.rows[at]!]!, columns.rows[at + 1]!, columns.rows[at + 2]!);
    }
  }

  #take(id: string, row: number): RecordEntry {
    const entry = entryOfRow(this.#files[row & fileMask]!, row >>> fileBits);
    this.#files[row & fileMask]!.live[row >>> fileBits] = 0;
    this.#rows.delete(id);
    super.set(id, entry);
    if (this.#rows.size === 0) this.#files.length = 0; // every entry made: the columns are no longer needed
    return entry;
  }

  #takeAll(): void {
    for (const [id, row] of this.#rows) super.set(id, entryOfRow(this.#files[row & fileMask]!, row >>> fileBits));
    this.#dropFiles();
  }

  /** Forgets the index files (no row live any more: an in-order comparison made before falls back to the entries). */
  #dropFiles(): void {
    for (const { live } of this.#files) live.fill(0);
    this.#rows.clear();
    this.#files.length = 0;
  }
}

function referencesOfRow(columns: IndexColumns, row: number): References {
  const { rows, fields, ids } = columns;
  const at = columns.starts[row]!;
  const end = at + rowHead + 2 * rows[at + 6]!;
  const f: References = [];
  for (let i = at + rowHead; i < end; i += 2) f.push(fields[rows[i]!]!, ids[rows[i + 1]!]!);
  return f;
}

function entryOfRow(columns: IndexColumns, row: number): RecordEntry {
  const { rows } = columns;
  const at = columns.starts[row]!;
  const entry: RecordEntry = {
    s: columns.segments[rows[at]!]!,
    o: rows[at + 1]!,
    l: rows[at + 2]!,
    u: columns.updatedAt[row]!,
    r: rows[at + 3]!,
    t: columns.types[rows[at + 4]!]!,
    d: columns.digests[row]!,
    f: referencesOfRow(columns, row),
  };
  if (rows[at + 5] === 1) entry.p = true;
  return entry;
}

const referencesOne = (refs: References, targets: ReadonlySet<string>): boolean => {
  for (let j = 1; j < refs.length; j += 2) if (targets.has(refs[j]!)) return true;
  return false;
};

export class CacheError extends Error {
  readonly code = 'cache';
  constructor(message: string) {
    super(message);
    this.name = 'CacheError';
  }
}

const manifestFile = 'manifest.json';
const lockFile = 'sync.lock';
/** How long a lock file without a readable holder counts as being written rather than left behind. */
const unreadableLockMs = 10_000;

/**
 * Reads the manifest; `undefined` when there is none, a CacheError when it is corrupt. With
 * `checkMembers: false` it leaves out the check that each source's members are records of the
 * cache (see `membersAreRecords`), for a caller that looks every member up anyway, as a sync's
 * listing does.
 */
export async function readManifest(dir: string, { checkMembers = true }: { checkMembers?: boolean } = {}): Promise<Manifest | undefined> {
  const head = await readJson(dir, manifestFile, true);
  if (head === undefined) return undefined;
  const format = (head as { format?: unknown } | null)?.format;
  if (format !== cacheFormat) throw new CacheError(`the cache in ${dir} has format ${JSON.stringify(format)}, this version reads format ${cacheFormat}`);
  const { manifest, index } = decodeHead(head, join(dir, manifestFile));
  let laterRows = 0;
  for (const [i, name] of index.entries()) {
    const count = decodeIndex(await readJson(dir, name), join(dir, name), manifest.records);
    if (i > 0) laterRows += count;
  }
  // One string per id: the member lists take the index's (comparisons of the same string are instant).
  for (const state of Object.values(manifest.sources)) {
    manifest.records.shareIds(state.members);
    state.closure = state.members.concat(state.included);
  }
  stored.set(manifest, { index, laterRows });
  for (const [key, state] of Object.entries(manifest.sources)) {
    if (!state.included.every((id) => manifest.records.has(id))) throw damaged(join(dir, manifestFile), `sources.${key}.included`);
  }
  const unsound = checkMembers ? Object.keys(manifest.sources).find((key) => !membersAreRecords(manifest, key)) : undefined;
  if (unsound !== undefined) throw damaged(join(dir, manifestFile), `sources.${unsound}.members`);
  await checkSegments(dir, manifest);
  return manifest;
}

/** A cache file's JSON; `undefined` for a missing manifest, a CacheError for anything else amiss. */
async function readJson(dir: string, name: string, mayBeMissing = false): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(join(dir, name), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (mayBeMissing) return undefined;
    throw new CacheError(`the cache index ${name} in ${dir} is missing`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new CacheError(`the cache ${name === manifestFile ? 'manifest' : 'index'} ${join(dir, name)} is not valid JSON`);
  }
}

/** Whether every member of a source (of every source, without a key) is a record of the cache. */
export function membersAreRecords(manifest: Manifest, key?: string): boolean {
  const states = key === undefined ? Object.values(manifest.sources) : [manifest.sources[key]!];
  return states.every((state) => state.members.every((id) => manifest.records.has(id)));
}

/** A manifest is only as good as its segments: each must exist and be as long as its records need. */
async function checkSegments(dir: string, manifest: Manifest): Promise<void> {
  for (const [name, { end: length }] of manifest.records.segmentUse()) {
    const size = await stat(join(dir, name)).then(
      (info) => (info.isFile() ? info.size : undefined),
      () => undefined,
    );
    if (size === undefined) throw new CacheError(`the cache segment ${name} in ${dir} is missing`);
    if (size < length) throw new CacheError(`the cache segment ${name} in ${dir} is truncated (${size} of at least ${length} bytes)`);
  }
}

/** Reads records of a manifest, segment by segment; a damaged segment is a CacheError. */
export class RecordReader {
  readonly #dir: string;
  readonly #manifest: Manifest;
  readonly #segments = new Map<string, Buffer>();

  constructor(dir: string, manifest: Manifest) {
    this.#dir = dir;
    this.#manifest = manifest;
  }

  async #segment(name: string): Promise<Buffer> {
    let buffer = this.#segments.get(name);
    if (!buffer) {
      try {
        buffer = await readFile(join(this.#dir, name));
      } catch {
        throw new CacheError(`the cache segment ${name} in ${this.#dir} is missing`);
      }
      this.#segments.set(name, buffer);
    }
    return buffer;
  }

  async get(id: string): Promise<StoredRecord | undefined> {
    const entry = this.#manifest.records.get(id);
    if (!entry) return undefined;
    const buffer = await this.#segment(entry.s);
    try {
      const record = JSON.parse(buffer.toString('utf8', entry.o, entry.o + entry.l)) as StoredRecord;
      if (record.id !== id) throw new Error('id mismatch');
      return record;
    } catch {
      throw new CacheError(`the cache segment ${entry.s} in ${this.#dir} is damaged at record ${id}`);
    }
  }

  /** Every live record, grouped by segment to read each file once. */
  async *all(ids: Iterable<string> = this.#manifest.records.keys()): AsyncGenerator<StoredRecord> {
    const bySegment = new Map<string, string[]>();
    for (const id of ids) {
      const entry = this.#manifest.records.get(id);
      if (!entry) continue;
      let list = bySegment.get(entry.s);
      if (!list) bySegment.set(entry.s, (list = []));
      list.push(id);
    }
    for (const [segment, list] of bySegment) {
      for (const id of list) yield (await this.get(id))!;
      this.#segments.delete(segment); // read once, then let it go
    }
  }
}

/**
 * Appends records to a new segment; nothing is visible until the manifest names it. Appends
 * may come from several sources at once: a record's place is fixed when it is appended, lines
 * are written in batches at their own offsets, and a record written in this run can be read
 * back before the segment is finished.
 */
export class SegmentWriter {
  readonly name: string;
  readonly #path: string;
  #handle: Promise<FileHandle> | undefined;
  #offset = 0;
  #chunks: Buffer[] = [];
  #pending = 0;
  #written = 0;
  /** Lines not known to be on disk yet, by offset. */
  readonly #unwritten = new Map<number, Buffer>();
  readonly #writes = new Set<Promise<void>>();

  constructor(dir: string) {
    this.name = `records-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}.jsonl`;
    this.#path = join(dir, this.name);
  }

  get count(): number {
    return this.#written;
  }

  /** Queues a record's line (its JSON and a newline) and returns where it will be; call `flushIfFull` after. */
  appendLine(line: Buffer): { s: string; o: number; l: number } {
    const at = { s: this.name, o: this.#offset, l: line.length - 1 };
    this.#offset += line.length;
    this.#chunks.push(line);
    this.#unwritten.set(at.o, line);
    this.#pending += line.length;
    this.#written++;
    return at;
  }

  /** Writes the queued records once they add up to a megabyte, to bound memory. */
  async flushIfFull(): Promise<void> {
    if (this.#pending > 1 << 20) await this.#flush();
  }

  /** Reads back a record appended in this run. */
  async read(at: { o: number; l: number }): Promise<StoredRecord> {
    let line = this.#unwritten.get(at.o);
    if (!line) {
      line = Buffer.alloc(at.l);
      await (await this.#handle!).read(line, 0, at.l, at.o);
    }
    return JSON.parse(line.toString('utf8', 0, at.l)) as StoredRecord;
  }

  #flush(): Promise<void> {
    if (this.#chunks.length === 0) return Promise.resolve();
    const data = Buffer.concat(this.#chunks);
    const start = this.#offset - data.length;
    this.#chunks = [];
    this.#pending = 0;
    this.#handle ??= open(`${this.#path}.tmp`, 'w');
    const write = this.#handle
      .then((handle) => handle.write(data, 0, data.length, start))
      .then(() => {
        for (let o = start; o < start + data.length; ) {
          const length = this.#unwritten.get(o)!.length;
          this.#unwritten.delete(o);
          o += length;
        }
      });
    this.#writes.add(write);
    void write.then(
      () => this.#writes.delete(write),
      () => this.#writes.delete(write),
    );
    return write;
  }

  /** Writes what is queued and moves the segment into place; returns false when it holds nothing. */
  async finish(): Promise<boolean> {
    await this.#flush();
    await Promise.all(this.#writes);
    if (!this.#handle) return false;
    const handle = await this.#handle;
    this.#handle = undefined;
    await handle.sync();
    await handle.close();
    await rename(`${this.#path}.tmp`, this.#path);
    return true;
  }

  async abort(): Promise<void> {
    await Promise.allSettled(this.#writes);
    const handle = await this.#handle?.catch(() => undefined);
    this.#handle = undefined;
    await handle?.close().catch(() => {});
    await rm(`${this.#path}.tmp`, { force: true });
  }
}

/**
 * Replaces the manifest atomically, then removes the segments and index files it no longer
 * names. With `base`, the manifest the cache held (as read or committed), and what changed since
 * (the records added or replaced, and those removed), only those are written, to a new index
 * file after its own; without, every record is.
 */
export async function commitManifest(dir: string, manifest: Manifest, base?: { manifest: Manifest; rows: Iterable<string>; removed: Iterable<string> }): Promise<void> {
  const { records } = manifest;
  const before = base && stored.get(base.manifest);
  let index: string[] = [];
  let laterRows = 0;
  if (base && before) {
    const rows = [...new Set(base.rows)];
    const removed = [...new Set(base.removed)];
    laterRows = before.laterRows + rows.length + removed.length;
    if (rows.length + removed.length === 0) index = before.index;
    else if (laterRows <= records.size / 4 && before.index.length <= maxLaterFiles) index = [...before.index, await writeIndex(dir, encodeIndex(records, rows, removed))];
  }
  if (index.length === 0) {
    index = [await writeIndex(dir, encodeIndex(records, inMemberOrder(manifest), []))];
    laterRows = 0;
  }
  const tmp = join(dir, `${manifestFile}.${process.pid}.tmp`);
  await writeDurably(tmp, encodeHead(manifest, index));
  await rename(tmp, join(dir, manifestFile));
  await syncFolder(dir); // the new names on disk before the files they replace are removed
  stored.set(manifest, { index, laterRows });
  await removeUnused(dir, manifest, index);
}

/** The ids of the records: the sources' members in the order listed, then the others (see `sameStampsInOrder`). */
function inMemberOrder({ records, sources }: Manifest): string[] {
  const ids = new Set<string>();
  for (const { members } of Object.values(sources)) for (const id of members) if (records.has(id)) ids.add(id);
  for (const id of records.keys()) ids.add(id);
  return [...ids];
}

/** Writes a file and flushes it to disk, so a name given to it later never names an empty file after a power loss. */
async function writeDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch {
    // Not every platform can flush a folder (Windows); the files themselves are flushed.
  } finally {
    await handle.close();
  }
}

async function writeIndex(dir: string, text: string): Promise<string> {
  const name = `index-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}.json`;
  await writeDurably(join(dir, `${name}.tmp`), text);
  await rename(join(dir, `${name}.tmp`), join(dir, name));
  return name;
}

/** Removes the segments and index files a cache does not name (all of them without a cache). */
async function removeUnused(dir: string, manifest: Manifest | undefined, index: string[] = []): Promise<void> {
  const live = new Set<string>([...index, ...(manifest?.records.segmentUse().keys() ?? [])]);
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if ((name.startsWith('records-') || name.startsWith('index-')) && !live.has(name)) await rm(join(dir, name), { force: true });
  }
}

/** Removes a cache: manifest first (so what remains is no cache), then its segments and index files. */
export async function clearCache(dir: string): Promise<void> {
  await rm(join(dir, manifestFile), { force: true });
  await removeUnused(dir, undefined);
}

/**
 * Moves the records of segments that are mostly dead (records replaced or dropped since they
 * were written) to `writer`, as they are stored, so the old segments are removed after the next
 * commit and the cache stays about as large as its records. Returns the entries it moved, by id.
 */
export async function compactSegments(dir: string, records: RecordTable, writer: SegmentWriter, minLiveRatio = 0.5): Promise<Map<string, RecordEntry>> {
  const dead = new Map<string, string[]>();
  for (const [name, { bytes }] of records.segmentUse()) {
    if (name === writer.name) continue;
    const size = (await stat(join(dir, name)).catch(() => undefined))?.size;
    if (size === undefined) throw new CacheError(`the cache segment ${name} in ${dir} is missing`);
    if (bytes < size * minLiveRatio) dead.set(name, []);
  }
  if (dead.size > 0) records.eachLocation((id, name) => dead.get(name)?.push(id));
  const moved = new Map<string, RecordEntry>();
  for (const [name, ids] of dead) {
    const handle = await open(join(dir, name), 'r').catch(() => {
      throw new CacheError(`the cache segment ${name} in ${dir} cannot be read`);
    });
    try {
      // Read in windows of a few megabytes, in the order the records are stored.
      let window = { start: 0, bytes: Buffer.alloc(0) };
      ids.sort((a, b) => records.get(a)!.o - records.get(b)!.o);
      for (const id of ids) {
        const entry = records.get(id)!;
        if (entry.o < window.start || entry.o + entry.l > window.start + window.bytes.length) {
          const bytes = Buffer.alloc(Math.max(4 << 20, entry.l));
          const { bytesRead } = await handle.read(bytes, 0, bytes.length, entry.o);
          window = { start: entry.o, bytes: bytes.subarray(0, bytesRead) };
          if (bytesRead < entry.l) throw new CacheError(`the cache segment ${name} in ${dir} is truncated`);
        }
        const line = Buffer.alloc(entry.l + 1, 0x0a);
        window.bytes.copy(line, 0, entry.o - window.start, entry.o - window.start + entry.l);
        moved.set(id, { ...entry, ...writer.appendLine(line) });
        await writer.flushIfFull();
      }
    } finally {
      await handle.close();
    }
  }
  return moved;
}

/**
 * Takes the cache's lock, so two syncs never write at once. A lock left by a process that no
 * longer runs is taken over; a live one is waited for up to `waitMs`.
 */
export async function acquireLock(dir: string, waitMs = 60_000, warn: (message: string) => void = () => {}): Promise<() => Promise<void>> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, lockFile);
  const started = Date.now();
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }));
      await handle.close();
      return () => rm(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile
      throw error;
    }
    let holder: { pid?: number; host?: string } | undefined;
    try {
      holder = JSON.parse(text) as { pid?: number; host?: string };
    } catch {
      holder = undefined;
    }
    // A lock without a readable holder is being written by a sync that just took it, unless it is old.
    const age = holder ? 0 : await stat(path).then((info) => Date.now() - info.mtimeMs, () => undefined);
    if (age === undefined) continue;
    const alive = holder ? holder.pid !== undefined && holder.host === hostname() && isAlive(holder.pid) : age < unreadableLockMs;
    if (!alive) {
      warn(`Taking over a stale cache lock in ${dir}${holder?.pid ? ` (process ${holder.pid} is gone)` : ''}`);
      await rm(path, { force: true });
      continue;
    }
    if (Date.now() - started > waitMs) throw new CacheError(`Another sync (process ${holder?.pid ?? 'unknown'}) holds the cache lock ${path}; waited ${Math.round(waitMs / 1000)} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
