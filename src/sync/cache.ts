import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { Locales } from './locales.ts';
import type { Model, StoredRecord } from './records.ts';

/**
 * The local cache: records in append-only JSON-lines segments, and a manifest that says where
 * each live record is. A sync writes new and changed records to a new segment, then replaces
 * the manifest (temporary file renamed, manifest last), so a crash leaves the last good cache.
 * Segments nothing points to any more are removed; mostly-dead ones are compacted.
 */

export const cacheFormat = 2;

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
  /** References by field. */
  f: Record<string, string[]>;
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
  /** Member id → dependency digest (its own digest and those of the records it includes). */
  dependencyDigests: Record<string, string>;
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
  records: Record<string, RecordEntry>;
};

/**
 * The manifest on disk: the head as it is, and the bulk (a hundred thousand records make tens of
 * megabytes) in arrays, which JSON parses and writes several times faster than objects:
 * - `segments`: the segment names;
 * - `records`: `[id, segment, offset, length, updatedAt, revision, contentType, digest, references, 1 when partial]`,
 *   references as `[[field, target id, …], …]`;
 * - `sources`: each source's state, with `digests` the dependency digests in the order of `members`.
 * A record row names no other row by position, so the row of an entry that did not change is
 * written again as it was read.
 */
const storedSchema = headSchema.extend({
  segments: z.array(z.string()),
  records: z.custom<unknown[]>(Array.isArray, 'expected an array'),
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
      closure: z.custom<unknown[]>(Array.isArray, 'expected an array'),
      digests: z.custom<unknown[]>(Array.isArray, 'expected an array'),
    }),
  ),
});

type RecordRow = [string, number, number, number, string, number, string, string, string[][], 1?];

/** The row each entry was read from (its segment number is set again when written). */
const rows = new WeakMap<RecordEntry, RecordRow>();

/** The manifest as stored (see `storedSchema`). */
export function encodeManifest(manifest: Manifest): string {
  const { records, sources, ...head } = manifest;
  const segments: string[] = [];
  const segmentIndex = new Map<string, number>();
  const stored: RecordRow[] = [];
  for (const id in records) {
    const entry = records[id]!;
    let segment = segmentIndex.get(entry.s);
    if (segment === undefined) {
      segmentIndex.set(entry.s, (segment = segments.length));
      segments.push(entry.s);
    }
    let row = rows.get(entry);
    if (row) row[1] = segment;
    else {
      const references: string[][] = [];
      for (const field in entry.f) references.push([field, ...entry.f[field]!]);
      row = [id, segment, entry.o, entry.l, entry.u, entry.r, entry.t, entry.d, references];
      if (entry.p) row.push(1);
      rows.set(entry, row);
    }
    stored.push(row);
  }
  const storedSources: Record<string, object> = {};
  for (const [key, { members, dependencyDigests, ...state }] of Object.entries(sources)) {
    storedSources[key] = { ...state, members, digests: members.map((id) => dependencyDigests[id] ?? null) };
  }
  return JSON.stringify({ ...head, segments, records: stored, sources: storedSources });
}

