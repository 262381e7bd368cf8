import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { createClient, type ReadApiClient } from '../api/client.ts';
import { NetworkError, RateLimitedError, ServerError, TimeoutError } from '../api/errors.ts';
import type { FilterEntry, ListOptions } from '../api/query.ts';
import type { EtagStore } from '../api/transport.ts';
import type { ApiRecord, ListAnswer } from '../wire/schemas.ts';
import {
  acquireLock,
  CacheError,
  cacheFormat,
  commitManifest,
  compactSegments,
  membersAreRecords,
  type DanglingReference,
  type Manifest,
  type RecordEntry,
  readManifest,
  RecordReader,
  RecordTable,
  SegmentWriter,
  type SourceState,
} from './cache.ts';
import { type Changeset, emptyChanges, isEmptyChangeset, type SourceChanges } from './changeset.ts';
import { type Closure, includeClosure, memberClosures, type Node, reachersOf } from './closure.ts';
import { hash, parseSyncConfig, requestOptions, type Source, sourcesOf, type SyncConfig, type SyncConfigInput } from './config.ts';
import type { Locales } from './locales.ts';
import { digestOf, embeddedIn, isLocaleMap, mergePartial, type Model, normalizeRecord, referencePairs, referencesOf, type StoredRecord } from './records.ts';

/**
 * The sync: fetch what the sources need with every locale, normalise it into records, and
 * commit them to the cache. Later syncs list member ids (small answers) to catch deletions and
 * membership changes, fetch only documents changed since the last sync, re-check aliases with
 * conditional GETs, refresh included records that changed, and drop records nothing needs.
 */

export const packageVersion: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

export interface SyncLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface SyncResult {
  changeset: Changeset;
  cacheDir: string;
  manifest: Manifest;
  /** Reads the committed records. */
  reader: RecordReader;
  /** Sources served from the cache because the server failed (`onError: 'use-cache'`). */
  stale: string[];
  /** References whose target the server does not have. */
  dangling: Manifest['dangling'];
  warnings: string[];
  stats: { requests: number; notModified: number; bytes: number; ms: number; written: number };
}

/** The sync could not finish: the server failed and no cache may be used, or offline without a cache. */
export class SyncError extends Error {
  readonly code: 'offline_without_cache' | 'server_failed';
  constructor(code: SyncError['code'], message: string, cause?: unknown) {
    super(message);
    this.name = 'SyncError';
    this.code = code;
    if (cause) Object.defineProperty(this, 'cause', { value: cause, enumerable: false });
  }
}

/** Where the cache lives when no folder is configured: inside Astro's default cache folder. */
export const defaultCacheDir = (root = process.cwd()) => resolve(root, 'node_modules/.astro/comfortable');

const listing = 'meta(id,updatedAt,revision)';
const localeLike = /^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$/;
const transient = (error: unknown) =>
  error instanceof NetworkError || error instanceof TimeoutError || error instanceof ServerError || error instanceof RateLimitedError;

/** Adds a condition to every OR branch of a filter list. */
export function andEveryBranch(filters: FilterEntry[] | undefined, condition: Record<string, Record<string, unknown>>): FilterEntry[] {
  const only = condition as FilterEntry;
  return [only, ...(filters ?? []).flatMap((entry) => ('or' in entry ? [entry, { and: condition } as FilterEntry] : [entry]))];
}

/**
 * Runs every task to its end, then throws the first failure: a task left running after a
 * failure could still write to the run's segment after the run is aborted.
 */
