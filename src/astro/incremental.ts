import { relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AstroConfig, AstroIntegrationLogger } from 'astro';
import type { Plugin } from 'vite';
import { finish, type Prepared, prepare, scan } from './output.ts';

/**
 * The integration's part in Astro's incremental builds (`experimental.incrementalBuild`):
 *
 * - `dist/` is kept between builds and pruned after them (see output.ts), so a rebuild neither
 *   empties it nor copies back every page it reuses; it is on by default and the
 *   `incrementalOutput: false` option turns it off;
 * - Astro's image service is loaded when the pages' modules load (`imageServiceScript`, for
 *   `injectScript('page-ssr')`): Astro 7.3 loads it only when it renders a page, so a rebuild
 *   that reuses every page but must optimise an image again (its cache expired) fails with
 *   `InvalidImageService`;
 * - the `virtual:comfortable/` modules count as content, not code (`contentModulesPlugin`).
 *
 * Only static builds are handled, with `dist/` inside the project and no `emptyOutDir` of the
 * user's; every other case is left to Astro, with a line that says why.
 */
export class IncrementalBuild {
  #config: AstroConfig | undefined;
  #logger: AstroIntegrationLogger | undefined;
  /** Whether `dist/` is kept between builds here (decided at config setup). */
  #keep = false;
  /** What dist/ holds, read while Astro syncs the content. */
  #scan: ReturnType<typeof scan> | undefined;
  #prepared: Prepared | undefined;

  /**
   * At config setup: what to add to the config (Astro told to leave `dist/` alone) and the
   * script to inject into every page (`page-ssr`), or nothing when the build is not incremental.
   */
  setup(config: AstroConfig, command: string, enabled: boolean, logger: AstroIntegrationLogger) {
    if (command !== 'build' || !config.experimental?.incrementalBuild) return undefined;
    this.#config = config;
    this.#logger = logger;
    const why = enabled ? leftToAstro(config) : 'the incrementalOutput option is false';
    if (why) logger.info(`dist/ is emptied and filled again by Astro in each build: ${why}`);
    this.#keep = !why;
    return {
      config: why ? undefined : { vite: { build: { emptyOutDir: false } } },
      script: imageServiceScript,
      plugins: [contentModulesPlugin()],
    };
  }

  /** The resolved config (`astro:config:done`), whose folders are final: what dist/ holds is read meanwhile. */
  resolved(config: AstroConfig): void {
    if (!this.#config) return;
    this.#config = config;
    if (!this.#keep) return;
    this.#scan = scan(folder(config.outDir), folder(config.cacheDir));
    this.#scan.catch(() => {}); // awaited at build start
  }

  /** At build start: `dist/` made ready. */
  async start(): Promise<void> {
    if (!this.#scan) return;
    this.#prepared = await prepare(await this.#scan);
    if (this.#prepared.fallback)
      this.#logger?.warn(
        `${this.#prepared.fallback}: dist/ was emptied as Astro empties it, and every page Astro reuses is ` +
          `copied back by Astro`,
      );
  }

  /** At build done: pages no longer built removed, and one line of what was kept, restored and removed. */
  async done(assets: Map<string, URL[]>): Promise<void> {
    const prepared = this.#prepared;
    const config = this.#config;
    if (!prepared || !config) return;
    const produced = [...assets.values()]
      .flat()
      .map((url) => relative(prepared.outDir, fileURLToPath(url)).split(sep).join('/'));
    const done = await finish(prepared, folder(config.cacheDir), produced);
    const count = (n: number, noun: string) => `${n.toLocaleString('en-US')} ${noun}${n === 1 ? '' : 's'}`;
    this.#logger?.info(
      `dist/: ${count(done.rendered, 'page')} rendered, ${count(done.kept, 'page')} kept from the last build, ` +
        `${count(done.restored, 'page')} restored from Astro's cache, ${count(done.files, 'file')} of the last ` +
        `build removed (${count(done.pages, 'page')} no longer built)`,
    );
  }
}

/** A folder's path without a trailing separator. */
const folder = (url: URL) => fileURLToPath(url).replace(/[\\/]$/, '');

/** Why `dist/` is left to Astro, or undefined when it can be kept between builds. */
function leftToAstro(config: AstroConfig): string | undefined {
  if (config.output !== 'static') return `output is "${config.output}" (only static builds keep dist/)`;
  if (config.vite?.build?.emptyOutDir !== undefined)
    return `vite.build.emptyOutDir is set (${config.vite.build.emptyOutDir})`;
  const root = fileURLToPath(config.root);
  const outDir = fileURLToPath(config.outDir);
  const inside = relative(root, outDir);
  if (inside === '' || inside.startsWith('..') || resolve(root, inside) !== resolve(outDir))
    return `outDir ${outDir} is not a folder inside the project`;
  for (const folder of [config.srcDir, config.publicDir]) {
    if (!relative(outDir, fileURLToPath(folder)).startsWith('..'))
      return `outDir ${outDir} holds the project's ${fileURLToPath(folder)}`;
  }
  return undefined;
}

/**
 * Marks the `virtual:comfortable/` modules as content data, as Astro marks its own content
 * modules (`astroIncremental` in a module's meta, core/build/incremental-metadata.js): Astro then
 * leaves them out of the hash of a page's code, and a page's `cacheKey` alone says when what it
 * shows changed. Their code holds the content, so without this every edit changed that hash for
 * every page whose module graph reaches one: with `astro:i18n` imported (the way to make locale
 * URLs), Astro's app and so every page is in each page's graph, and a rebuild rendered them all.
 */
function contentModulesPlugin(): Plugin {
  return {
    name: 'comfortable-loader:content-modules',
    transform: {
      filter: { id: /^\0virtual:comfortable\// },
      handler: (code) => ({ code, meta: { astroIncremental: { kind: 'content-data' } } }),
    },
  };
}

/**
 * Loads the configured image service as the pages' own code does (`astro:assets`), when the
 * pages' modules load for `getStaticPaths`: a build that renders no page still has it when it
 * optimises the images of the pages it reuses.
 */
const imageServiceScript =
  "import { getConfiguredImageService } from 'astro:assets';\nawait getConfiguredImageService();";
