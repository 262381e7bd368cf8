import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AstroIntegration } from 'astro';
import { defaultBaseUrl } from '../api/client.ts';
import { z } from 'zod';
import { checkOptions, ConfigError, contentTypesSchema } from '../sync/config.ts';
import { readEnv, withEnv } from '../api/env.ts';
import { changedSources, type SharedConfig, sharedSync } from '../sync/shared.ts';
import type { ReloadEvent } from '../server/repositories.ts';
import { type ContentOrigin, originCacheDir, touchOrigin } from '../cache/index.ts';
import { virtualModulesPlugin } from '../vite/plugin.ts';
import { startDevLoop } from '../vite/dev-loop.ts';
import { defaultPollInterval, pollIntervalSchema } from '../vite/poll.ts';
import { defaultRefreshPath } from '../vite/refresh.ts';
import { hostOptionsSchema } from '../vite/options.ts';
import { useFileLinks } from '../entries/file-links.ts';
import { CopyFiles, copyIntoBuild } from './copy-files.ts';
import { reloadDataStore } from './dev-store.ts';
import { liveConfigCheck } from './live-check.ts';
import { virtualModuleTypes } from './declarations.ts';
import { ImageHosts } from './image-hosts.ts';
import { IncrementalBuild } from './incremental.ts';
import { astroContentConfigObserver } from './content-config.ts';
import { astroLocalesSchema, LocaleMap } from './i18n.ts';
import { loaderRegistry, type RefreshContext } from './registry.ts';
import { type ServedSnapshot, serveSnapshot } from './snapshot.ts';
import { serveToolbar, toolbarApp } from './toolbar.ts';

const integrationSchema = hostOptionsSchema.extend({
  /** Content type → the collection in `content.config.ts` that holds it, so relations become `reference()`s to it. */
  contentTypes: contentTypesSchema.optional(),
  /**
   * With `i18n` in astro.config: the repository's locales → Astro's, where the codes do not match
   * by themselves (`fr_FR` finds `fr-FR` or `fr` alone); `false` leaves a locale out.
   * @example astroLocales: { en_GB: 'en', de_CH: false }
   */
  astroLocales: astroLocalesSchema.optional(),
  /**
   * With `experimental.incrementalBuild`: keep `dist/` between builds and remove what a build no
   * longer produces, instead of Astro emptying it and copying every reused page back. Default true.
   */
  incrementalOutput: z.boolean().optional(),
  /**
   * A snapshot file (`comfortable-loader pull` writes one) to serve in-process instead of asking
   * the CMS: no key, no network. Relative to the project root. Default: `CMFT_SNAPSHOT`. Its
   * files other than images become files of the site (`<base>_comfortable/files/…`), copied into
   * the build; it keeps a cache of its own, apart from the CMS's (see docs/pull.md).
   * @example snapshot: 'content/acme.json'
   */
  snapshot: z.string().min(1, 'expected the path of a snapshot file, such as content/acme.json').optional(),
});
/** The options as `comfortable()` is given them: the connection may still come from the environment. */
const givenSchema = integrationSchema.partial({ repository: true, apiKey: true });

/** Options of `comfortable()` from `comfortable-loader/astro`: those of the sync, and the integration's own. */
export type ComfortableIntegrationOptions = z.input<typeof givenSchema>;

/**
 * Checks the options, the connection included (the environment's already filled in); a
 * ConfigError names the option and what is allowed.
 */
export function parseIntegrationOptions(options: unknown): ComfortableIntegrationOptions & SharedConfig {
  checkOptions(integrationSchema, options, { prefix: 'comfortable.' });
  return options as ComfortableIntegrationOptions & SharedConfig;
}

/** The error of a connection (repository, key) that is not given, or undefined when it is. */
function missingConnection(options: unknown): ConfigError | undefined {
  try {
    parseIntegrationOptions(options);
  } catch (error) {
    if (error instanceof ConfigError && ['comfortable.repository', 'comfortable.apiKey'].includes(error.option))
      return error;
  }
  return undefined; // none, or another problem: the check of the options given tells it
}

/**
 * The mode Astro runs in, which picks the `.env.<mode>` files as Vite does: `--mode` when given,
 * else development for `astro dev` and production for the other commands, as Astro has it.
 */
function astroMode(command: string): string {
  const { argv } = process;
  const at = argv.indexOf('--mode');
  const flag = at >= 0 ? argv[at + 1] : argv.find((arg) => arg.startsWith('--mode='))?.slice('--mode='.length);
  return flag || (command === 'dev' ? 'development' : 'production');
}

