import { notFoundTarget, type ReadApiErrorCode } from './errors.ts';

/**
 * What to fix for a failure, by its cause: a sentence naming the option to check (the API key,
 * the base URL, the repository, a source's API id, the cache folder). The one table of them,
 * for every place that tells a failure: the client after its message, the live loader after
 * its own, and a sync's (the Astro loader's hint, the Vite plugin's message), which stands
 * apart from the message and so says first what happened. Each says where its options are
 * written (an `OptionsSite`), so this module knows neither Astro nor Vite.
 */

/** Where the options a hint names are written, and who tells it. */
export interface OptionsSite {
  kind: 'sync' | 'live' | 'client';
  /** The call that takes the options, such as `comfortable()`. */
  call: string;
  /** The call and the file it is written in, such as `comfortable() in astro.config`. */
  options: string;
  /** A sync's: the folder a CI run keeps so that the cache outlives it, such as `node_modules/.astro`. */
  cacheFolder?: string;
  /** A sync's: the loaders that also name sources, and their file (Astro's content config). */
  loaders?: { name: string; file: string };
  /** A live loader's: the request options its source takes (an aliases source takes only `includes`). */
  requestOptions?: string;
}

/** The options a hint may name, and the key, kept only to scrub it from a message: a hint never names it. */
export interface HintSettings {
  baseUrl: string;
  /** The repository's API id (the client's hints name none). */
  repository?: string | undefined;
  cacheDir?: string | undefined;
  apiKey?: string | undefined;
  /** The snapshot served in place of the CMS (`CMFT_SNAPSHOT`), if one is. */
  snapshot?: string | undefined;
  onError?: 'fail' | 'use-cache' | undefined;
}

/**
 * The codes a hint is found by: the client's, the cache's and the sync's. They are told apart by
 * code, not class: in Astro the integration (loaded with astro.config) runs the sync, and the
 * loaders (loaded with content.config) catch its errors, each with its own copy of the modules.
 */
type HintedCode =
  | ReadApiErrorCode
  | 'cache_unwritable'
  | 'cache_full'
  | 'cache_busy'
  | 'cache_damaged'
  | 'offline_without_cache'
  | 'config';

/** What a hint reads of an error: its code, its URL (for a 404) and its attempts. */
interface HintedError {
  code?: string | undefined;
  url?: string | undefined;
  attempts?: number | undefined;
}

type Hint = (error: HintedError, settings: HintSettings, site: OptionsSite) => string | undefined;

const unreachable: Hint = ({ code }, { baseUrl, onError, snapshot }, site) => {
  if (site.kind === 'live') {
    // Said to a user offline on a copy: live collections run where the site is served, and ask the CMS.
    const copy = snapshot
      ? ' CMFT_SNAPSHOT is set, but live collections do not serve a copy: they ask the baseUrl they are given. ' +
        `To use the copy, serve it with npx comfortable-loader serve ${snapshot} and point baseUrl and apiKey ` +
        'at it, with the local key the pull printed.'
      : '';
    const timeouts = code === 'timeout' ? ' The timeouts option sets how long a request may take.' : '';
    return (
      `Check the baseUrl option of ${site.options} (${baseUrl}), and that the server is up and reachable from ` +
      `this server.${timeouts}${copy}`
    );
  }
  return (
    `The Read API at ${baseUrl} could not be reached. Check the baseUrl option of ${site.options} ` +
    `(CMFT_BASE_URL by default), and that the server is up and reachable from this machine.${inCi(onError, site)}`
  );
};

/** In CI a failing CMS fails the build by default: how to build from the last content instead. */
function inCi(onError: HintSettings['onError'], site: OptionsSite): string {
  return onError === 'fail' && process.env.CI
    ? " In CI (the CI variable is set) a build fails when the CMS does; with onError: 'use-cache' in comfortable() " +
        `it builds from the content of the last sync instead, with a warning (keep ${site.cacheFolder} between runs).`
    : '';
}

/** The cache folder's hint, before what is wrong with it. */
const folder = ({ cacheDir }: HintSettings, site: OptionsSite) =>
  `Check the cacheDir option of comfortable() (${cacheDir ?? `default: ${site.cacheFolder}/comfortable`})`;

