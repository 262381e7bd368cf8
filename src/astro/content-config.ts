import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Which collections Astro's content config has, and the name of each one's loader, as Astro
 * itself last evaluated the config: the one set of collections a sync of Astro loads.
 *
 * Astro evaluates `src/content.config.ts` whenever a `.json`, `.yaml`, `.md`… file of the project
 * is saved, and syncs only when the config's text changed; a page that imports `astro:content`
 * evaluates it in the page runner too. So the loader objects made, and how often they are made,
 * say nothing of what loads. Astro keeps the config it syncs from in one observer
 * (`globalContentConfigObserver` of `astro/dist/content/utils.js`, read by its content layer at
 * the start of each sync): it is read here, and nothing else of Astro's internals. Should a
 * version of Astro move it, every load fails with an error that says so, rather than making
 * references from a guess (see docs/decisions.md).
 */

/** The collections of Astro's content config whose loader is a `comfortableLoader()`, with their loaders' names. */
export type AstroCollections = ReadonlyMap<string, string>;

type ObserverState =
  | { status: 'loaded'; config: { collections: Record<string, { loader?: unknown }> } }
  | { status: 'init' | 'loading' | 'does-not-exist' | 'error' };

/** What this package reads of Astro's content config observer. */
export interface ContentConfigObserver {
  get(): ObserverState;
}

/** Loader names of this package start so (loader.ts). */
export const loaderNamePrefix = 'comfortable:';

/** The comfortable collections of a loaded config; undefined while Astro has none loaded. */
export function collectionsOf(state: ObserverState): AstroCollections | undefined {
  if (state.status !== 'loaded') return undefined;
  const loaders = new Map<string, string>();
  for (const [collection, config] of Object.entries(state.config.collections ?? {})) {
    const name = (config?.loader as { name?: unknown } | undefined)?.name;
    if (typeof name === 'string' && name.startsWith(loaderNamePrefix)) loaders.set(collection, name);
  }
  return loaders;
}

/**
 * Astro's content config observer, from the Astro that runs the project at `root` (the same
 * module instance as Astro's own, as Node loads a file once); an Error that says what is
 * missing when that Astro does not have it.
 */
export async function astroContentConfigObserver(root: URL): Promise<ContentConfigObserver | Error> {
  try {
    const astroPackage = createRequire(fileURLToPath(new URL('package.json', root))).resolve('astro/package.json');
    const utils = (await import(
      /* @vite-ignore */ pathToFileURL(join(dirname(astroPackage), 'dist/content/utils.js')).href
    )) as {
      globalContentConfigObserver?: Partial<ContentConfigObserver>;
    };
    const observer = utils.globalContentConfigObserver;
    if (typeof observer?.get === 'function') return observer as ContentConfigObserver;
    return new Error('astro/dist/content/utils.js has no globalContentConfigObserver');
  } catch (error) {
    return error as Error;
  }
}
