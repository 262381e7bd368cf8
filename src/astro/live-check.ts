import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AstroIntegrationLogger } from 'astro';
import type { Plugin, RunnableDevEnvironment } from 'vite';
import { ConfigError } from '../sync/config.ts';
import { configFile } from './config-modules.ts';
import { optionsProblem } from './live-problem.ts';

/**
 * The options of the live loaders, checked where the site is built and when `astro dev` starts.
 * Astro evaluates `src/live.config.ts` only when a page reads a live collection; this plugin
 * evaluates it in the module runner of each Vite dev server Astro makes: the one that syncs the
 * content of `astro build` (and `astro sync`, `astro check`) and the one of `astro dev`. A
 * loader whose options are wrong (see live-problem.ts) fails that server, so the build or the
 * dev server stops with the option and the suggestion. Nothing is asked of the CMS (a loader
 * asks only on a request) and no key is needed; without a live config nothing is done.
 */

/** The files Astro takes for the live config, in its order (astro/dist/content/utils.js). */
const liveConfigNames = ['live.config.mjs', 'live.config.js', 'live.config.mts', 'live.config.ts'];

/** The Vite plugin the integration adds; `root` and `srcDir` are Astro's. */
export function liveConfigCheck(root: URL, srcDir: URL, logger: AstroIntegrationLogger): Plugin {
  return {
    name: 'comfortable-loader:live-config-check',
    async configureServer(server) {
      const path = configFile(srcDir, liveConfigNames);
      // The runner pages use, else Astro's own (an adapter whose server code runs outside Node).
      const runner = [server.environments.ssr, server.environments.astro]
        .map((environment) => (environment as Partial<RunnableDevEnvironment> | undefined)?.runner)
        .find((found) => found !== undefined);
      if (!path || !runner) return;
      const shown = relative(fileURLToPath(root), path);
      const started = performance.now();
      let collections: unknown;
      try {
        ({ collections } = (await runner.import(path)) as { collections?: unknown });
      } catch (error) {
        logger.warn(
          `The options of the live collections were not checked: ${shown} failed to load here ` +
            `(${(error as Error).message ?? error}). If it fails where the server runs too, every page that reads a ` +
            'live collection fails.',
        );
        return;
      }
      const problems = Object.entries(collections ?? {}).flatMap(
        ([name, collection]) => optionsProblem((collection as { loader?: unknown } | null)?.loader, name, shown) ?? [],
      );
      logger.debug(
        `Checked the options of the live collections in ${shown} in ${Math.round(performance.now() - started)} ms`,
      );
      if (problems.length === 0) return;
      const error = new ConfigError(problems[0]!.option, problems.map((problem) => problem.message).join('\n'));
      error.stack = error.message; // the message says it all; a stack of this check would only bury it
      throw error;
    },
  };
}
