import { LiveCollectionError, LiveEntryNotFoundError } from 'astro/content/runtime';
import { ReadApiError, type ReadApiErrorCode, scrub } from '../api/errors.ts';
import { type HintSettings, hintFor, type OptionsSite } from '../api/hints.ts';
import { ConfigError } from '../sync/config.ts';
import { FieldsMismatch } from './live-fields.ts';

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
export interface ErrorContext extends HintSettings {
  collection: string;
  /** Whether the source is aliases, which take no filters. */
  aliases: boolean;
}

/** The code, status and message of a failure (nothing of Astro in it). */
function describeFailure(
  error: unknown,
  context: ErrorContext,
): { code: LiveErrorCode; status: number | undefined; message: string } {
  const where = `Live collection "${context.collection}"`;
  let message = `${where}: ${error instanceof Error ? error.message : String(error)}`;
  let code: LiveErrorCode = error instanceof FieldsMismatch ? 'validation' : 'unknown';
  if (error instanceof ConfigError) code = 'config';
  if (error instanceof ReadApiError) {
    code = error.code;
    const { status, serverMessage } = error;
    const what =
      status === undefined
        ? error.message.replace(/\.$/, '')
        : `${error.method} ${error.url} answered ${status}${serverMessage ? `: ${serverMessage}` : ''}`;
    const site: OptionsSite = {
      kind: 'live',
      call: 'comfortableLiveLoader() in src/live.config.ts',
      options: 'comfortableLiveLoader() in src/live.config.ts',
      requestOptions: context.aliases ? 'includes' : 'filters, sorting and includes',
    };
    message = `${where}: ${what}. ${hintFor(error, { ...context, snapshot: process.env.CMFT_SNAPSHOT }, site) ?? ''}`;
  }
  const status = error instanceof ReadApiError ? error.status : undefined;
  return { code, status, message: scrub(message, context.apiKey) };
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
