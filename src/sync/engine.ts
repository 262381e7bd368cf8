import packageJson from '../../package.json' with { type: 'json' };
import { resolve } from 'node:path';
import { createClient, type ReadApiClient } from '../api/client.ts';
import { NetworkError, RateLimitedError, ServerError, TimeoutError } from '../api/errors.ts';
import type { EtagStore } from '../api/transport.ts';
import {
  CacheError,
  cacheErrorOf,
  type CacheHead,
  type CacheReader,
  CacheTransaction,
  clearCache,
  type DanglingReference,
  type Etags,
  openCache,
} from '../cache/index.ts';
import { type Changeset, emptyChanges } from './changeset.ts';
import { checkAhead, completeClosures } from './closures.ts';
import { commitRun } from './commit.ts';
import { hash, parseSyncConfig, configSources, type SyncConfig, type SyncConfigInput } from './config.ts';
import { assetStampsMask, Fetcher, settleAll } from './fetch.ts';
import { Intake, type LocaleKeys } from './intake.ts';
import { type Listed, listSource } from './list.ts';
import { type Locales, repositoryLocales } from '../model/locales.ts';
import { planSources } from './plan.ts';

/**
 * The sync: fetch what the sources need with every locale, normalise it into records, and
 * commit them to the cache, in one transaction. Later syncs list member stamps (small answers)
 * to catch deletions and membership changes, fetch only documents changed since the last sync,
 * re-check aliases with conditional GETs, refresh included records that changed, and drop
 * records nothing needs. The phases: plan → list (and fetch) → normalise → closures → digests
 * and commit.
 */

export const packageVersion: string = packageJson.version;

