import { LiveCollectionError, LiveEntryNotFoundError } from 'astro/content/runtime';
import { ReadApiError, type ReadApiErrorCode, scrub } from '../api/errors.ts';
import { type HintSettings, hintFor } from '../api/hints.ts';
import { ConfigError } from '../sync/config.ts';
import { FieldsMismatch } from './live-entries.ts';

/**
 * A live loader's failures as Astro's live-collection errors, returned to the page (never
 * thrown): `LiveEntryNotFoundError` for an entry that does not exist, `ComfortableLiveError`
 * (a `LiveCollectionError`) with a `code` for the rest. Each message says what failed and which
 * option to check (api/hints.ts), and never holds the key.
 */

export type LiveErrorCode = ReadApiErrorCode | 'config' | 'validation' | 'unknown';

/** What a message may name: the live collection, the connection and the source. */
interface ErrorContext extends HintSettings {
  collection: string;
  /** Whether the source is aliases, which take no filters. */
  aliases: boolean;
}

const options = 'comfortableLiveLoader() in src/live.config.ts';

/** The error a live loader returns for a failure other than a missing entry: Astro's live-collection error with a code. */
class ComfortableLiveError extends LiveCollectionError {
  override readonly name = 'ComfortableLiveError' as const;
  /**
   * What went wrong: the client's error code (`authentication`, `network`, `not_found`, …),
   * `config` for an option or filter, `validation` for an entry the `fields` option refuses, or
   * `unknown`.
   */
  readonly code: LiveErrorCode;
  /** The HTTP status of the Read API's answer, when there was one. */
  readonly status: number | undefined;
  constructor(error: unknown, context: ErrorContext) {
    let message = error instanceof Error ? error.message : String(error);
    if (error instanceof ReadApiError) {
      const { status, serverMessage } = error;
      const what =
        status === undefined
          ? message.replace(/\.$/, '')
          : `${error.method} ${error.url} answered ${status}${serverMessage ? `: ${serverMessage}` : ''}`;
      const requestOptions = context.aliases ? 'includes' : 'filters, sorting and includes';
      const site = { kind: 'live', call: options, options, requestOptions } as const;
      const hint = hintFor(error, { ...context, snapshot: process.env.CMFT_SNAPSHOT }, site);
      message = `${what}.${hint ? ` ${hint}` : ''}`;
    }
    message = scrub(`Live collection "${context.collection}": ${message}`, context.apiKey);
    super(context.collection, message, error instanceof Error ? error : undefined);
    this.code =
      error instanceof ReadApiError
        ? error.code
        : error instanceof ConfigError
          ? 'config'
          : error instanceof FieldsMismatch
            ? 'validation'
            : 'unknown';
    this.status = error instanceof ReadApiError ? error.status : undefined;
    // Astro takes the cause's stack as the error's own: keep this message at its head.
    const below = error instanceof Error && error.stack ? error.stack.split('\n').slice(1) : [];
    this.stack = [`ComfortableLiveError: ${message}`, ...below].join('\n');
  }
}

export type { ComfortableLiveError };

/** What a loader returns for a failure other than a missing entry. */
export function failure(error: unknown, context: ErrorContext): { error: ComfortableLiveError } {
  return { error: new ComfortableLiveError(error, context) };
}

/**
 * What a loader returns for an entry that does not exist: Astro's own error, `lookup` saying what
 * was looked for, where.
 */
export function notFound(collection: string, lookup: string): { error: ComfortableLiveError } {
  // The loader's type names one error type; a page tells this one by its name (docs/live.md).
  return { error: new LiveEntryNotFoundError(collection, lookup) as ComfortableLiveError };
}

/** Whether an error is one a live loader of this package returned for a failure (not a missing entry). */
export function isComfortableLiveError(error: unknown): error is ComfortableLiveError {
  return (error as Error | undefined)?.name === 'ComfortableLiveError';
}
