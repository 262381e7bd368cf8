import { resolve } from 'node:path';
import { NetworkError, RateLimitedError, ServerError, TimeoutError } from '../api/errors.ts';
import { CacheError, cacheErrorOf, type CacheReader, CacheTransaction, clearCache, openCache } from '../cache/index.ts';
import { type Changeset, emptyChanges } from './changeset.ts';
import { parseSyncConfig, configSources, type SyncConfig, type SyncConfigInput } from './config.ts';
import { cacheFingerprint, type RunContext, run, type SyncHints, type SyncLogger, type SyncResult } from './run.ts';

export type { SyncHints, SyncLogger, SyncResult } from './run.ts';

/**
 * The sync: fetch what the sources need with every locale, normalise it into records, and
 * commit them to the cache, in one transaction. Later syncs list member stamps (small answers)
 * to catch deletions and membership changes, fetch only documents changed since the last sync,
 * re-check aliases with conditional GETs, refresh included records that changed, and drop
 * records nothing needs. The phases: plan → list (and fetch) → normalise → closures → digests
 * and commit.
 */

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

/**
 * The cache folder of a config, as an absolute path: its `cacheDir`, else where the cache of
 * `sync()` and the CLI lives by default. The Astro integration keeps its own in Astro's cache
 * folder (`node_modules/.astro/comfortable`), so a CLI sync with another config never drops the
 * sources a site needs.
 */
export const cacheDirOf = (config: Pick<SyncConfig, 'cacheDir'>) =>
  resolve(config.cacheDir ?? 'node_modules/.cache/comfortable-loader');

const consoleLogger: SyncLogger = {
  info: (message) => console.log(message),
  warn: (message) => console.warn(`warning: ${message}`),
};

const transient = (error: unknown) =>
  error instanceof NetworkError ||
  error instanceof TimeoutError ||
  error instanceof ServerError ||
  error instanceof RateLimitedError;

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
      if (cache && cache.head.fingerprint === cacheFingerprint(config)) {
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
      const none = config.onError === 'use-cache' && tx.head?.fingerprint !== cacheFingerprint(config);
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
  if (!cache || cache.head.fingerprint !== cacheFingerprint(config)) {
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