export interface SyncLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface SyncResult {
  changeset: Changeset;
  cacheDir: string;
  /** The committed content, as every consumer reads it. */
  cache: CacheReader;
  /** Sources served from the cache because the server failed (`onError: 'use-cache'`). */
  stale: string[];
  /** References whose target the server does not have. */
  dangling: DanglingReference[];
  warnings: string[];
  /** Requests and bytes of the run, and the records it wrote. */
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

/** Hints for one sync run. */
export interface SyncHints {
  /**
   * Ids of documents and assets to fetch again even when their `updatedAt` and revision look unchanged (a webhook's
   * changed ids).
   */
  refetch?: readonly string[];
  /** Why the cache could not be read (a reader found it damaged): it is rebuilt from the CMS. */
  rebuild?: string;
}

/**
 * Where the cache of `sync()` and the CLI lives when no folder is configured. The Astro
 * integration keeps its own in Astro's cache folder (`node_modules/.astro/comfortable`), so a
 * CLI sync with another config never drops the sources a site needs.
 */
export const defaultCacheDir = (root = process.cwd()) => resolve(root, 'node_modules/.cache/comfortable-loader');

/** The cache folder of a config: its `cacheDir`, else the default, as an absolute path. */
export const cacheDirOf = (config: Pick<SyncConfig, 'cacheDir'>) => resolve(config.cacheDir ?? defaultCacheDir());

export const consoleLogger: SyncLogger = {
  info: (message) => console.log(message),
  warn: (message) => console.warn(`warning: ${message}`),
};

const localeLike = /^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$/;
const transient = (error: unknown) =>
  error instanceof NetworkError ||
  error instanceof TimeoutError ||
  error instanceof ServerError ||
  error instanceof RateLimitedError;

/** What makes a cache this config's: base URL, repository, package version (never the key). */
const fingerprintOf = (config: SyncConfig) =>
  hash({ baseUrl: config.baseUrl.replace(/\/+$/, ''), repository: config.repository, package: packageVersion });

/** Runs one sync; see `SyncConfig` for the options. */
export async function sync(
  input: SyncConfigInput | SyncConfig,
  logger: SyncLogger = consoleLogger,
  hints: SyncHints = {},
): Promise<SyncResult> {
  const config = parseSyncConfig(input);
  const dir = cacheDirOf(config);
  const warnings: string[] = [];
  const warn = (message: string) => {
    warnings.push(message);
    logger.warn(message);
  };
  if (config.mode === 'offline') return offline(dir, config, logger, warnings);

  const attempt = () => syncOnce(dir, config, { logger, warn, hints });
  let result: SyncResult;
  try {
    result = hints.rebuild === undefined ? await attempt() : await rebuilt(dir, hints.rebuild, attempt);
  } catch (error) {
    if (!(error instanceof CacheError && error.code === 'cache_damaged')) throw error;
    warn(`${error.message}; rebuilding it from the server`);
    result = await rebuilt(dir, error.message, attempt);
  }
  // Committed: what the hook throws is its own failure, not the server's (nothing to fall back on).
  result.warnings.push(...warnings);
  if (config.onSync && !result.changeset.empty) await config.onSync(result.changeset);
  return result;
}

/**
 * The one recovery rule: a cache that cannot be read (SQLite refuses it, a record does not
 * parse) is rebuilt from the CMS; with the CMS down too, the sync fails naming both.
 */
async function rebuilt(dir: string, damage: string, attempt: () => Promise<SyncResult>): Promise<SyncResult> {
  clearCache(dir);
  try {
    return await attempt();
  } catch (error) {
    if (!(error instanceof SyncError && error.code === 'server_failed')) throw error;
    const cms = (error.cause as Error | undefined)?.message ?? error.message;
    throw new SyncError('server_failed', `${damage}, and rebuilding it from the server failed: ${cms}`, error.cause);
  }
}

/** One attempt: the transaction and every phase in it, or the failure policy when the server fails. */
async function syncOnce(dir: string, config: SyncConfig, { logger, warn, hints }: RunContext): Promise<SyncResult> {
  const tx = await CacheTransaction.begin(dir, {
    warn,
    waiting: () => logger.info(`Waiting for another sync of the cache in ${dir} to finish`),
  });
  try {
    return await run(tx, config, dir, { logger, warn, hints });
  } catch (thrown) {
    tx.rollback();
    // SQLite's own errors (a full disk, a damaged page) are told as what they mean for the cache.
    const error = cacheErrorOf(thrown, dir);
    if (transient(error) && config.onError === 'use-cache' && tx.head) {
      const cache = openCache(dir);
      if (cache && cache.head.fingerprint === fingerprintOf(config)) {
        const stale = configSources(config).map((source) => source.key);
        const lacking = lackingSources(cache, config);
        if (lacking.length > 0) {
          throw new SyncError(
            'server_failed',
            `Sync of ${config.repository} failed: ${(error as Error).message}; ${incomplete(dir, lacking)}: ` +
              `sync this config once the server answers`,
            error,
          );
        }
        warn(
          `The server failed (${(error as Error).message}); using the cached content of ` +
            `${cache.head.lastSync}, stale: ${stale.join(', ')}`,
        );
        return cachedResult(dir, config, cache, stale, []);
      }
    }
    if (transient(error)) {
      // Falling back was allowed, but there is nothing to fall back on (a first sync of this server, or one of another
      // version).
      const none = config.onError === 'use-cache' && tx.head?.fingerprint !== fingerprintOf(config);
      const left = none
        ? `; the cache in ${dir} holds no content of ${config.baseUrl} yet, so there is no last good ` +
          `content to use: sync once with the server reachable`
        : ' (the cache was left as it was)';
      throw new SyncError(
        'server_failed',
        `Sync of ${config.repository} failed: ${(error as Error).message}${left}`,
        error,
      );
    }
    throw error;
  }
}

async function offline(dir: string, config: SyncConfig, logger: SyncLogger, warnings: string[]): Promise<SyncResult> {
  let cache: CacheReader | undefined;
  try {
    cache = openCache(dir);
  } catch (error) {
    if (error instanceof CacheError)
      throw new CacheError(
        error.code,
        `${error.message}; offline mode cannot rebuild it: run a sync online first`,
        error,
      );
    throw error;
  }
  if (!cache || cache.head.fingerprint !== fingerprintOf(config)) {
    throw new SyncError(
      'offline_without_cache',
      `Offline mode needs a cache of ${config.repository}, and there is none in ${dir}: run a sync online ` +
        `first (mode "incremental")`,
    );
  }
  const lacking = lackingSources(cache, config);
  if (lacking.length > 0)
    throw new SyncError(
      'offline_without_cache',
      `Offline mode: ${incomplete(dir, lacking)}: sync this config online first (mode "incremental")`,
    );
  logger.info(`Offline: using the cache of ${cache.head.lastSync} (${cache.recordCount()} records)`);
  return cachedResult(dir, config, cache, [], warnings);
}

/**
 * The config's sources the cache cannot serve as they are asked: not held (another config's
 * sync wrote the folder, or the source is new) or held as fetched with other options.
 */
function lackingSources(cache: CacheReader, config: SyncConfig): string[] {
  const held = new Map(cache.sources().map((source) => [source.key, source.fingerprint]));
  return configSources(config).flatMap((source) => {
    const fingerprint = held.get(source.key);
    if (fingerprint === undefined) return [source.key];
    return fingerprint === source.fingerprint ? [] : [`${source.key} (synced with other options)`];
  });
}

/** Says that a cache lacks some sources of the config (a folder shared by two configs is the likely cause). */
const incomplete = (dir: string, lacking: string[]) =>
  `the cache in ${dir} does not hold ${lacking.join(', ')}, so there is no last good content of ` +
  `${lacking.length === 1 ? 'it' : 'them'} to use ` +
  '(if another config syncs into this folder, give each its own cacheDir)';

function cachedResult(
  dir: string,
  config: SyncConfig,
  cache: CacheReader,
  stale: string[],
  warnings: string[],
): SyncResult {
  const changeset: Changeset = {
    sources: Object.fromEntries(configSources(config).map((source) => [source.key, emptyChanges()])),
    records: emptyChanges(),
    empty: true,
  };
  return {
    changeset,
    cacheDir: dir,
    cache,
    stale,
    dangling: cache.dangling(),
    warnings,
    stats: { requests: 0, notModified: 0, bytes: 0, ms: 0, written: 0 },
  };
}

/** ETags of the repository, alias and asset answers, with their bodies, kept in the cache (never list pages). */
class CachedEtags implements EtagStore {
  readonly entries: Etags;
  constructor(initial: Etags) {
    this.entries = { ...initial };
  }
  get(key: string) {
    return this.entries[key];
  }
  set(key: string, entry: { etag: string; body: string }) {
    if (/\/alias\/|\/assets\/|^GET [^?]*\/v1\/[^/?]+(\?|$)/.test(key)) this.entries[key] = entry;
  }
}

interface RunContext {
  logger: SyncLogger;
  warn(message: string): void;
  hints: SyncHints;
}

/** One sync inside its transaction: every phase, then the commit. */
async function run(
  tx: CacheTransaction,
  config: SyncConfig,
  dir: string,
  { logger, warn, hints }: RunContext,
): Promise<SyncResult> {
  const started = Date.now();
  const fingerprint = fingerprintOf(config);
  let head = tx.head;
  if (head && head.fingerprint !== fingerprint) {
    warn(`The cache in ${dir} was made for ${head.baseUrl} / ${head.repository} by ${head.package}; rebuilding it`);
    tx.clear();
    head = undefined;
  }
  if (config.mode === 'fresh') tx.records.clear(); // its changeset still compares with the last committed content
  const stats = { requests: 0, notModified: 0, bytes: 0, ms: 0, written: 0 };
  // A fresh sync asks every answer again, whatever it answered before.
  const etags = new CachedEtags(head && config.mode !== 'fresh' ? tx.etags() : {});
  const client: ReadApiClient = createClient({
    baseUrl: config.baseUrl,
    repository: config.repository,
    apiKey: config.apiKey,
    concurrency: config.concurrency,
    etags,
    onResponse: (event) => {
      stats.requests++;
      stats.bytes += event.bytes;
      if (event.notModified) stats.notModified++;
    },
  });
  const model = structuredClone(head?.model ?? {});
  const refetch = new Set(hints.refetch);
  const intake = new Intake(tx.records, model, { has: (key) => localeLike.test(key) }, { refetch, countLocales: true });
  const fetcher = new Fetcher(client, intake, config.pageSize);

  const syncedAt = new Date().toISOString();
  const sources = configSources(config);
  const stored = tx.sources();
  const plans = planSources(sources, stored, config.mode === 'fresh');
  let locales: Locales | undefined;
  // The repository's locales are what records are normalised with: what fetches records waits for them.
  const localesKnown = client.repository().then((info) => {
    locales = repositoryLocales(info.meta);
    if (locales) intake.useLocales(new Set(locales.locales.map((l) => l.key)) as LocaleKeys);
  });
  localesKnown.catch(() => {}); // awaited below

  // Listings by stamps need no locales: they are asked with the repository.
  const members = new Map<string, Listed>();
  const context = {
    fetcher,
    intake,
    records: tx.records,
    safetyMarginMs: config.safetyMarginMs,
    progress: (message: string) => logger.info(message),
    stored: (key: string) => tx.members(key),
    localesKnown,
  };
  const listed = settleAll(plans.map(async (plan) => members.set(plan.source.key, await listSource(plan, context))));
  // Once the listings are asked, what the last sync's closures hold is checked meanwhile.
  await new Promise((resolve) => setImmediate(resolve));
  const incremental = plans.filter((plan) => plan.how === 'incremental').map((plan) => plan.source.key);
  const ahead = checkAhead(
    incremental.flatMap((key) => tx.included(key)),
    incremental.flatMap((key) => tx.dangling(key)),
    {
      records: tx.records,
      fetcher,
      localesKnown,
      assetMask: assetStampsMask(model, head?.locales.locales.map((locale) => locale.key) ?? []),
    },
  );
  // None is left running when one fails; the repository's failure is the one told first.
  await settleAll<unknown>([localesKnown, listed, ahead]);

  // A webhook may name records whose stamps did not move (a snapshot edited by hand), or an asset
  // no document fetched in this run embeds: fetch them anyway (assets one by one, as the API has it).
  const hinted = [...refetch].filter((id) => tx.records.info(id) && !intake.taken.has(id));
  const isAsset = (id: string) => tx.records.info(id)?.contentType === '_asset';
  if (hinted.some((id) => !isAsset(id))) await fetcher.byIds(hinted.filter((id) => !isAsset(id)));
  // (An asset a refetched document embeds came with it.)
  await fetcher.assets(hinted.filter((id) => isAsset(id) && !intake.taken.has(id)));

  const closures = await completeClosures(sources, members, {
    records: tx.records,
    intake,
    fetcher,
    assetMask: assetStampsMask(model, (locales ?? head?.locales)?.locales.map((locale) => locale.key) ?? []),
    ahead: await ahead,
    stored: (source) => {
      if (stored.get(source.key)?.fingerprint !== source.fingerprint || config.mode === 'fresh') return undefined;
      return {
        members: tx.members(source.key).ids,
        included: tx.included(source.key),
        dangling: tx.dangling(source.key),
      };
    },
  });

  locales ??= guessLocales(head, intake, warn);
  const newHead: Omit<CacheHead, 'records'> = {
    fingerprint,
    repository: config.repository,
    baseUrl: config.baseUrl.replace(/\/+$/, ''),
    package: `comfortable-loader@${packageVersion}`,
    lastSync: syncedAt,
    locales,
    model,
  };
  const { changeset, cache } = commitRun(tx, intake, {
    sources,
    members,
    closures,
    syncedAt,
    head: newHead,
    etags: etags.entries,
  });
  const dropped = [...stored.keys()].filter((key) => !sources.some((source) => source.key === key));
  if (dropped.length > 0) {
    warn(
      `The cache in ${dir} held sources this config no longer names (${dropped.join(', ')}): they were ` +
        `removed, with the records only they needed. ` +
        'If another config syncs into this folder, give each its own cacheDir (the Astro integration and ' +
        'the comfortable-loader CLI keep apart by default).',
    );
  }
  const dangling = cache.dangling();
  for (const ref of dangling)
    warn(
      `Dangling reference: document ${ref.from}, field ${ref.field} points to ${ref.id}, which the server ` +
        `does not have`,
    );
  stats.written = intake.written;
  stats.ms = Date.now() - started;
  const { added, updated, removed } = changeset.records;
  logger.info(
    `Synced ${config.repository}: ${cache.recordCount()} records (${added.length} added, ${updated.length} ` +
      `updated, ${removed.length} removed) in ${(stats.ms / 1000).toFixed(1)} s, ${stats.requests} requests ` +
      `(${stats.notModified} not modified), ${(stats.bytes / 1024).toFixed(0)} KiB`,
  );
  return { changeset, cacheDir: dir, cache, stale: [], dangling, warnings: [], stats };
}

/** Locales from the keys seen in the data, when the server does not list them (starting from those guessed before). */
function guessLocales(head: CacheHead | undefined, intake: Intake, warn: (message: string) => void): Locales {
  const before = head?.locales.source === 'data' ? head.locales : undefined;
  const seen = [...intake.localeCounts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([key]) => key);
  const keys = [...new Set([...(before?.locales.map((l) => l.key) ?? []), ...seen])];
  const locales: Locales = {
    defaultLocale: before?.defaultLocale ?? keys[0] ?? 'en_US',
    locales: keys.map((key) => ({ key })),
    source: 'data',
  };
  warn(
    `The server did not list the repository's locales; using the locale keys seen in the data ` +
      `(${keys.join(', ') || 'none'}), default ${locales.defaultLocale}, without fallbacks`,
  );
  return locales;
}
