import { ConfigError, parseSyncConfig } from '../sync/config.ts';
import { sync, type SyncLogger } from '../sync/engine.ts';
import { loadConfigFile } from './config-file.ts';
import { argsOf, usageError } from './usage.ts';

const modes = ['incremental', 'fresh', 'offline'] as const;

/**
 * `sync [--config file] [--mode incremental|fresh|offline] [--json]`: exit 0 done, 1 failed,
 * 2 bad config.
 */
export async function syncCommand(args: string[]): Promise<number> {
  const parsed = argsOf(args, {
    config: { type: 'string' },
    mode: { type: 'string' },
    json: { type: 'boolean', default: false },
  });
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
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
    const result = await sync(config, logger);
    if (values.json) {
      const { changeset, stats, stale, dangling, warnings, cacheDir } = result;
      console.log(JSON.stringify({ changeset, stats, stale, dangling, warnings, cacheDir }, null, 2));
    } else {
      for (const [key, changes] of Object.entries(result.changeset.sources)) {
        out(
          `  ${key}: ${changes.added.length} added, ${changes.updated.length} updated, ` +
            `${changes.removed.length} removed`,
        );
      }
      if (result.stale.length > 0) out(`  stale (served from the cache): ${result.stale.join(', ')}`);
    }
    return 0;
  } catch (error) {
    console.error(`Error: ${(error as Error).message}`);
    return error instanceof ConfigError ? 2 : 1;
  }
}