/**
 * The Astro integration: connection, cache and failure policy for every `comfortableLoader()`,
 * the Vite plugin for `virtual:comfortable/...` imports, remote image patterns for the hosts of
 * the synced assets (see image-hosts.ts), and the signed dev refresh endpoint. Options it is
 * not given are read from `CMFT_BASE_URL`, `CMFT_REPOSITORY`, `CMFT_API_KEY` and
 * `CMFT_REFRESH_SECRET`, in the environment or in `.env` files (as Vite reads them, for the
 * mode Astro runs in), so `comfortable()` with a `.env` is a whole setup.
 *
 * @example
 * integrations: [comfortable({ contentTypes: { post: 'posts', author: 'authors' } })]
 */
export function comfortable(options: ComfortableIntegrationOptions = {}): AstroIntegration {
  checkOptions(givenSchema, options, { prefix: 'comfortable.' });
  const shared = sharedSync();
  let hosts: ImageHosts | undefined;
  let refresh: { secret: string | undefined; path: string; poll: number | false } | undefined;
  const incremental = new IncrementalBuild();
  let served: ServedSnapshot | undefined;
  let copyFiles: CopyFiles | undefined;
  let cacheDir: string | undefined;
  return {
    name: 'comfortable-loader',
    hooks: {
      'astro:config:setup': async ({
        config: astroConfig,
        updateConfig,
        injectScript,
        addDevToolbarApp,
        logger,
        command,
      }) => {
        if (command === 'dev') addDevToolbarApp(toolbarApp);
        const root = fileURLToPath(astroConfig.root);
        const envDir = astroConfig.vite?.envDir ?? root;
        const env = readEnv(envDir === false ? false : resolve(root, envDir), astroMode(command));
        // An empty CMFT_SNAPSHOT (or snapshot option) means the CMS, so CI can set it by condition.
        const filled: ComfortableIntegrationOptions = withEnv(options, env);
        if (!filled.snapshot) delete filled.snapshot;
        if (filled.snapshot) {
          await served?.server.close(); // a restarted dev server sets up again
          // Each request it answers, with astro --verbose.
          served = await serveSnapshot(resolve(root, filled.snapshot), {
            repository: filled.repository,
            fromEnv: !options.snapshot,
            watch: command === 'dev',
            warn: (line) => logger.warn(line),
            log: (line) => logger.debug(line),
          });
          logger.info(`Serving the snapshot ${filled.snapshot} in-process at ${served.baseUrl}: the CMS is not asked`);
          if (served.portNote) logger.warn(served.portNote);
        }
        const connection = served && { baseUrl: served.baseUrl, repository: served.repository, apiKey: served.apiKey };
        const given = { ...filled, ...connection };
        // A site that builds only live collections needs no connection here: the first sync says it is missing.
        const missing = missingConnection(given);
        const {
          contentTypes = {},
          astroLocales,
          refreshSecret,
          refreshPath = defaultRefreshPath,
          pollInterval = defaultPollInterval,
          incrementalOutput = true,
          snapshot: _,
          ...config
        } = missing ? checkOptions(givenSchema, given, { prefix: 'comfortable.' }) : parseIntegrationOptions(given);
        // Checked above; from the environment it is still a string such as "3000" or "off".
        const poll = pollIntervalSchema.parse(pollInterval);
        refresh = { secret: refreshSecret, path: refreshPath, poll: served ? false : poll };
        // One cache per origin, so a switch between the copy and the CMS keeps each one's content.
        const origin: ContentOrigin = served
          ? { snapshot: relative(root, resolve(root, filled.snapshot!)) }
          : { baseUrl: config.baseUrl ?? defaultBaseUrl, repository: config.repository ?? '' };
        cacheDir = originCacheDir(
          config.cacheDir ?? fileURLToPath(new URL('comfortable/', astroConfig.cacheDir)),
          origin,
        );
        if (astroLocales && !astroConfig.i18n)
          throw new ConfigError(
            'astroLocales',
            'Invalid option astroLocales of comfortable(): astro.config has no i18n, so there is no Astro locale ' +
              'to map to; add i18n (https://docs.astro.build/en/guides/internationalization/) or remove astroLocales',
          );
        const registry = loaderRegistry();
        registry.configure(
          { contentTypes, locales: astroConfig.i18n ? new LocaleMap(astroConfig.i18n, astroLocales) : undefined },
          await astroContentConfigObserver(astroConfig.root),
        );
        // The loaders' sources are those of the loaders of Astro's content config, at each sync.
        shared.configure({ ...config, cacheDir } as SharedConfig, logger, served && filled.snapshot, () => {
          if (missing) throw missing;
          return registry.sources();
        });
        hosts = new ImageHosts(cacheDir, logger);
        const incrementalSetup = incremental.setup(astroConfig, command, incrementalOutput, logger);
        if (incrementalSetup) injectScript('page-ssr', incrementalSetup.script);
        updateConfig({
          image: { remotePatterns: hosts.atSetup(config.baseUrl ?? defaultBaseUrl, command) },
          vite: {
            plugins: [
              virtualModulesPlugin(),
              liveConfigCheck(astroConfig.root, astroConfig.srcDir, logger),
              ...(incrementalSetup?.plugins ?? []),
            ],
            ...incrementalSetup?.config?.vite,
          },
        });
      },
      'astro:config:done': async ({ config: astroConfig, injectTypes }) => {
        incremental.resolved(astroConfig);
        copyFiles =
          served &&
          new CopyFiles({
            origin: served.server.origin,
            repository: served.repository,
            base: astroConfig.base,
            file: served.file,
            files: served.files,
          });
        useFileLinks(copyFiles);
        await hosts?.resolved(astroConfig.image);
        injectTypes({ filename: 'comfortable.d.ts', content: await virtualModuleTypes(shared) });
      },
      'astro:build:start': async () => {
        hosts?.beforePages();
        await incremental.start();
      },
      'astro:build:done': async ({ assets, dir, logger }) => {
        await incremental.done(assets);
        await served?.server.close();
        if (copyFiles && cacheDir) await copyIntoBuild(copyFiles, fileURLToPath(dir), cacheDir, logger);
      },
      'astro:server:setup': ({ server, refreshContent, toolbar, logger }) => {
        const registry = loaderRegistry();
        let syncedAt: Date | undefined;
        let lastModel: string | undefined;
        const loop = startDevLoop({
          shared,
          pollInterval: refresh?.poll ?? false,
          endpoint: refresh?.secret ? { secret: refresh.secret, path: refresh.path } : undefined,
          middlewares: server.middlewares,
          log: logger,
          // Astro's own syncs load what they read; a sync outside them (a poll, a refresh) reloads the loaders
          // whose sources it changed, which read that sync's result.
          follow: async (result, { outside }) => {
            syncedAt = new Date();
            hosts?.afterSync();
            if (cacheDir) touchOrigin(cacheDir); // in use as long as the dev server runs
            const sources = changedSources(result.changeset);
            const model = JSON.stringify(result.cache.head.model);
            const remodelled = model !== lastModel;
            lastModel = model;
            const loaders =
              (outside && registry.current?.loadersChangedBy(result.cache, result.changeset, remodelled)) || [];
            if (loaders.length === 0 || !refreshContent) return [];
            const context: RefreshContext = { comfortable: { loaders, sources } };
            await refreshContent({ loaders, context });
            reloadDataStore(server);
            return loaders;
          },
        });
        server.httpServer?.once('close', () => loop.stop());
        serveToolbar(toolbar, {
          served: () => {
            const result = shared.latest;
            const collections = registry.current;
            return result && collections && { cache: result.cache, collections, syncedAt: syncedAt ?? new Date() };
          },
          sync: () => loop.refresh({ toolbar: true }),
        });
        if (copyFiles) server.middlewares.use(copyFiles.middleware());
        if (served) {
          // The snapshot file changed (a new pull, an edit): what changed is refreshed, as a webhook would have it.
          const { server: api } = served;
          const onReload = (event: ReloadEvent) =>
            void loop
              .refresh(event)
              .catch((error: Error) => logger.error(`Refresh after the snapshot changed failed: ${error.message}`));
          api.events.on('reload', onReload);
          server.httpServer?.once('close', () => {
            api.events.off('reload', onReload);
            void api.close();
          });
          logger.info(`Dev follows edits of ${served.file}`);
        } else if (refresh?.poll) {
          logger.info(`Dev asks the CMS for changes every ${refresh.poll / 1000} s`);
        }
        if (refresh?.secret) logger.info(`Dev refresh endpoint: POST ${refresh.path} (signed with the refresh secret)`);
      },
    },
  };
}

export { ConfigError };
export { remotePatterns } from './image-hosts.ts';
