import { fileURLToPath } from 'node:url';
import type { AstroIntegration } from 'astro';
import { defaultBaseUrl } from '../api/client.ts';
import { z } from 'zod';
import { ConfigError, configProblem, syncConfigSchema } from '../sync/config.ts';
import type { SyncLogger } from '../sync/engine.ts';
import { changedIds, changedSources, type SharedConfig, sharedSync } from '../sync/shared.ts';
import { comfortableVite } from '../vite/plugin.ts';
import { defaultRefreshPath, refreshMiddleware } from '../vite/refresh.ts';
import { virtualModuleTypes } from './declarations.ts';
import { ImageHosts } from './image-hosts.ts';
import { loaderRegistry } from './registry.ts';

export interface ComfortableIntegrationOptions extends SharedConfig {
  /** Content type → the collection in `content.config.ts` that holds it, so relations become `reference()`s to it. */
  contentTypes?: Record<string, string>;
  /** Secret for the signed dev refresh endpoint; without it the endpoint is off. Read it from the environment. */
  refreshSecret?: string;
  /** Path of the dev refresh endpoint. Default `/_comfortable/refresh`. */
  refreshPath?: string;
}

const integrationSchema = syncConfigSchema
  .extend({
    contentTypes: z.record(z.string().min(1), z.string().min(1)).optional(),
    refreshSecret: z.string().min(16, 'expected a secret of at least 16 characters').optional(),
    refreshPath: z.string().regex(/^\/[^?#]*$/, 'expected a path such as /_comfortable/refresh').optional(),
  })
  .partial({ collections: true, aliases: true, queries: true });

/** Checks the options when the Astro config loads; a ConfigError names the option and what is allowed. */
export function parseIntegrationOptions(options: unknown): ComfortableIntegrationOptions {
  const result = integrationSchema.safeParse(options);
  if (!result.success) throw configProblem(result.error, 'comfortable.');
  return options as ComfortableIntegrationOptions;
}

/**
 * The Astro integration: connection, cache and failure policy for every `comfortableLoader()`,
 * the Vite plugin for `virtual:comfortable/...` imports, remote image patterns for the hosts of
 * the synced assets (see image-hosts.ts), and the signed dev refresh endpoint.
 *
 * @example
 * integrations: [comfortable({
 *   baseUrl: process.env.CMFT_BASE_URL, repository: 'demo', apiKey: process.env.CMFT_API_KEY,
 *   contentTypes: { post: 'posts', author: 'authors' }, refreshSecret: process.env.CMFT_REFRESH_SECRET,
 * })]
 */
export function comfortable(options: ComfortableIntegrationOptions): AstroIntegration {
  const { contentTypes = {}, refreshSecret, refreshPath = defaultRefreshPath, ...config } = parseIntegrationOptions(options);
  const shared = sharedSync();
  let hosts: ImageHosts | undefined;
  return {
    name: 'comfortable-loader',
    hooks: {
      'astro:config:setup': ({ config: astroConfig, updateConfig, logger, command }) => {
        const syncLogger: SyncLogger = { info: (m) => logger.info(m), warn: (m) => logger.warn(m) };
        const cacheDir = config.cacheDir ?? fileURLToPath(new URL('comfortable/', astroConfig.cacheDir));
        shared.configure({ ...config, cacheDir }, syncLogger);
        loaderRegistry().setContentTypes(contentTypes);
        hosts = new ImageHosts(cacheDir, logger);
        updateConfig({ image: { remotePatterns: hosts.atSetup(config.baseUrl ?? defaultBaseUrl, command) }, vite: { plugins: [comfortableVite()] } });
      },
      'astro:config:done': async ({ config: astroConfig, injectTypes }) => {
        hosts?.resolved(astroConfig.image);
        injectTypes({ filename: 'comfortable.d.ts', content: await virtualModuleTypes(shared) });
      },
      'astro:build:start': () => {
        hosts?.beforePages();
      },
      'astro:server:setup': ({ server, refreshContent, logger }) => {
        // One subscription per dev server, ended with it: it sees the first sync and every refresh.
        const unsubscribe = shared.onResult(() => hosts?.afterSync());
        server.httpServer?.once('close', unsubscribe);
        if (!refreshSecret) {
          logger.info('Dev refresh is off: set the refreshSecret option to enable the signed endpoint');
          return;
        }
        server.middlewares.use(
          refreshMiddleware({
            secret: refreshSecret,
            path: refreshPath,
            run: async (payload) => {
              const result = await shared.refresh(changedIds(payload));
              const sources = changedSources(result.changeset);
              const loaders = loaderRegistry().loadersFor(sources);
              if (loaders.length > 0 && refreshContent) await refreshContent({ loaders, context: { comfortable: { sources, payload } } });
              logger.info(`Refreshed ${sources.length} changed sources (${loaders.join(', ') || 'no loaders'})`);
              return { sources, loaders, records: result.changeset.records };
            },
          }),
        );
        logger.info(`Dev refresh endpoint: POST ${refreshPath} (signed with refreshSecret)`);
      },
    },
  };
}

export { ConfigError };
export { remotePatterns } from './image-hosts.ts';