const hints: Record<HintedCode, Hint> = {
  authentication: (_, { baseUrl, repository }, site) => {
    const said = site.kind === 'sync' ? `The Read API at ${baseUrl} refused the API key. ` : '';
    const variable = site.kind === 'sync' ? 'by default' : 'in the examples';
    return (
      `${said}Check the apiKey option of ${site.options}, and the environment variable it is read from ` +
      `(CMFT_API_KEY ${variable}): it must be a Read API key of the repository "${repository}".`
    );
  },
  network: unreachable,
  timeout: unreachable,
  not_found: notFound,
  server: (_, { baseUrl, onError }, site) => {
    const through = `The Read API at ${baseUrl} kept failing through every retry`;
    if (site.kind === 'live') return `${through} (the retry option of ${site.options}). Try again later.`;
    return (
      `${through}. Try again later; with onError: 'use-cache', a build uses the content of the last sync while ` +
      `the server fails.${inCi(onError, site)}`
    );
  },
  rate_limited: (_, { baseUrl }, site) => {
    if (site.kind === 'live')
      return (
        `Lower the concurrency option of ${site.options} (default 8), or cache the pages (Astro.cache) so that ` +
        'fewer requests reach the Read API.'
      );
    return (
      `The Read API at ${baseUrl} kept answering that there were too many requests. Lower the concurrency option ` +
      'of comfortable() (default 8), or try again later.'
    );
  },
  bad_request: (_, __, { kind, options, loaders, requestOptions }) => {
    if (kind === 'live')
      return (
        `Check the filter given to getLiveCollection() or getLiveEntry(), and the ${requestOptions} options ` +
        `of ${options}.`
      );
    const sources = loaders
      ? `of ${loaders.name}() in ${loaders.file}, and the collections, aliases and queries of comfortable()`
      : `the collections, aliases and queries of ${options}`;
    return `The Read API refused the options of a request. Check the options of the sources: ${sources}.`;
  },
  unexpected_answer: (_, { baseUrl }, site) =>
    `Check the baseUrl option of ${site.call} (${baseUrl}): it must be the base URL of a Read API, ` +
    'such as https://api.cmft.io/v1.',
  cache_unwritable: (_, settings, site) =>
    `${folder(settings, site)}: it must be a folder this process may create and write.`,
  cache_full: (_, settings, site) =>
    `${folder(settings, site)}: its disk is full. Free some space, or choose a folder on another disk.`,
  cache_busy: (_, settings, site) =>
    `${folder(settings, site)}: another sync of the same folder held it for two minutes. Wait for it to finish, ` +
    'or give this build a folder of its own.',
  cache_damaged: (_, settings, site) =>
    `${folder(settings, site)}: the cache in it is damaged. Delete the folder and build again.`,
  offline_without_cache: (_, { cacheDir }) =>
    'Check the mode option of comfortable(): "offline" reads only the cache, and there is none in ' +
    `${cacheDir ?? 'the cache folder'}. Build once with mode "incremental" (the default), or keep the cache folder ` +
    'between builds.',
  config: (_, __, { options, loaders }) =>
    `Check the options of ${options}${loaders ? ` and of ${loaders.name}() in ${loaders.file}` : ''}.`,
};

/** A 404: of the repository, or of a collection or alias the options name. */
function notFound({ url }: HintedError, { baseUrl, repository, snapshot }: HintSettings, site: OptionsSite) {
  if (url === undefined) return undefined;
  const named = notFoundTarget(url);
  const list = named?.kind === 'collection' ? 'collections' : 'aliases';
  const none = named && `The repository "${repository}" has no ${named.kind} "${named.apiId}"`;
  if (none && site.kind === 'live')
    return `${none}: check the ${named!.kind === 'collection' ? 'collection' : 'aliases'} option of ${site.options}.`;
  // Plain Vite names sources only in the options; Astro's loaders name them in the content config too.
  const whereNamed = site.loaders ? site.loaders.file : `the ${list} option of ${site.options}`;
  if (named && snapshot)
    return (
      `The snapshot ${snapshot} has no ${named.kind} "${named.apiId}": a copy holds the collections and aliases ` +
      `of the config it was pulled with. Add "${named.apiId}" to the ${list} of that config (comfortable.config.mjs) ` +
      `and run npx comfortable-loader pull again, or check the ${named.kind} API id in ${whereNamed}.`
    );
  if (named) {
    const option = named.kind === 'collection' ? 'collection: …' : 'aliases: […]';
    const andOptions = site.loaders ? ` (${site.loaders.name}({ ${option} })) and in the options of comfortable()` : '';
    return `${none}. Check the ${named.kind} API id in ${whereNamed}${andOptions}.`;
  }
  if (site.kind === 'sync' && !/\/v\d+\/?$/.test(new URL(baseUrl).pathname))
    return (
      `Check the baseUrl option of comfortable() (${baseUrl}, CMFT_BASE_URL by default): the Read API's base URL ` +
      `ends in its version, such as https://api.cmft.io/v1. Then check the repository option ("${repository}").`
    );
  return (
    `Check the repository option of ${site.call} ("${repository}"): it must be the API id of a repository at ` +
    `${baseUrl}, one the API key may read. Check the baseUrl option too.`
  );
}

/** The client's hints, which its caller reads after the message: none for what it cannot fix in a call. */
const clientHints: Partial<Record<HintedCode, Hint>> = {
  authentication: () => 'Check the API key: it must be a Read API key of this repository.',
  not_found: () => 'Check the repository API id and the id or API id in the path.',
  server: ({ attempts = 1 }) => `The server kept failing after ${attempts} attempt${attempts === 1 ? '' : 's'}.`,
};

/** The hint for an error, or undefined when it is none a user fixes in the options. */
export function hintFor(error: HintedError, settings: HintSettings, site: OptionsSite): string | undefined {
  const table = site.kind === 'client' ? clientHints : hints;
  const hint = error.code !== undefined && Object.hasOwn(table, error.code) && table[error.code as HintedCode];
  return hint ? hint(error, settings, site) : undefined;
}
