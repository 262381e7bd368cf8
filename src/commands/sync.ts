import { parseArgs } from 'node:util';
import { CacheError, type CacheReader, DamagedRecordError, openCache } from '../cache/index.ts';
import { ConfigError, parseSyncConfig, type SyncConfig } from '../sync/config.ts';
import { cacheDirOf, sync, type SyncHints, type SyncLogger, type SyncResult } from '../sync/engine.ts';
import { loadConfigFile } from './config-file.ts';
import { usageError } from './usage.ts';

const modes = ['incremental', 'fresh', 'offline'] as const;

/** What `--verify` found: the records checked against their digests, the damaged ones, and what became of them. */
export interface Verified {
  /** How many records the cache held when they were checked. */
  checked: number;
  /** Records whose stored bytes no longer matched their digests. */
  damaged: string[];
  /** Damaged records fetched again and stored whole. */
  repaired: string[];
  /** Damaged records the sync removed (the server no longer has them, or nothing needs them). */
  removed: string[];
  /** The cache file itself was damaged (SQLite could not read it), and was rebuilt from the server. */
  rebuilt: boolean;
}

/**
 * `sync [--config file] [--mode incremental|fresh|offline] [--verify] [--json]`: exit 0 done,
 * 1 failed, 2 bad config. A sync reads only what changed, so damage inside an unchanged record
 * passes it (a build that reads the record finds it); `--verify` checks every record first.
 */
export async function syncCommand(args: string[]): Promise<number> {
  let values: { config?: string; mode?: string; json?: boolean; verify?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        config: { type: 'string' },
        mode: { type: 'string' },
        json: { type: 'boolean', default: false },
        verify: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    return usageError((error as Error).message);
  }
  if (values.mode !== undefined && !(modes as readonly string[]).includes(values.mode)) {
    return usageError(`--mode must be one of ${modes.join(', ')}, got ${JSON.stringify(values.mode)}`);
  }
  // With --json, stdout carries only the result; progress goes to stderr.
  const out = values.json ? console.error : console.log;
  const logger: SyncLogger = { info: (m) => out(m), warn: (m) => console.error(`warning: ${m}`) };
  try {
    const { file, config: input } = await loadConfigFile(values.config);
    const config = parseSyncConfig({ ...(input as object), ...(values.mode ? { mode: values.mode } : {}) });
    out(`Syncing with ${file}`);
    const { result, verified } = values.verify
      ? await verifiedSync(config, logger)
      : { result: await sync(config, logger), verified: undefined };
    if (values.json) {
      const { changeset, stats, stale, dangling, warnings, cacheDir } = result;
      console.log(
        JSON.stringify(
          { changeset, stats, stale, dangling, warnings, cacheDir, ...(verified ? { verified } : {}) },
          null,
          2,
        ),
      );
    } else {
      for (const [key, changes] of Object.entries(result.changeset.sources)) {
        out(
          `  ${key}: ${changes.added.length} added, ${changes.updated.length} updated, ${changes.removed.length} removed`,
        );
      }
      if (result.stale.length > 0) out(`  stale (served from the cache): ${result.stale.join(', ')}`);
      if (verified) out(`  verified: ${verifiedLine(verified)}`);
    }
    return 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`Error: ${error.message}`);
      return 2;
    }
    console.error(`Error: ${(error as Error).message}`);
    return 1;
  }
}

/**
 * A sync that first checks every record of the cache against its digest and fetches the
 * damaged ones again, then checks them once more: a record still damaged (the server failed, and
 * the cached content was kept) fails it. Offline, the sync checks every record itself and
 * fails on a damaged one, as nothing can be fetched again.
 */
async function verifiedSync(
  config: SyncConfig,
  logger: SyncLogger,
): Promise<{ result: SyncResult; verified: Verified }> {
  if (config.mode === 'offline') {
    const result = await sync(config, logger);
    return {
      result,
      verified: { checked: result.cache.recordCount(), damaged: [], repaired: [], removed: [], rebuilt: false },
    };
  }
  const dir = cacheDirOf(config);
  let checked = 0;
  let damaged: string[] = [];
  let hints: SyncHints;
  try {
    const cache = openCache(dir);
    checked = cache?.recordCount() ?? 0;
    damaged = cache?.verify() ?? [];
    hints = { repair: damaged };
  } catch (error) {
    if (!(error instanceof CacheError && error.code === 'cache_damaged')) throw error;
    logger.warn(`${error.message}; rebuilding it from the server`);
    hints = { rebuild: true };
  }
  const result = await sync(config, logger, hints);
  const removed = damaged.filter((id) => !result.cache.has(id));
  const kept = damaged.filter((id) => result.cache.has(id));
  const still = damagedAmong(result.cache, kept);
  if (still.length > 0) {
    const why =
      result.stale.length > 0
        ? `the server failed, and the cached content of ${result.stale.join(', ')} was kept`
        : 'the server did not send them again';
    throw new CacheError(
      'cache_damaged',
      `${new DamagedRecordError(dir, still).message}; they could not be fetched again (${why}): run the sync again when the server answers`,
    );
  }
  return { result, verified: { checked, damaged, repaired: kept, removed, rebuilt: hints.rebuild === true } };
}

/** Those of `ids` whose stored bytes still do not match their digests. */
function damagedAmong(cache: CacheReader, ids: string[]): string[] {
  try {
    cache.records(ids);
    return [];
  } catch (error) {
    if (error instanceof DamagedRecordError) return error.ids;
    throw error;
  }
}

function verifiedLine({ checked, damaged, repaired, removed, rebuilt }: Verified): string {
  if (rebuilt) return 'the cache file was damaged; it was rebuilt from the server';
  const checkedText = `${checked} records checked against their digests`;
  if (damaged.length === 0) return `${checkedText}, none damaged`;
  const fates = [
    ...(repaired.length > 0 ? [`fetched again: ${repaired.join(', ')}`] : []),
    ...(removed.length > 0 ? [`removed by the sync: ${removed.join(', ')}`] : []),
  ];
  return `${checkedText}, ${damaged.length} damaged; ${fates.join('; ')}`;
}