async function settleAll<T>(tasks: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(tasks);
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((id, i) => id === b[i]);

/** The records of a closure that are not members. */
function includedIn(closure: Iterable<string>, members: readonly string[]): string[] {
  const isMember = new Set(members);
  return [...closure].filter((id) => !isMember.has(id));
}

/** References once each, in order of document and field. */
function uniqueReferences(references: DanglingReference[]): DanglingReference[] {
  const unique = new Map(references.map((d) => [`${d.from}.${d.field}.${d.id}`, d]));
  return [...unique.values()].sort((a, b) => (a.from + a.field < b.from + b.field ? -1 : 1));
}

/** Hints for one sync run. */
export interface SyncHints {
  /** Ids of documents and assets to fetch again even when their `updatedAt` and revision look unchanged (a webhook's changed ids). */
  refetch?: readonly string[];
}

/** Runs one sync; see `SyncConfig` for the options. */
export async function sync(input: SyncConfigInput | SyncConfig, logger: SyncLogger = consoleLogger, hints: SyncHints = {}): Promise<SyncResult> {
  const config = parseSyncConfig(input);
  const dir = resolve(config.cacheDir ?? defaultCacheDir());
  const warnings: string[] = [];
  const warn = (message: string) => {
    warnings.push(message);
    logger.warn(message);
  };
  const release = await acquireLock(dir, 120_000, warn);
  try {
    const fingerprint = hash({ baseUrl: config.baseUrl.replace(/\/+$/, ''), repository: config.repository, package: packageVersion, format: cacheFormat });
    let previous: Manifest | undefined;
    try {
      // A sync looks each member up as it lists them: only the cache served as it is needs the check.
      previous = await readManifest(dir, { checkMembers: config.mode === 'offline' });
    } catch (error) {
      if (!(error instanceof CacheError)) throw error;
      warn(`${error.message}; rebuilding the cache`);
    }
    if (previous && previous.fingerprint !== fingerprint) {
      warn(`The cache in ${dir} was made for ${previous.baseUrl} / ${previous.repository} by ${previous.package}; rebuilding it`);
      previous = undefined;
    }
    if (config.mode === 'offline') {
      if (!previous) throw new SyncError('offline_without_cache', `Offline mode needs a cache, and there is none in ${dir}: run a sync online first (mode "incremental")`);
      logger.info(`Offline: using the cache of ${previous.lastSync} (${previous.records.size} records)`);
      return cachedResult(dir, previous, [], warnings);
    }
    // Fresh ignores what is cached, but its changeset still compares with the last committed content.
    const run = new SyncRun(config, dir, config.mode === 'fresh' ? undefined : previous, previous, fingerprint, logger, warn, hints.refetch ?? []);
    let result: SyncResult;
    try {
      result = { ...(await run.execute()), warnings };
    } catch (error) {
      await run.abort(); // its segment removed, the cache's records as they were before the run
      if (transient(error) && config.onError === 'use-cache' && previous && membersAreRecords(previous)) {
        const stale = Object.keys(previous.sources);
        warn(`The server failed (${(error as Error).message}); using the cached content of ${previous.lastSync}, stale: ${stale.join(', ')}`);
        return cachedResult(dir, previous, stale, warnings);
      }
      if (transient(error)) {
        throw new SyncError('server_failed', `Sync of ${config.repository} failed: ${(error as Error).message}${previous ? ' (the cache was left as it was)' : ''}`, error);
      }
      throw error;
    }
    // Committed: what the hook throws is its own failure, not the server's (nothing to fall back on).
    if (config.onSync && !result.changeset.empty) await config.onSync(result.changeset);
    return result;
  } finally {
    await release();
  }
}

function cachedResult(dir: string, manifest: Manifest, stale: string[], warnings: string[]): SyncResult {
  const changeset: Changeset = { sources: Object.fromEntries(Object.keys(manifest.sources).map((k) => [k, emptyChanges()])), records: emptyChanges(), empty: true };
  return {
    changeset,
    cacheDir: dir,
    manifest,
    reader: new RecordReader(dir, manifest),
    stale,
    dangling: manifest.dangling,
    warnings,
    stats: { requests: 0, notModified: 0, bytes: 0, ms: 0, written: 0 },
  };
}

export const consoleLogger: SyncLogger = {
  info: (message) => console.log(message),
  warn: (message) => console.warn(`warning: ${message}`),
};

/** ETags of alias and repository answers, with their bodies, kept in the manifest. */
class ManifestEtags implements EtagStore {
  readonly entries: Record<string, { etag: string; body: string }>;
  constructor(initial: Record<string, { etag: string; body: string }> = {}) {
    this.entries = { ...initial };
  }
  get(key: string) {
    return this.entries[key];
  }
  set(key: string, entry: { etag: string; body: string }) {
    if (/\/alias\/|^GET [^?]*\/v1\/[^/?]+(\?|$)/.test(key)) this.entries[key] = entry;
  }
}

class SyncRun {
  readonly #config: SyncConfig;
  readonly #dir: string;
  readonly #previous: Manifest | undefined;
  /** The committed cache the changeset compares with. */
  readonly #baseline: Manifest | undefined;
  /** Ids to fetch again whatever their stamps say. */
  readonly #refetch: ReadonlySet<string>;
  readonly #fingerprint: string;
  readonly #logger: SyncLogger;
  readonly #warn: (message: string) => void;
  readonly #client: ReadApiClient;
  readonly #etags: ManifestEtags;
  readonly #reader: RecordReader | undefined;
  readonly #writer: SegmentWriter;
  /**
   * The records as this run has them. An incremental run changes the cache's own map in place
   * (a copy of 100,000 entries costs more than the rest of a small sync's bookkeeping), keeping
   * in `#originals` what each record it touched was before, to compare and to roll back.
   */
  readonly #entries: RecordTable;
  readonly #originals = new Map<string, RecordEntry | undefined>();
  readonly #inPlace: boolean;
  readonly #model: Model;
  readonly #fresh = new Set<string>();
  /** Records known to be current in this run without being fetched: re-checked with their stamps (listed members are too). */
  readonly #checked = new Set<string>();
  /** Bumped whenever records or the model change, so a closure computed before stays valid until then. */
  #version = 0;
  /** Whether a record was added or dropped, or changed its content type or references, in this run. */
  #linksChanged = false;
  /** Records replaced in this run by a version linked the same way. */
  readonly #replaced = new Set<string>();
  readonly #closures = new Map<string, { version: number; members: readonly string[]; closure: Closure }>();
  readonly #localeCounts = new Map<string, number>();
  #locales: Locales | undefined;
  #localeKeys: { has(key: string): boolean } = { has: (key) => localeLike.test(key) };
  readonly #stats = { requests: 0, notModified: 0, bytes: 0, ms: 0, written: 0 };
  readonly #started = Date.now();

  constructor(config: SyncConfig, dir: string, previous: Manifest | undefined, baseline: Manifest | undefined, fingerprint: string, logger: SyncLogger, warn: (m: string) => void, refetch: readonly string[] = []) {
    this.#refetch = new Set(refetch);
    this.#config = config;
    this.#dir = dir;
    this.#previous = previous;
    this.#baseline = baseline;
    this.#fingerprint = fingerprint;
    this.#logger = logger;
    this.#warn = warn;
    this.#etags = new ManifestEtags(previous?.etags);
    this.#client = createClient({
      baseUrl: config.baseUrl,
      repository: config.repository,
      apiKey: config.apiKey,
      concurrency: config.concurrency,
      etags: this.#etags,
      onResponse: (event) => {
        this.#stats.requests++;
        this.#stats.bytes += event.bytes;
        if (event.notModified) this.#stats.notModified++;
      },
    });
    this.#reader = previous && new RecordReader(dir, previous);
    this.#writer = new SegmentWriter(dir);
    this.#inPlace = previous !== undefined && previous === baseline;
    this.#entries = this.#inPlace ? previous!.records : new RecordTable();
    this.#model = structuredClone(previous?.model ?? {});
  }

  /** Ends a run that did not commit: its segment is removed and the cache's records are as they were. */
  async abort(): Promise<void> {
    this.#rollBack();
    await this.#writer.abort();
  }

  #rollBack(): void {
    if (!this.#inPlace) return;
    for (const [id, entry] of this.#originals) {
      if (entry) this.#entries.set(id, entry);
      else this.#entries.delete(id);
    }
    this.#originals.clear();
  }

  /** Sets (or, without an entry, removes) a record; true when there was one. */
  #put(id: string, entry: RecordEntry | undefined): boolean {
    const had = this.#entries.get(id);
    if (this.#inPlace && !this.#originals.has(id)) this.#originals.set(id, had);
    if (entry) this.#entries.set(id, entry);
    else this.#entries.delete(id);
    return had !== undefined;
  }

  /** A record as the committed cache (the changeset's baseline) has it. */
  #baselineEntry(id: string): RecordEntry | undefined {
    if (!this.#inPlace) return this.#baseline?.records.get(id);
    return this.#originals.has(id) ? this.#originals.get(id) : this.#entries.get(id);
  }

  /** Records of the baseline this run changed (replaced or added) and removed, by id. */
  #changedSinceBaseline(): { rows: string[]; removed: string[] } {
    const rows: string[] = [];
    const removed: string[] = [];
    if (this.#inPlace) {
      for (const [id, before] of this.#originals) {
        const now = this.#entries.get(id);
        if (now && now !== before) rows.push(id);
        else if (!now && before) removed.push(id);
      }
      return { rows, removed };
    }
    for (const [id, entry] of this.#entries) if (entry !== this.#baseline?.records.get(id)) rows.push(id);
    for (const id of this.#baseline?.records.keys() ?? []) if (!this.#entries.has(id)) removed.push(id);
    return { rows, removed };
  }

  async execute(): Promise<SyncResult> {
    const config = this.#config;
    const sources = sourcesOf(config);
    const info = await this.#client.repository();
    if (info.meta.defaultLocale && info.meta.locales?.length) {
      this.#locales = { defaultLocale: info.meta.defaultLocale, locales: info.meta.locales.map((l) => (l.fallback ? { key: l.key, fallback: l.fallback } : { key: l.key })), source: 'repository' };
      const keys = new Set(this.#locales.locales.map((l) => l.key));
      this.#localeKeys = keys;
    }

    const syncedAt = new Date().toISOString();
    const states = new Map<string, { members: string[]; masked: boolean }>();
    await settleAll(
      sources.map(async (source) => {
        const state = this.#previous?.sources[source.key];
        const incremental = state !== undefined && state.fingerprint === source.fingerprint;
        const members = source.kind === 'alias' ? await this.#alias(source) : incremental ? await this.#listIncremental(source, state) : await this.#listFull(source);
        states.set(source.key, { members, masked: source.options.fields !== undefined });
      }),
    );

    // A webhook may name records whose stamps did not move (a snapshot edited by hand), or an asset
    // no document fetched in this run embeds: fetch them anyway (assets one by one, as the API has it).
    const hinted = [...this.#refetch].filter((id) => this.#entries.has(id) && !this.#fresh.has(id));
    const isAsset = (id: string) => this.#entries.typeOf(id) === '_asset';
    if (hinted.some((id) => !isAsset(id))) await this.#fetchByIds(hinted.filter((id) => !isAsset(id)));
    // (An asset a refetched document embeds came with it.)
    await settleAll(hinted.filter((id) => isAsset(id) && !this.#fresh.has(id)).map((id) => this.#fetchAsset(id)));
    const dangling = await this.#completeClosures(sources, states);

    if (!this.#locales) {
      // A sync that downloads little sees few locales: start from those guessed before.
      const before = this.#previous?.locales.source === 'data' ? this.#previous.locales : undefined;
      const seen = [...this.#localeCounts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([key]) => key);
      const keys = [...new Set([...(before?.locales.map((l) => l.key) ?? []), ...seen])];
      this.#locales = { defaultLocale: before?.defaultLocale ?? keys[0] ?? 'en_US', locales: keys.map((key) => ({ key })), source: 'data' };
      this.#warn(`The server did not list the repository's locales; using the locale keys seen in the data (${keys.join(', ') || 'none'}), default ${this.#locales.defaultLocale}, without fallbacks`);
    }
    return this.#commit(sources, states, dangling, syncedAt);
  }

  /** Normalises an answered record (and records embedded in it) into the pending cache. */
  async #accept(answer: ApiRecord, masked: boolean): Promise<void> {
    this.#version++;
    const embedded: ApiRecord[] = [];
    if (!this.#locales) this.#countLocales(answer);
    let record = normalizeRecord(answer, this.#localeKeys, this.#model, (r) => embedded.push(r));
    let partial = false;
    if (masked) ({ record, partial } = await this.#mergeMasked(record));
    // From here to the entry's update nothing awaits, so concurrent sources cannot interleave.
    const json = JSON.stringify(record);
    const digest = digestOf(record, json);
    const existing = this.#entries.get(record.id);
    this.#fresh.add(record.id);
    if (!existing || existing.d !== digest || existing.p !== (partial || undefined)) {
      const at = this.#writer.appendLine(Buffer.from(`${json}\n`));
      this.#stats.written++;
      const entry: RecordEntry = { ...at, u: record.updatedAt, r: record.revision, t: record.contentType, d: digest, f: referencePairs(referencesOf(record)), ...(partial ? { p: true as const } : {}) };
      if (!existing || existing.t !== entry.t || !sameList(existing.f, entry.f)) this.#linksChanged = true;
      else this.#replaced.add(record.id);
      this.#put(record.id, entry);
      this.#version++;
      await this.#writer.flushIfFull();
    }
    for (const child of embedded) {
      // An asset embedded with the stamps of the version cached or taken before is that version (as an
      // included record is), unless a hint names it and this run has not taken it yet.
      if (this.#sameStamps(child) && (this.#fresh.has(child.meta.id) || !this.#refetch.has(child.meta.id))) continue;
      await this.#accept(child, false);
    }
  }

  /**
   * A masked answer holds some fields only: the others are kept from the stored version when it
   * is of the same revision (an older one would mix old values in). Unless that version is
   * complete, the result is partial, and is fetched in full when a source without a mask needs it.
   */
  async #mergeMasked(answer: StoredRecord): Promise<{ record: StoredRecord; partial: boolean }> {
    for (;;) {
      const entry = this.#entries.get(answer.id);
      const stored = await this.#stored(answer.id);
      if (this.#entries.get(answer.id) !== entry) continue; // replaced meanwhile: merge onto the newer version
      const base = stored && stored.updatedAt === answer.updatedAt && stored.revision === answer.revision ? stored : undefined;
      return { record: mergePartial(base, answer), partial: !base || entry?.p === true };
    }
  }

  #countLocales(answer: ApiRecord): void {
    for (const value of Object.values(answer.fields)) {
      if (isLocaleMap(value, this.#localeKeys)) for (const k of Object.keys(value)) this.#localeCounts.set(k, (this.#localeCounts.get(k) ?? 0) + 1);
    }
  }

  async #stored(id: string): Promise<StoredRecord | undefined> {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    if (entry.s === this.#writer.name) return this.#writer.read(entry);
    return this.#reader?.get(id);
  }

  async #acceptPage(page: { data: ApiRecord[]; includes?: Record<string, ApiRecord[]> | undefined }, masked: boolean): Promise<string[]> {
    for (const record of page.data) await this.#accept(record, masked);
    for (const group of Object.values(page.includes ?? {})) {
      for (const record of group) {
        // An included record with the stamps of the cached (whole) version is that version: it counts as checked,
        // and only what it embeds with other stamps than the cache's is taken.
        if (this.#sameStamps(record)) {
          this.#checked.add(record.meta.id);
          for (const child of embeddedIn(record, this.#localeKeys)) if (!this.#sameStamps(child)) await this.#accept(child, false);
        } else await this.#accept(record, masked);
      }
    }
    return page.data.map((record) => record.meta.id);
  }

  #sameStamps(answer: ApiRecord): boolean {
    const cached = this.#entries.get(answer.meta.id);
    return cached !== undefined && !cached.p && cached.u === (answer.meta.updatedAt ?? '') && cached.r === (answer.meta.revision ?? 0);
  }

  #listSource(source: Source): 'documents' | { collection: string } {
    return source.kind === 'collection' ? { collection: source.name } : 'documents';
  }

  #progress(source: Source, done: number, total: number): void {
    if (total > this.#config.pageSize) this.#logger.info(`${source.key}: ${done.toLocaleString('en')} of ${total.toLocaleString('en')} documents`);
  }

  async #listFull(source: Source): Promise<string[]> {
    const members: string[] = [];
    // Full pages are megabytes each: three in flight keep the server busy and the memory bounded.
    for await (const page of this.#client.pages(this.#listSource(source), { ...requestOptions(source), pageSize: this.#config.pageSize, lookahead: 3 })) {
      members.push(...(await this.#acceptPage(page, source.options.fields !== undefined)));
      this.#progress(source, members.length, page.meta.total);
    }
    return members;
  }

  /**
   * Lists the members' stamps; from the first stamp that differs from the cache's, fetches the
   * documents changed since the last sync (less the safety margin) while the listing goes on.
   * Listed documents that still differ after that (a clock off by more than the margin) are
   * fetched by id.
   */
  async #listIncremental(source: Source, state: SourceState): Promise<string[]> {
    const options = requestOptions(source);
    const { includes: _includes, embedAssets: _embed, fields: _fields, ...selection } = options;
    let changedSince: Promise<void> | undefined;
    const fetchChangedSince = async () => {
      const since = new Date(Date.parse(state.syncedAt) - this.#config.safetyMarginMs).toISOString();
      const filters = andEveryBranch(options.filters as FilterEntry[] | undefined, { '*.meta.updatedAt': { greaterThanEqual: since } });
      // Without includes: what the changed documents include is mostly cached, and what is not is
      // found missing by the closures and fetched then, like any included record that changed.
      for await (const page of this.#client.pages(this.#listSource(source), { ...options, includes: 0, filters, pageSize: this.#config.pageSize })) {
        await this.#acceptPage(page, source.options.fields !== undefined);
      }
    };
    const members: string[] = [];
    const changed: string[] = [];
    const sameStamps = this.#entries.sameStampsInOrder();
    try {
      for await (const page of this.#client.pages(this.#listSource(source), { ...selection, fields: listing, pageSize: this.#config.pageSize })) {
        const stamps = page.data as unknown as { meta: { id: string; updatedAt?: string; revision?: number } }[];
        for (let i = 0; i < stamps.length; i++) {
          const { id, updatedAt, revision } = stamps[i]!.meta;
          const same = sameStamps(id, updatedAt, revision);
          members.push(same ?? id);
          if (same === undefined) changed.push(id);
        }
        if (changed.length > 0 && !changedSince) {
          changedSince = fetchChangedSince();
          changedSince.catch(() => {}); // handled below; a failure meanwhile is not an unhandled rejection
        }
      }
    } finally {
      await changedSince?.catch(() => {}); // never left running
    }
    if (changedSince) {
      await changedSince;
      const leftovers = changed.filter((id) => !this.#fresh.has(id));
      const found = await this.#fetchByIds(leftovers, options);
      // A member listed but gone by the time it was fetched: the cache's closures do not hold.
      if (leftovers.some((id) => !found.has(id) && !this.#entries.has(id))) this.#linksChanged = true;
      this.#logger.info(`${source.key}: ${members.length} members, ${changed.length} changed`);
    }
    return members;
  }

  async #alias(source: Source): Promise<string[]> {
    const { includes, embedAssets, fields, locale } = requestOptions(source);
    const answer = await this.#client.alias(source.name, { includes, embedAssets, fields, locale } as ListOptions);
    await this.#acceptPage({ data: [answer as ApiRecord], includes: (answer as { includes?: Record<string, ApiRecord[]> }).includes }, fields !== undefined);
    return [(answer as ApiRecord).meta.id];
  }

  /** Fetches an asset (`/assets/<id>`, every locale); false when the server does not have it. */
  async #fetchAsset(id: string): Promise<boolean> {
    try {
      await this.#accept((await this.#client.asset(id, { locale: 'all' })) as ApiRecord, false);
      return true;
    } catch (error) {
      if ((error as { code?: string }).code !== 'not_found') throw error;
      return false;
    }
  }

  /** Fetches documents by id (with their includes), in chunks; returns the ids the server had. */
  async #fetchByIds(ids: string[], options: ListOptions = { locale: 'all', embedAssets: true }): Promise<Set<string>> {
    const found = new Set<string>();
    const chunks: string[][] = [];
    for (let i = 0; i < ids.length; i += this.#config.pageSize) chunks.push(ids.slice(i, i + this.#config.pageSize));
    await settleAll(
      chunks.map(async (chunk) => {
        const page = (await this.#client.documents({ ...options, locale: 'all', filters: [{ '*.meta.id': { in: chunk } }], limit: chunk.length, offset: 0 })) as ListAnswer;
        for (const id of await this.#acceptPage(page, options.fields !== undefined)) found.add(id);
      }),
    );
    return found;
  }

  #node = (id: string): Node | undefined => {
    const entry = this.#entries.get(id);
    return entry && { contentType: entry.t, refs: entry.f };
  };

  #isAsset = (target: string, field: string, from: Node): boolean =>
    this.#model[from.contentType]?.[field]?.kind === 'asset' || this.#entries.typeOf(target) === '_asset';

  #drop(id: string): void {
    if (this.#put(id, undefined)) this.#linksChanged = true;
  }

  /**
   * A source's closure; computed again only when records or the model changed since (callers
   * only read it). While no record was added, dropped or linked differently in this run, the
   * source's closure of the cache still holds, and so do its dangling references.
   */
  #closure(source: Source, members: readonly string[]): Closure {
    const cached = this.#closures.get(source.key);
    if (cached && cached.version === this.#version && cached.members === members) return cached.closure;
    const closure = this.#keptClosure(source, members) ?? includeClosure(members, source.options.includes, source.options.embedAssets !== false, this.#node, this.#isAsset);
    this.#closures.set(source.key, { version: this.#version, members, closure });
    return closure;
  }

  /** Whether the fields' kinds are as the cache has them (they decide which references are assets). */
  #modelAsCached(): boolean {
    return this.#previous !== undefined && JSON.stringify(this.#model) === JSON.stringify(this.#previous.model);
  }

  #keptClosure(source: Source, members: readonly string[]): Closure | undefined {
    const previous = this.#previous;
    const before = previous?.sources[source.key];
    if (!previous || !before || this.#linksChanged || before.fingerprint !== source.fingerprint) return undefined;
    if (!sameList(members, before.members) || !this.#modelAsCached()) return undefined;
    let ids: Set<string> | undefined;
    return {
      get ids() {
        return (ids ??= new Set(before.closure));
      },
      missing: before.dangling.map((ref) => ({ ...ref })),
      kept: true,
      included: before.included,
    };
  }

  /** Cached records that were neither fetched nor listed in this run: list their stamps, refetch the changed ones, drop the deleted. */
  async #refreshIncluded(ids: string[]): Promise<void> {
    for (const id of ids) this.#checked.add(id);
    const changed: string[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < ids.length; i += this.#config.pageSize) {
      const chunk = ids.slice(i, i + this.#config.pageSize);
      const page = await this.#client.documents({ filters: [{ '*.meta.id': { in: chunk } }], fields: listing, limit: chunk.length });
      for (const stamp of page.data as unknown as { meta: { id: string; updatedAt?: string; revision?: number } }[]) {
        seen.add(stamp.meta.id);
        if (!this.#entries.sameStamps(stamp.meta.id, stamp.meta.updatedAt, stamp.meta.revision)) changed.push(stamp.meta.id);
      }
    }
    for (const id of ids) if (!seen.has(id)) this.#drop(id); // gone from the server
    this.#version++;
    if (changed.length > 0) await this.#fetchByIds(changed);
  }

  /**
   * Brings every closure up to date, until nothing changes: cached records they reach are
   * re-checked (a record fetched in this run may reach one nothing reached before), and records
   * they lack are fetched. Returns the dangling references.
   */
  async #completeClosures(sources: Source[], states: Map<string, { members: string[] }>): Promise<Manifest['dangling']> {
    const absent = new Set<string>();
    // The members every source listed in this run are current; the set is made when first needed.
    let listed: Set<string> | undefined;
    const isListed = (id: string) => (listed ??= new Set([...states.values()].flatMap((state) => state.members))).has(id);
    /** The last look at the closures, valid while no record changed since. */
    let looked: { version: number; missing: Map<string, DanglingReference[]> } | undefined;
    for (let round = 0; ; round++) {
      let missing = looked?.version === this.#version ? looked.missing : undefined;
      if (!missing) {
        missing = new Map<string, DanglingReference[]>();
        const unchecked = new Set<string>();
        for (const source of sources) {
          const closure = this.#closure(source, states.get(source.key)!.members);
          // Every member was listed in this run: only the records it includes may need a look.
          for (const id of closure.included ?? closure.ids) {
            if (!this.#checked.has(id) && !this.#fresh.has(id) && this.#entries.typeOf(id) !== '_asset' && !isListed(id)) unchecked.add(id);
          }
          for (const ref of closure.missing) {
            const list = missing.get(ref.id) ?? [];
            list.push(ref);
            missing.set(ref.id, list);
          }
        }
        const { incomplete, overcomplete } = this.#misshapen(sources, states);
        // Each round checks or fetches records not seen before, so the rounds end; the cap is a guard.
        if ((unchecked.size > 0 || incomplete.length > 0 || overcomplete.size > 0) && round < 100) {
          if (unchecked.size > 0) await this.#refreshIncluded([...unchecked]);
          // Stored as the masked answers make them, the way a fresh sync stores them (one the server no longer has stays dropped).
          for (const ids of overcomplete.values()) for (const id of ids) this.#drop(id);
          for (const [source, ids] of overcomplete) {
            const { fields, embedAssets } = requestOptions(source);
            await this.#fetchByIds(ids, { locale: 'all', fields, embedAssets } as ListOptions);
          }
          // A source without a mask needs these whole; one the server no longer has is dropped.
          const gone = incomplete.filter((id) => this.#entries.get(id)?.p);
          const found = await this.#fetchByIds(gone);
          for (const id of gone) if (!found.has(id)) this.#drop(id);
          this.#version++;
          continue;
        }
        looked = { version: this.#version, missing };
      }
      const toFetch = [...missing.keys()].filter((id) => !absent.has(id));
      if (toFetch.length === 0 || round >= 100) {
        return uniqueReferences([...missing.values()].flat());
      }
      const assets = toFetch.filter((id) => missing.get(id)!.some((ref) => this.#isAsset(id, ref.field, this.#node(ref.from)!)));
      const documents = toFetch.filter((id) => !assets.includes(id));
      const found = await this.#fetchByIds(documents);
      await settleAll(assets.map(async (id) => (await this.#fetchAsset(id)) && found.add(id)));
      for (const id of toFetch) if (!found.has(id)) absent.add(id);
    }
  }

  /**
   * Records not stored the way a fresh sync would store them: partial ones a source without a
   * mask needs (`incomplete`: fetched whole), and whole ones only sources with a mask need
   * (`overcomplete`, by masked source: fetched again through each mask; assets are never masked).
   */
  #misshapen(sources: Source[], states: Map<string, { members: string[] }>): { incomplete: string[]; overcomplete: Map<Source, string[]> } {
    const masked = sources.filter((source) => source.options.fields !== undefined);
    const partial = this.#entries.anyPartial();
    const overcomplete = new Map<Source, string[]>();
    if (!partial && masked.length === 0) return { incomplete: [], overcomplete };
    const closureOf = (source: Source) => this.#closure(source, states.get(source.key)!.members).ids;
    const wholeNeeded = new Set<string>();
    for (const source of sources) if (source.options.fields === undefined) for (const id of closureOf(source)) wholeNeeded.add(id);
    const incomplete = partial ? [...wholeNeeded].filter((id) => this.#entries.get(id)?.p) : [];
    for (const source of masked) {
      const ids: string[] = [];
      for (const id of closureOf(source)) {
        const entry = this.#entries.get(id);
        if (entry && !entry.p && entry.t !== '_asset' && !wholeNeeded.has(id)) ids.push(id);
      }
      if (ids.length > 0) overcomplete.set(source, ids);
    }
    return { incomplete, overcomplete };
  }

  #reach: { levels: number; affected: Set<string> } | undefined;

  /**
   * When a member's dependency digest of the cache still holds: the source's options and the
   * model are as they were, and its closure cannot reach a record that was added, changed or
   * dropped in this run (see `reachersOf`). Then the digest is kept rather than worked out again.
   * Undefined when every digest must be worked out.
   */
  #unaffected(source: Source): { members: readonly string[]; digests: readonly string[]; affected: Set<string> } | undefined {
    const previous = this.#previous;
    const before = previous?.sources[source.key];
    const includes = source.options.includes ?? 0;
    if (!previous || !before || before.fingerprint !== source.fingerprint || typeof includes !== 'number') return undefined;
    if (!this.#modelAsCached()) return undefined;
    if (!this.#reach || this.#reach.levels < includes) {
      const entries = this.#entries;
      // Without a record added, dropped or relinked, the changed ones are the replaced ones.
      const changed = new Set<string>(this.#linksChanged ? [] : this.#replaced);
      if (this.#linksChanged) {
        const { rows, removed } = this.#changedSinceBaseline();
        for (const id of [...rows, ...removed]) changed.add(id);
      }
      // Computed once, for the most include levels asked: a superset serves the sources with fewer.
      const levels = Math.max(includes, ...sourcesOf(this.#config).map((s) => (typeof s.options.includes === 'number' ? s.options.includes : 0)));
      const isAsset = (id: string) => entries.typeOf(id) === '_asset' || this.#baselineEntry(id)?.t === '_asset';
      this.#reach = { levels, affected: reachersOf(changed, levels, (targets, referrer) => entries.eachReferrer(targets, referrer), isAsset) };
    }
    return { members: before.members, digests: before.digests, affected: this.#reach.affected };
  }

  /**
   * Each member's dependency digest (its own digest and those of the records it includes), in
   * the order of `members`, and the positions of those worked out in this run.
   */
  #dependencyDigests(source: Source, members: readonly string[]): { digests: string[]; worked: number[] } {
    const kept = this.#unaffected(source);
    const ownClosure = memberClosures(source.options.includes, source.options.embedAssets !== false, this.#node, this.#isAsset);
    const digest = (id: string) => hash([...ownClosure(id)].sort().map((dep) => `${dep}:${this.#entries.get(dep)!.d}`).join(','));
    const worked: number[] = [];
    if (kept && members === kept.members) {
      // The cache's digests, but for the members whose closure may have changed.
      const digests = kept.digests.slice();
      for (let i = 0; i < members.length; i++) {
        if (!kept.affected.has(members[i]!)) continue;
        digests[i] = digest(members[i]!);
        worked.push(i);
      }
      return { digests, worked };
    }
    const known = kept && new Map(kept.members.map((id, i) => [id, kept.digests[i]!]));
    const digests = members.map((id, i) => {
      worked.push(i);
      const before = known?.get(id);
      return before !== undefined && !kept!.affected.has(id) ? before : digest(id);
    });
    return { digests, worked };
  }

  async #commit(sources: Source[], states: Map<string, { members: string[] }>, dangling: Manifest['dangling'], syncedAt: string): Promise<SyncResult> {
    const previous = this.#baseline;
    // While every source keeps the cache's closure, and no record was added, dropped or relinked, the records needed are the cache's.
    const kept =
      previous !== undefined &&
      previous === this.#previous &&
      !this.#linksChanged &&
      Object.keys(previous.sources).every((key) => sources.some((source) => source.key === key)) &&
      sources.every((source) => this.#closure(source, states.get(source.key)!.members).kept);
    const needed = new Set<string>();
    const sourceStates: Record<string, SourceState> = {};
    const changeset: Omit<Changeset, 'empty'> = { sources: {}, records: emptyChanges() };
    for (const source of sources) {
      const { members } = states.get(source.key)!;
      const closure = this.#closure(source, members);
      if (!kept) for (const id of closure.ids) needed.add(id);
      const before = previous?.sources[source.key];
      // Members as the cache has them (the common case) need no sets to compare.
      // (Without a record dropped, the cache's members are all there still.)
      const unchanged = before !== undefined && sameList(members, before.members) && (!this.#linksChanged || members.every((id) => this.#entries.has(id)));
      // (A member listed twice, as pages shifted while they were read, counts once.)
      const memberList = unchanged ? before.members : [...new Set(members.filter((id) => this.#entries.has(id)))];
      const { digests, worked } = this.#dependencyDigests(source, memberList);
      const changes: SourceChanges = emptyChanges();
      if (unchanged) {
        for (const i of worked) if (before.digests[i] !== digests[i]) changes.updated.push(memberList[i]!);
      } else {
        const old = new Map(before?.members.map((id, i) => [id, before.digests[i]]));
        const current = new Set(memberList);
        memberList.forEach((id, i) => {
          if (!old.has(id)) changes.added.push(id);
          else if (old.get(id) !== digests[i]) changes.updated.push(id);
        });
        for (const id of old.keys()) if (!current.has(id)) changes.removed.push(id);
      }
      changeset.sources[source.key] = changes;
      const included = closure.kept && before ? before.included : includedIn(closure.ids, memberList);
      sourceStates[source.key] = {
        kind: source.kind,
        name: source.name,
        fingerprint: source.fingerprint,
        members: memberList,
        closure: closure.kept && before ? before.closure : memberList.concat(included),
        included,
        digests,
        dangling: uniqueReferences(closure.missing),
        syncedAt,
      };
    }
    // The records are the run's, less what no source needs.
    const records = this.#entries;
    if (!kept) for (const id of records.keys()) if (!needed.has(id)) this.#put(id, undefined);
    const moved = await compactSegments(this.#dir, records, this.#writer);
    for (const [id, entry] of moved) this.#put(id, entry);
    await this.#writer.finish();
    // What changed since the baseline: what the new index file holds, and (records moved as they were aside) the changeset.
    const changed = this.#changedSinceBaseline();
    if (kept) {
      for (const id of this.#replaced) if (this.#baselineEntry(id)!.d !== records.get(id)!.d) changeset.records.updated.push(id);
    } else {
      for (const id of changed.rows) {
        const before = this.#baselineEntry(id);
        if (!before) changeset.records.added.push(id);
        else if (before.d !== records.get(id)!.d) changeset.records.updated.push(id);
      }
      changeset.records.removed.push(...changed.removed);
    }
    const manifest: Manifest = {
      format: cacheFormat,
      fingerprint: this.#fingerprint,
      repository: this.#config.repository,
      baseUrl: this.#config.baseUrl.replace(/\/+$/, ''),
      package: `comfortable-loader@${packageVersion}`,
      lastSync: syncedAt,
      locales: this.#locales!,
      model: this.#model,
      sources: sourceStates,
      records,
      dangling,
      etags: this.#etags.entries,
    };
    await commitManifest(this.#dir, manifest, this.#baseline && { manifest: this.#baseline, ...changed });
    this.#originals.clear(); // committed: nothing to roll back
    this.#stats.ms = Date.now() - this.#started;
    const result: SyncResult = {
      changeset: { ...changeset, empty: isEmptyChangeset(changeset) },
      cacheDir: this.#dir,
      manifest,
      reader: new RecordReader(this.#dir, manifest),
      stale: [],
      dangling,
      warnings: [],
      stats: this.#stats,
    };
    for (const ref of dangling) this.#warn(`Dangling reference: document ${ref.from}, field ${ref.field} points to ${ref.id}, which the server does not have`);
    const { added, updated, removed } = changeset.records;
    this.#logger.info(
      `Synced ${this.#config.repository}: ${records.size} records (${added.length} added, ${updated.length} updated, ${removed.length} removed) in ${(this.#stats.ms / 1000).toFixed(1)} s, ${this.#stats.requests} requests (${this.#stats.notModified} not modified), ${(this.#stats.bytes / 1024).toFixed(0)} KiB`,
    );
    return result;
  }
}