/** Reads a stored manifest back; a CacheError names the first damaged place. */
export function decodeManifest(json: unknown, file: string): Manifest {
  const parsed = storedSchema.safeParse(json);
  if (!parsed.success) throw damaged(file, parsed.error.issues[0]!.path.join('.'));
  const { segments, records: storedRecords, sources: storedSources, ...head } = parsed.data;
  const records: Record<string, RecordEntry> = {};
  for (let i = 0; i < storedRecords.length; i++) {
    const row = storedRecords[i];
    const entry = Array.isArray(row) ? recordEntryOf(row, segments) : undefined;
    if (!entry) throw damaged(file, `records.${i}`);
    records[(row as RecordRow)[0]] = entry;
    rows.set(entry, row as RecordRow);
  }
  const sources: Record<string, SourceState> = {};
  for (const [key, { members, closure, digests, ...state }] of Object.entries(storedSources)) {
    if (!members.every(isString)) throw damaged(file, `sources.${key}.members`);
    if (!closure.every(isString)) throw damaged(file, `sources.${key}.closure`);
    if (digests.length !== members.length || !digests.every((d) => d === null || typeof d === 'string')) throw damaged(file, `sources.${key}.digests`);
    const dependencyDigests: Record<string, string> = {};
    members.forEach((id, i) => {
      if (digests[i] !== null) dependencyDigests[id] = digests[i] as string;
    });
    sources[key] = { ...state, members, closure, dependencyDigests };
  }
  return { ...head, sources, records } as Manifest;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const damaged = (file: string, at: string) => new CacheError(`the cache manifest ${file} is damaged at ${at}`);

/** A stored record row as an entry; `undefined` when it is not what `encodeManifest` writes. */
function recordEntryOf(row: unknown[], segments: string[]): RecordEntry | undefined {
  const [id, s, o, l, u, r, t, d, references, p] = row;
  if (typeof id !== 'string' || (row.length !== 9 && !(row.length === 10 && p === 1))) return undefined;
  if (!Number.isInteger(s) || segments[s as number] === undefined) return undefined;
  if (!Number.isSafeInteger(o) || (o as number) < 0 || !Number.isSafeInteger(l) || (l as number) <= 0) return undefined;
  if (typeof u !== 'string' || typeof r !== 'number' || !Number.isFinite(r) || typeof t !== 'string' || typeof d !== 'string' || !Array.isArray(references)) return undefined;
  const f: Record<string, string[]> = {};
  for (const reference of references as unknown[]) {
    if (!Array.isArray(reference) || reference.length < 2 || !reference.every(isString)) return undefined;
    f[reference[0] as string] = reference.slice(1);
  }
  const entry: RecordEntry = { s: segments[s as number]!, o: o as number, l: l as number, u, r, t, d, f };
  if (p === 1) entry.p = true;
  return entry;
}

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

/** Reads the manifest; `undefined` when there is none, a CacheError when it is corrupt. */
export async function readManifest(dir: string): Promise<Manifest | undefined> {
  let text: string;
  try {
    text = await readFile(join(dir, manifestFile), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new CacheError(`the cache manifest ${join(dir, manifestFile)} is not valid JSON`);
  }
  const format = (json as { format?: unknown } | null)?.format;
  if (format !== cacheFormat) throw new CacheError(`the cache in ${dir} has format ${JSON.stringify(format)}, this version reads format ${cacheFormat}`);
  const manifest = decodeManifest(json, join(dir, manifestFile));
  await checkSegments(dir, manifest);
  return manifest;
}

/** A manifest is only as good as its segments: each must exist and be as long as its records need. */
async function checkSegments(dir: string, manifest: Manifest): Promise<void> {
  const needed = new Map<string, number>();
  for (const entry of Object.values(manifest.records)) needed.set(entry.s, Math.max(needed.get(entry.s) ?? 0, entry.o + entry.l));
  for (const [name, length] of needed) {
    const size = await stat(join(dir, name)).then(
      (info) => info.size,
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
    const entry = this.#manifest.records[id];
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
  async *all(ids: Iterable<string> = Object.keys(this.#manifest.records)): AsyncGenerator<StoredRecord> {
    const bySegment = new Map<string, string[]>();
    for (const id of ids) {
      const entry = this.#manifest.records[id];
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

  /** Queues a record and returns where it will be; call `flushIfFull` after. */
  append(record: StoredRecord): { s: string; o: number; l: number } {
    const line = Buffer.from(`${JSON.stringify(record)}\n`);
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

/** Replaces the manifest atomically, then removes segments it no longer names. */
export async function commitManifest(dir: string, manifest: Manifest): Promise<void> {
  const tmp = join(dir, `${manifestFile}.${process.pid}.tmp`);
  await writeFile(tmp, encodeManifest(manifest));
  await rename(tmp, join(dir, manifestFile));
  await removeUnusedSegments(dir, manifest);
}

async function removeUnusedSegments(dir: string, manifest: Manifest | undefined): Promise<void> {
  const live = new Set(Object.values(manifest?.records ?? {}).map((e) => e.s));
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (name.startsWith('records-') && !live.has(name)) await rm(join(dir, name), { force: true });
  }
}

/** Removes a cache: manifest first (so what remains is no cache), then its segments. */
export async function clearCache(dir: string): Promise<void> {
  await rm(join(dir, manifestFile), { force: true });
  await removeUnusedSegments(dir, undefined);
}

/** Bytes of segments a manifest still needs vs bytes on disk, for compaction. */
export function liveRatio(manifest: Manifest, segmentSizes: Map<string, number>): number {
  let live = 0;
  for (const entry of Object.values(manifest.records)) live += entry.l + 1;
  let total = 0;
  for (const size of segmentSizes.values()) total += size;
  return total === 0 ? 1 : live / total;
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
