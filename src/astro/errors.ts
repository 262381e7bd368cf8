import { AstroError } from 'astro/errors';
import { notFoundTarget, type ReadApiErrorCode, scrub } from '../api/errors.ts';
import type { CacheError } from '../cache/index.ts';
import { cacheRootOf } from '../cache/origins.ts';
import type { SyncError } from '../sync/engine.ts';
import type { SharedSync } from '../sync/shared.ts';

/**
 * A loader's failure as Astro shows it: the message of what failed, and a hint naming the
 * option to check. Without one, Astro hints at "a syntax error inside your content", which
 * sends a user with a wrong key or a server that is down to the wrong place. Astro prints the
 * `hint` of an `AstroError` (from `astro/errors`) under the message, in a build and in dev.
 */
export class LoaderError extends AstroError {
  /** The code of the error it stands for, such as `authentication` or `cache_unwritable`. */
  readonly code: string;
  constructor(code: string, message: string, hint: string) {
    super(message, hint);
    this.name = 'ComfortableLoaderError';
    this.code = code;
  }
}

/** The options a hint may name, and the key, kept only to scrub it from a message: a hint never names it. */
interface Settings {
  baseUrl: string;
  repository: string;
  cacheDir: string | undefined;
  apiKey: string | undefined;
  /** The snapshot served in place of the CMS, if one is. */
  snapshot: string | undefined;
  onError: 'fail' | 'use-cache';
}

/**
 * The error a loader throws for `error`: a `LoaderError` with a hint when it is one a user
 * fixes in the options (key, base URL, repository, a source's name or options, cache folder),
 * else `error` itself (Astro's own errors, such as a schema that refused an entry, included).
 */
export function loaderError(error: unknown, shared: SharedSync): unknown {
  if (!(error instanceof Error)) return error;
  const settings = settingsOf(shared);
  const root = rootOf(error);
  // The cacheDir option holds a cache per origin (see cache/origins.ts): a hint names the option.
  const hint = settings && hintFor(root, { ...settings, cacheDir: settings.cacheDir && cacheRootOf(settings.cacheDir) });
  if (!settings || hint === undefined) return error;
  // Without a full stop of its own: Astro ends the message with one when it tells it.
  return new LoaderError(root.code!, scrub(error.message, settings.apiKey).replace(/\.+$/, ''), hint);
}

/** An error's message and, for a LoaderError, its hint, as a log line. */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const hint = (error as { hint?: unknown }).hint;
  return typeof hint === 'string' ? `${error.message}\n  Hint: ${hint}` : error.message;
}

function settingsOf(shared: SharedSync): Settings | undefined {
  try {
    const { baseUrl, repository, cacheDir, apiKey, onError } = shared.config();
    return { baseUrl, repository, cacheDir, apiKey, onError, snapshot: shared.snapshot };
  } catch {
    return undefined; // not configured: that error says so itself
  }
}

/**
 * The codes of this package's errors. They are told apart by code, not class: the integration
 * (loaded with astro.config) runs the sync, and the loaders (loaded with content.config) catch
 * its errors, each with its own copy of the modules, so `instanceof` would fail.
 */
type Code = ReadApiErrorCode | CacheError['code'] | SyncError['code'] | 'config';

/** The error a sync's failure stands for (a server failure wraps what the client threw), with its code. */
function rootOf(error: Error): Error & { code?: Code; url?: string } {
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  return code === 'server_failed' && cause instanceof Error ? cause : error;
}

function hintFor(error: { code?: Code; url?: string }, settings: Settings): string | undefined {
  const { baseUrl, cacheDir } = settings;
  const folder = `Check the cacheDir option of comfortable() (${cacheDir ?? 'default: node_modules/.astro/comfortable'})`;
  // In CI a failing CMS fails the build by default: say how to build from the last content instead.
  const inCi =
    settings.onError === 'fail' && process.env.CI
      ? " In CI (the CI variable is set) a build fails when the CMS does; with onError: 'use-cache' in comfortable() it builds from the content of the last sync instead, with a warning (keep node_modules/.astro between runs)."
      : '';
  switch (error.code) {
    case 'authentication':
      return `The Read API at ${baseUrl} refused the API key. Check the apiKey option of comfortable() in astro.config, and the environment variable it is read from (CMFT_API_KEY in the examples): it must be a Read API key of the repository "${settings.repository}".`;
    case 'network':
    case 'timeout':
      return `The Read API at ${baseUrl} could not be reached. Check the baseUrl option of comfortable() in astro.config (CMFT_BASE_URL in the examples), and that the server is up and reachable from this machine.${inCi}`;
    case 'not_found':
      return typeof error.url === 'string' ? notFoundHint(error.url, settings) : undefined;
    case 'server':
      return `The Read API at ${baseUrl} kept failing through every retry. Try again later; with onError: 'use-cache', a build uses the content of the last sync while the server fails.${inCi}`;
    case 'rate_limited':
      return `The Read API at ${baseUrl} kept answering that there were too many requests. Lower the concurrency option of comfortable() (default 8), or try again later.`;
    case 'bad_request':
      return `The Read API refused the options of a request. Check the options of the sources: of comfortableLoader() in src/content.config.ts, and the collections, aliases and queries of comfortable().`;
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
      return `Check the options of comfortable() in astro.config and of comfortableLoader() in src/content.config.ts.`;
    default:
      return undefined;
  }
}

/** A 404: of the repository, or of a collection or alias a loader or the options name. */
function notFoundHint(url: string, { baseUrl, repository, snapshot }: Settings): string {
  const named = notFoundTarget(url);
  if (named && snapshot) {
    const list = named.kind === 'collection' ? 'collections' : 'aliases';
    return `The snapshot ${snapshot} has no ${named.kind} "${named.apiId}": a copy holds the collections and aliases of the config it was pulled with. Add "${named.apiId}" to the ${list} of that config (comfortable.config.mjs) and run npx comfortable-loader pull again, or check the ${named.kind} API id in src/content.config.ts.`;
  }
  if (named) {
    const option = named.kind === 'collection' ? 'collection: …' : 'aliases: […]';
    return `The repository "${repository}" has no ${named.kind} "${named.apiId}". Check the ${named.kind} API id in src/content.config.ts (comfortableLoader({ ${option} })) and in the options of comfortable().`;
  }
  if (!/\/v\d+\/?$/.test(new URL(baseUrl).pathname)) {
    return `Check the baseUrl option of comfortable() (${baseUrl}, CMFT_BASE_URL in the examples): the Read API's base URL ends in its version, such as https://api.cmft.io/v1. Then check the repository option ("${repository}").`;
  }
  return `Check the repository option of comfortable() ("${repository}"): it must be the API id of a repository at ${baseUrl}, one the API key may read. Check the baseUrl option too.`;
}
