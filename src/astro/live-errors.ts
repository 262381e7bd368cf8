import { LiveCollectionError, LiveEntryNotFoundError } from 'astro/content/runtime';
import { notFoundTarget, ReadApiError, type ReadApiErrorCode, scrub } from '../api/errors.ts';
import { ConfigError } from '../sync/config.ts';
import { FieldsMismatch } from './live-fields.ts';
import type { Source } from './live-options.ts';

/**
 * A live loader's failures as Astro's live-collection errors, returned to the page (never
 * thrown): `LiveEntryNotFoundError` for an entry that does not exist, `ComfortableLiveError`
 * (a `LiveCollectionError`) with a `code` for the rest. Each message says what failed and which
 * option to check, and never holds the key.
 */

export type LiveErrorCode = ReadApiErrorCode | 'config' | 'validation' | 'unknown';

/** The error a live loader returns for a failure other than a missing entry. */
export interface ComfortableLiveError extends LiveCollectionError {
  readonly name: 'ComfortableLiveError';
  /**
   * What went wrong: the client's error code (`authentication`, `network`, `not_found`, …),
   * `config` for an option or filter, `validation` for an entry the `fields` option refuses, or
   * `unknown`.
   */
  readonly code: LiveErrorCode;
  /** The HTTP status of the Read API's answer, when there was one. */
  readonly status: number | undefined;
}

/** What a message may name: the live collection, the connection and the source. */
export interface ErrorContext {
  collection: string;
  baseUrl: string;
  repository: string;
  source: Source;
  /** Only to scrub it from messages: no message names it. */
  apiKey: string | undefined;
}

/** The code, status and message of a failure (nothing of Astro in it). */
function describeFailure(
  error: unknown,
  context: ErrorContext,
): { code: LiveErrorCode; status: number | undefined; message: string } {
  const where = `Live collection "${context.collection}"`;
  const options = 'comfortableLiveLoader() in src/live.config.ts';
  let code: LiveErrorCode = 'unknown';
  let status: number | undefined;
  let message: string;
  if (error instanceof ConfigError) {
    code = 'config';
    message = `${where}: ${error.message}`;
  } else if (error instanceof FieldsMismatch) {
    code = 'validation';
    message = `${where}: ${error.message}`;
  } else if (error instanceof ReadApiError) {
    code = error.code;
    status = error.status;
    const what =
      status === undefined
        ? error.message.replace(/\.$/, '')
        : `${error.method} ${error.url} answered ${status}${error.serverMessage ? `: ${error.serverMessage}` : ''}`;
    message = `${where}: ${what}. ${hintFor(error, context, options)}`;
  } else {
    message = `${where}: ${error instanceof Error ? error.message : String(error)}`;
  }
  return { code, status, message: scrub(message, context.apiKey) };
}

function hintFor(error: ReadApiError, { baseUrl, repository, source }: ErrorContext, options: string): string {
  switch (error.code) {
    case 'authentication':
      return `Check the apiKey option of ${options} and the environment variable it is read from (CMFT_API_KEY in the examples): it must be a Read API key of the repository "${repository}".`;
    case 'network':
    case 'timeout':
      return `Check the baseUrl option of ${options} (${baseUrl}) and that the server is up and reachable from this server; the timeouts option sets how long a request may take.${copyNote()}`;
    case 'not_found': {
      const named = notFoundTarget(error.url);
      if (named)
        return `The repository "${repository}" has no ${named.kind} "${named.apiId}": check the ${named.kind === 'collection' ? 'collection' : 'aliases'} option of ${options}.`;
      return `Check the repository option of ${options} ("${repository}"): it must be the API id of a repository at ${baseUrl}. Check the baseUrl option too.`;
    }
    case 'bad_request':
      return `Check the filter given to getLiveCollection() or getLiveEntry(), and the ${source.kind === 'aliases' ? 'includes' : 'filters, sorting and includes'} options of ${options}.`;
    case 'rate_limited':
      return `Lower the concurrency option of ${options} (default 8), or cache the pages (Astro.cache) so that fewer requests reach the Read API.`;
    case 'server':
      return `The Read API at ${baseUrl} kept failing through every retry (the retry option of ${options}); try again later.`;
    case 'unexpected_answer':
      return `Check the baseUrl option of ${options} (${baseUrl}): it must be the base URL of a Read API, such as https://api.cmft.io/v1.`;
    default:
      return '';
  }
}

/** Said to a user offline on a copy: the live collections do not read it (they run where the site is served). */
function copyNote(): string {
  const snapshot = process.env.CMFT_SNAPSHOT;
  if (!snapshot) return '';
  return ` CMFT_SNAPSHOT is set, but live collections do not serve a copy: they ask the baseUrl they are given. To use the copy, serve it with npx comfortable-loader serve ${snapshot} and point baseUrl and apiKey at it, with the local key the pull printed.`;
}

/** A failure other than a missing entry, as Astro's live-collection error with a code. */
class Failure extends LiveCollectionError implements ComfortableLiveError {
  override readonly name = 'ComfortableLiveError' as const;
  readonly code: LiveErrorCode;
  readonly status: number | undefined;
  constructor(collection: string, failure: ReturnType<typeof describeFailure>, cause: unknown) {
    super(collection, failure.message, cause instanceof Error ? cause : undefined);
    this.code = failure.code;
    this.status = failure.status;
    // Astro takes the cause's stack as the error's own: keep this message at its head.
    this.stack = `ComfortableLiveError: ${failure.message}${cause instanceof Error && cause.stack ? `\n${cause.stack.split('\n').slice(1).join('\n')}` : ''}`;
  }
}

/** The error to return for a failure. */
export function liveError(error: unknown, context: ErrorContext): LiveCollectionError {
  return new Failure(context.collection, describeFailure(error, context), error);
}

/** The error to return for an entry that does not exist; `lookup` says what was looked for, where. */
export function entryNotFound(collection: string, lookup: string): LiveCollectionError {
  return new LiveEntryNotFoundError(collection, lookup);
}

/** Whether an error is one a live loader of this package returned for a failure (not a missing entry). */
export function isComfortableLiveError(error: unknown): error is ComfortableLiveError {
  return (error as Error | undefined)?.name === 'ComfortableLiveError';
}
