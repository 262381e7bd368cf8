import { notFoundTarget, type ReadApiErrorCode } from '../api/errors.ts';
import type { CacheError } from '../cache/index.ts';
import { cacheRootOf } from '../cache/origins.ts';
import type { SyncError } from './engine.ts';
import type { SharedSync } from './shared.ts';

/**
 * What to fix for a sync's failure: a sentence naming the option to check (the API key, the base
 * URL, the repository, a source's API id, the cache folder), for the errors a user fixes in the
 * options. The Astro loader shows it as an AstroError's hint, the Vite plugin after the message;
 * both say where the options are written, so this module knows neither Astro nor Vite.
 */

/** Where a project writes its options, for the hints to name them. */
export interface OptionsSite {
  /** The options call and the file it is written in, such as `comfortable() in astro.config`. */
  options: string;
  /** The folder a CI run keeps so that the cache outlives it, such as `node_modules/.astro`. */
  cacheFolder: string;
  /** The loaders that also name sources, and the file they are in (Astro's content config); none in plain Vite. */
  loaders?: { name: string; file: string };
}

/** The options a hint may name, and the key, kept only to scrub it from a message: a hint never names it. */
export interface HintSettings {
  baseUrl: string;
  repository: string;
  cacheDir: string | undefined;
  apiKey: string | undefined;
  /** The snapshot served in place of the CMS, if one is. */
  snapshot: string | undefined;
  onError: 'fail' | 'use-cache';
}

/** The settings of the shared sync's configuration, or undefined when it has none (that error says so itself). */
export function hintSettings(shared: SharedSync): HintSettings | undefined {
  try {
    const { baseUrl, repository, cacheDir, apiKey, onError } = shared.config();
    // The cacheDir option holds a cache per origin (see cache/origins.ts): a hint names the option.
    return {
      baseUrl,
      repository,
      cacheDir: cacheDir && cacheRootOf(cacheDir),
      apiKey,
      onError,
      snapshot: shared.snapshot,
    };
  } catch {
    return undefined;
  }
}

/**
 * The codes of this package's errors. They are told apart by code, not class: in Astro the
 * integration (loaded with astro.config) runs the sync, and the loaders (loaded with
 * content.config) catch its errors, each with its own copy of the modules, so `instanceof` would fail.
 */
export type HintedCode = ReadApiErrorCode | CacheError['code'] | SyncError['code'] | 'config';

/** The error a sync's failure stands for (a server failure wraps what the client threw), with its code. */
export function rootOf(error: Error): Error & { code?: HintedCode; url?: string } {
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  return code === 'server_failed' && cause instanceof Error ? cause : error;
}

/** The hint for an error (its root, see `rootOf`), or undefined when it is none a user fixes in the options. */
export function hintFor(
  error: { code?: HintedCode; url?: string },
  settings: HintSettings,
  site: OptionsSite,
): string | undefined {
  const { baseUrl, cacheDir } = settings;
  const folder = `Check the cacheDir option of comfortable() (${cacheDir ?? `default: ${site.cacheFolder}/comfortable`})`;
  // In CI a failing CMS fails the build by default: say how to build from the last content instead.
  const inCi =
    settings.onError === 'fail' && process.env.CI
      ? ` In CI (the CI variable is set) a build fails when the CMS does; with onError: 'use-cache' in comfortable() it builds from the content of the last sync instead, with a warning (keep ${site.cacheFolder} between runs).`
      : '';
  const sourceOptions = site.loaders
    ? `of ${site.loaders.name}() in ${site.loaders.file}, and the collections, aliases and queries of comfortable()`
    : `the collections, aliases and queries of ${site.options}`;
  switch (error.code) {
    case 'authentication':
      return `The Read API at ${baseUrl} refused the API key. Check the apiKey option of ${site.options}, and the environment variable it is read from (CMFT_API_KEY by default): it must be a Read API key of the repository "${settings.repository}".`;
    case 'network':
    case 'timeout':
      return `The Read API at ${baseUrl} could not be reached. Check the baseUrl option of ${site.options} (CMFT_BASE_URL by default), and that the server is up and reachable from this machine.${inCi}`;
    case 'not_found':
      return typeof error.url === 'string' ? notFoundHint(error.url, settings, site) : undefined;
    case 'server':
      return `The Read API at ${baseUrl} kept failing through every retry. Try again later; with onError: 'use-cache', a build uses the content of the last sync while the server fails.${inCi}`;
    case 'rate_limited':
      return `The Read API at ${baseUrl} kept answering that there were too many requests. Lower the concurrency option of comfortable() (default 8), or try again later.`;
    case 'bad_request':
      return `The Read API refused the options of a request. Check the options of the sources: ${sourceOptions}.`;
    case 'unexpected_answer':
      return `Check the baseUrl option of comfortable() (${baseUrl}): it must be the base URL of a Read API, such as https://api.cmft.io/v1.`;
    case 'cache_unwritable':
      return `${folder}: it must be a folder this process may create and write.`;
    case 'cache_full':
      return `${folder}: its disk is full. Free some space, or choose a folder on another disk.`;
    case 'cache_busy':
      return `${folder}: another sync of the same folder held it for two minutes. Wait for it to finish, or give this build a folder of its own.`;
    case 'cache_damaged':
      return `${folder}: the cache in it is damaged. Delete the folder and build again.`;
    case 'offline_without_cache':
      return `Check the mode option of comfortable(): "offline" reads only the cache, and there is none in ${cacheDir ?? 'the cache folder'}. Build once with mode "incremental" (the default), or keep the cache folder between builds.`;
    case 'config':
      return `Check the options of ${site.options}${site.loaders ? ` and of ${site.loaders.name}() in ${site.loaders.file}` : ''}.`;
    default:
      return undefined;
  }
}

/** A 404: of the repository, or of a collection or alias a loader or the options name. */
function notFoundHint(url: string, { baseUrl, repository, snapshot }: HintSettings, site: OptionsSite): string {
  const named = notFoundTarget(url);
  const list = named?.kind === 'collection' ? 'collections' : 'aliases';
  // Plain Vite names sources only in the options; Astro's loaders name them in the content config too.
  const whereNamed = site.loaders ? site.loaders.file : `the ${list} option of ${site.options}`;
  if (named && snapshot) {
    return `The snapshot ${snapshot} has no ${named.kind} "${named.apiId}": a copy holds the collections and aliases of the config it was pulled with. Add "${named.apiId}" to the ${list} of that config (comfortable.config.mjs) and run npx comfortable-loader pull again, or check the ${named.kind} API id in ${whereNamed}.`;
  }
  if (named && site.loaders) {
    const option = named.kind === 'collection' ? 'collection: …' : 'aliases: […]';
    return `The repository "${repository}" has no ${named.kind} "${named.apiId}". Check the ${named.kind} API id in ${site.loaders.file} (${site.loaders.name}({ ${option} })) and in the options of comfortable().`;
  }
  if (named)
    return `The repository "${repository}" has no ${named.kind} "${named.apiId}". Check the ${named.kind} API id in ${whereNamed}.`;
  if (!/\/v\d+\/?$/.test(new URL(baseUrl).pathname)) {
    return `Check the baseUrl option of comfortable() (${baseUrl}, CMFT_BASE_URL by default): the Read API's base URL ends in its version, such as https://api.cmft.io/v1. Then check the repository option ("${repository}").`;
  }
  return `Check the repository option of comfortable() ("${repository}"): it must be the API id of a repository at ${baseUrl}, one the API key may read. Check the baseUrl option too.`;
}
