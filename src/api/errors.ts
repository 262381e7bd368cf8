import { inspect } from 'node:util';

/**
 * Errors of the Read API client. Each carries what a user needs to act (status, method, the
 * URL without the key, attempts made, the server's message) and never the API key: URLs are
 * redacted before they reach an error, and messages are scrubbed of the key as a last guard.
 */

export type ReadApiErrorCode =
  | 'authentication'
  | 'not_found'
  | 'bad_request'
  | 'rate_limited'
  | 'server'
  | 'network'
  | 'timeout'
  | 'unexpected_answer';

export interface ReadApiErrorDetails {
  status?: number | undefined;
  method: string;
  /** The request URL with any `key=` parameter removed. */
  url: string;
  attempts: number;
  /** What the server said (`error.message` or `message` of its error body). */
  serverMessage?: string | undefined;
  /** Underlying cause, reduced to name, code and message. */
  cause?: { name: string; code?: string; message: string } | undefined;
}

export abstract class ReadApiError extends Error {
  abstract readonly code: ReadApiErrorCode;
  readonly status: number | undefined;
  readonly method: string;
  readonly url: string;
  readonly attempts: number;
  readonly serverMessage: string | undefined;

  constructor(message: string, details: ReadApiErrorDetails) {
    super(message);
    this.name = new.target.name;
    this.status = details.status;
    this.method = details.method;
    this.url = details.url;
    this.attempts = details.attempts;
    this.serverMessage = details.serverMessage;
    if (details.cause) Object.defineProperty(this, 'cause', { value: details.cause, enumerable: false });
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      status: this.status,
      method: this.method,
      url: this.url,
      attempts: this.attempts,
      serverMessage: this.serverMessage,
    };
  }

  [inspect.custom](): string {
    return `${this.stack ?? `${this.name}: ${this.message}`}\n  ${inspect(this.toJSON(), { breakLength: Infinity })}`;
  }
}

/** 401 or 403: the key is missing, wrong, or for another repository. */
export class AuthenticationError extends ReadApiError {
  readonly code = 'authentication';
}
/** 404: no such repository, document, alias, collection or asset. */
export class NotFoundError extends ReadApiError {
  readonly code = 'not_found';
}
/** Another 4xx: the request's options are malformed. Not retried. */
export class BadRequestError extends ReadApiError {
  readonly code = 'bad_request';
}
/** 429 still after every retry, or a `Retry-After` longer than the time budget left. */
export class RateLimitedError extends ReadApiError {
  readonly code = 'rate_limited';
  /** Milliseconds the server asked to wait, when it said. */
  retryAfterMs: number | undefined;
}
/** 5xx still after every retry. */
export class ServerError extends ReadApiError {
  readonly code = 'server';
}
/** The connection failed (refused, reset, hang-up, truncated body) on every attempt. */
export class NetworkError extends ReadApiError {
  readonly code = 'network';
}
/** A connect, header or body timeout, or the total time budget, ran out. */
export class TimeoutError extends ReadApiError {
  readonly code = 'timeout';
}
/** The answer was not JSON, or not of the expected shape. */
export class UnexpectedAnswerError extends ReadApiError {
  readonly code = 'unexpected_answer';
}

/** Removes a `key=` query parameter from a URL. */
export function redactUrl(url: string): string {
  return url
    .replace(/([?&])key=[^&#]*(&?)/g, (_m, lead: string, tail: string) => (tail ? lead : ''))
    .replace(/[?&]$/, '');
}

/** What a request's URL names, when it asks for a collection or an alias: for the hint of a 404. */
export function notFoundTarget(url: string): { kind: 'collection' | 'alias'; apiId: string } | undefined {
  const named = /\/(collections|alias)\/([^/]+)$/.exec(new URL(url, 'http://localhost').pathname);
  return named
    ? { kind: named[1] === 'collections' ? 'collection' : 'alias', apiId: decodeURIComponent(named[2]!) }
    : undefined;
}

/** Replaces every occurrence of a secret in a text, as written and as URL-encoded (a server may echo the URL). */
export function scrub(text: string, secret: string | undefined): string {
  if (!secret) return text;
  const encoded = encodeURIComponent(secret);
  for (const spelling of new Set([secret, encoded, encoded.replaceAll('%20', '+')]))
    text = text.split(spelling).join('***');
  return text;
}

/** The code of the error for an HTTP status. */
export function codeForStatus(status: number): ReadApiErrorCode {
  if (status === 401 || status === 403) return 'authentication';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  return status >= 500 ? 'server' : 'bad_request';
}

const byStatusCode = {
  authentication: AuthenticationError,
  not_found: NotFoundError,
  rate_limited: RateLimitedError,
  server: ServerError,
  bad_request: BadRequestError,
};

/** Builds the error for an HTTP status. */
export function errorForStatus(status: number, message: string, details: ReadApiErrorDetails): ReadApiError {
  return new byStatusCode[codeForStatus(status) as keyof typeof byStatusCode](message, details);
}
