import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { nonEmpty } from '../wire/schemas.ts';
import { originCacheDir } from '../cache/index.ts';
import { checkOptions, ConfigError, parseSyncConfig, syncConfigSchema } from '../sync/config.ts';
import { withEnv } from '../api/env.ts';
import type { SharedConfig } from '../sync/shared.ts';
import { defaultPollInterval } from './poll.ts';
import { devOptionsShape } from './refresh.ts';

/**
 * The Vite plugin's options, checked by the same checker as the Astro integration's, with the
 * nearest valid key for a misspelt one: what they say alone when `comfortable()` is called (so a
 * typo fails before Vite does anything else), the rest once Vite's config is resolved and the
 * `CMFT_*` variables of its `.env` files are known.
 */

/** The options' prefix in messages: `comfortable.colections`. */
const optionsPrefix = 'comfortable.';

/** What the Astro integration and the Vite plugin take: the sync's options (any source optional) and dev's. */
export const hostOptionsSchema = syncConfigSchema
  .extend(devOptionsShape)
  .partial({ collections: true, aliases: true, queries: true });

const viteOptionsSchema = hostOptionsSchema.extend({
  /**
   * The declaration file the plugin writes after each sync (only when its text changes), which
   * types each virtual module's entries from the synced content: relative to the Vite root, or
   * absolute; `false` writes none. Default `comfortable.d.ts`.
   * @example comfortable({ collections: { posts: {} }, dts: 'src/comfortable.d.ts' })
   */
  dts: z
    .union([nonEmpty, z.literal(false)], {
      error: 'expected the path of a .d.ts file, such as comfortable.d.ts, or false',
    })
    .optional(),
});
/** The options as `comfortable()` is given them: the connection may still come from the environment. */
const givenSchema = viteOptionsSchema.partial({ repository: true, apiKey: true });

/** Options of `comfortable()` from `comfortable-loader/vite`: those of the sync, and the plugin's own. */
export type ComfortableViteOptions = z.input<typeof givenSchema>;

/**
 * Checks the options as written; throws a ConfigError naming the option (and the nearest valid key for a misspelt one).
 */
export function checkGivenOptions(options: ComfortableViteOptions): void {
  if ('snapshot' in options) {
    const file = String((options as { snapshot: unknown }).snapshot);
    throw new ConfigError(
      'snapshot',
      `Invalid option snapshot: the Vite plugin does not serve a copy. Serve it with npx comfortable-loader ` +
        `serve ${file} and point baseUrl and apiKey (CMFT_BASE_URL, CMFT_API_KEY) at it, with the local key ` +
        `the pull printed; the Astro integration's snapshot option serves one in-process.`,
    );
  }
  checkOptions(givenSchema, options, { prefix: optionsPrefix });
}

/**
 * The options with what they leave out taken from the `CMFT_*` variables, checked whole (the
 * connection included, and that they name something to sync); the cache goes inside Vite's
 * cache folder unless `cacheDir` says otherwise: the shared sync's configuration, the dev options (the
 * poll interval in milliseconds, or false), the absolute path of the declaration file (undefined for
 * none), and what to warn of (CMFT_SNAPSHOT, which the plugin does not serve). Throws a ConfigError
 * naming the option.
 */
export function resolveViteOptions(
  options: ComfortableViteOptions,
  env: Record<string, string>,
  vite: { root: string; cacheDir: string },
) {
  const filled = withEnv(options, env, ['baseUrl', 'repository', 'apiKey', 'refreshSecret', 'pollInterval']);
  const checked = checkOptions(viteOptionsSchema, filled, { prefix: optionsPrefix });
  const { refreshSecret, refreshPath, pollInterval: _, dts = 'comfortable.d.ts', ...config } = filled;
  // nothing to sync is an error of the options too
  const { baseUrl, repository } = parseSyncConfig(config, optionsPrefix);
  // One cache per base URL and repository, so switching between two keeps each one's content.
  const cacheDir = originCacheDir(config.cacheDir ?? join(vite.cacheDir, 'comfortable'), { baseUrl, repository });
  const warning = env.CMFT_SNAPSHOT
    ? `CMFT_SNAPSHOT is set (${env.CMFT_SNAPSHOT}), but the Vite plugin does not serve a copy: it asks ` +
      `${baseUrl}. Serve the copy with npx comfortable-loader serve ${env.CMFT_SNAPSHOT} and set ` +
      `CMFT_BASE_URL and CMFT_API_KEY to its URL and local key.`
    : undefined;
  return {
    config: { ...config, cacheDir } as SharedConfig,
    refreshSecret,
    refreshPath,
    pollInterval: checked.pollInterval ?? defaultPollInterval,
    dts: dts === false ? undefined : isAbsolute(dts) ? dts : resolve(vite.root, dts),
    ...(warning ? { warning } : {}),
  };
}
