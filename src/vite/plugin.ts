import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Environment, Plugin, ResolvedConfig } from 'vite';
import type { SyncResult } from '../sync/engine.ts';
import type { VirtualEntry } from '../entries/entries.ts';
import { readEnv } from '../api/env.ts';
import { changedSources, sharedSync } from '../sync/shared.ts';
import { declarationFile } from './declarations.ts';
import { userFacing, viteError } from './errors.ts';
import { moduleData, parseVirtualId, virtualModule, virtualPrefix } from './module.ts';
import { checkGivenOptions, type ComfortableViteOptions, resolveViteOptions } from './options.ts';
import { startDevLoop } from './dev-loop.ts';

/**
 * Build-time imports of synced content through `virtual:comfortable/...` modules (see
 * module.ts); in dev, a refresh invalidates them and reloads the page. The shared sync outlives
 * a restarted dev server (it lives on globalThis): each new config replaces its sources, and
 * everything else (the round this plugin reads, its listener, the refresh endpoint) belongs to
 * one server and ends with it.
 */

/** What other plugins of the same config can ask the plugin (a page per entry in `generateBundle`). */
export interface ComfortableViteApi {
  /**
   * The entries `virtual:comfortable/<path>` gives, synced first if they are not yet: a
   * collection's or query's in every locale (`collections/posts`) or in one
   * (`collections/posts/de_DE`), an alias's one per locale (`aliases/home`).
   * @example for (const post of await content.api.entries('collections/posts/en_US')) this.emitFile({ type: 'asset',
   * fileName: `posts/${post.id}.html`, source: page(post) });
   */
  entries(path: string): Promise<VirtualEntry[]>;
}

/**
 * The Vite plugin, for plain Vite. Options it is not given come from `CMFT_BASE_URL`,
 * `CMFT_REPOSITORY`, `CMFT_API_KEY` and `CMFT_REFRESH_SECRET`, in the environment or Vite's
 * `.env` files for its mode. A wrong option fails when the config loads.
 *
 * @example plugins: [comfortable({ collections: { posts: {} }, aliases: ['home'] })]
 */
export function comfortableVite(options: ComfortableViteOptions = {}): Plugin & { api: ComfortableViteApi } {
  try {
    checkGivenOptions(options);
  } catch (error) {
    throw userFacing(error as Error);
  }
  return virtualModulesPlugin(options);
}

/**
 * The plugin; with `options` it configures the shared sync (plain Vite), without it reads what
 * the Astro integration configured.
 */
export function virtualModulesPlugin(options?: ComfortableViteOptions): Plugin & { api: ComfortableViteApi } {
  const shared = sharedSync();
  let resolved: Partial<ReturnType<typeof resolveViteOptions>> = {};
  let vite: ResolvedConfig | undefined;
  /** This plugin's subscriptions to the shared sync, one per dev server, each with that server's environments. */
  const subscriptions = new Set<{ environments: Environment[]; end: () => void }>();

  /** Writes the declaration file when its text changed; a failure to write is a warning, never a failed sync. */
  const declare = async (result: SyncResult) => {
    const { dts } = resolved;
    if (!dts) return;
    const text = declarationFile(result.cache);
    try {
      if ((await readFile(dts, 'utf8').catch(() => undefined)) === text) return;
      await mkdir(dirname(dts), { recursive: true });
      await writeFile(dts, text);
    } catch (error) {
      vite?.logger.warn(
        `comfortable-loader could not write the declarations to ${dts} (${(error as Error).message}): set ` +
          `the dts option of comfortable() to another file, or to false`,
      );
    }
  };

  let pending: Promise<SyncResult> | undefined;
  /**
   * The content served: the last sync's, whoever ran it (in astro dev, Astro's loaders), else a
   * round of this plugin's own; a failed one is not kept, so the next import after a fix syncs again.
   */
  const current = (): Promise<SyncResult> => {
    if (shared.latest) return Promise.resolve(shared.latest);
    pending ??= shared
      .acquire({})
      .then(async (result) => {
        await declare(result);
        return result;
      })
      .finally(() => (pending = undefined));
    return pending;
  };
  const told = async <T>(read: () => Promise<T>): Promise<T> => {
    try {
      return await read();
    } catch (error) {
      throw viteError(error, shared);
    }
  };

  return {
    name: 'comfortable-loader',
    api: {
      entries: (path) =>
        told(async () =>
          shared.read(await current(), (result) => moduleData(result, `${virtualPrefix}${path}`).entries),
        ),
    },
    configResolved(config) {
      vite = config;
      if (!options) return;
      try {
        const {
          config: syncConfig,
          warning,
          ...own
        } = resolveViteOptions(options, readEnv(config.envDir, config.mode), config);
        resolved = own;
        if (warning) config.logger.warn(warning);
        // Replaces the sources, connection and round of the last config, a restarted server's included.
        shared.configure(syncConfig, {
          info: (message) => config.logger.info(message),
          warn: (message) => config.logger.warn(message),
        });
      } catch (error) {
        throw userFacing(error as Error);
      }
    },
    async buildStart() {
      // A build syncs before any module is transformed, so a wrong key or id fails it once, first.
      if (options && vite?.command === 'build') await told(current);
    },
    resolveId: {
      filter: { id: /^virtual:comfortable\// },
      handler(id) {
        return parseVirtualId(id) ? `\0${id}` : undefined;
      },
    },
    load: {
      filter: { id: /^\0virtual:comfortable\// },
      handler(id) {
        return told(async () => shared.read(await current(), (result) => virtualModule(result, id.slice(1))));
      },
    },
    configureServer(server) {
      const { refreshSecret, refreshPath, pollInterval } = resolved;
      const loop = startDevLoop({
        shared,
        // Not under Vitest (mode test): the content of a test run does not change under it.
        pollInterval: server.config.mode === 'test' ? false : (pollInterval ?? false),
        endpoint: refreshSecret ? { secret: refreshSecret, path: refreshPath } : undefined,
        middlewares: server.middlewares,
        log: {
          info: (message) => server.config.logger.info(message, { timestamp: true }),
          warn: (message) => server.config.logger.warn(message, { timestamp: true }),
          error: (message) => server.config.logger.error(message, { timestamp: true }),
        },
        // The modules read the latest sync, whoever started it (this plugin, Astro's loaders, a poll, a refresh).
        follow: async (result, { polled }) => {
          const sources = changedSources(result.changeset);
          // An ask of the CMS that found nothing: no page to reload. Anything else, asked for, reloads it.
          if (polled && sources.length === 0) return [];
          void declare(result);
          for (const environment of Object.values(server.environments)) {
            for (const module of environment.moduleGraph.idToModuleMap.values()) {
              if (module.id?.startsWith(`\0${virtualPrefix}`)) environment.moduleGraph.invalidateModule(module);
            }
          }
          server.ws.send({ type: 'full-reload' });
          return sources;
        },
      });
      // Ended when this server's environments close (see closeBundle), in middleware mode and on a restart too.
      subscriptions.add({ environments: Object.values(server.environments), end: () => loop.stop() });
      // Content is synced as the server starts, so the declaration file is there before the first page.
      if (options)
        void told(current).catch((error: Error) => server.config.logger.error(error.message, { timestamp: true }));
    },
    closeBundle() {
      // In dev, Vite closes each environment of a server that closes or restarts with this hook.
      for (const subscription of subscriptions) {
        if (subscription.environments.includes(this.environment)) {
          subscription.end();
          subscriptions.delete(subscription);
        }
      }
    },
  };
}

export { parseVirtualId, virtualModule, virtualPrefix };
export type { ComfortableViteOptions };
