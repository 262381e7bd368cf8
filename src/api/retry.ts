/**
 * When to retry and how long to wait: 429, 502, 503, 504 and network failures are retried
 * with exponential backoff and full jitter, honouring `Retry-After`, within a cap on attempts
 * and a total time budget. Any other 4xx is final.
 */

export interface RetryPolicy {
  /** Attempts in all, the first included. Default 5. */
  attempts: number;
  /** The first backoff's ceiling in milliseconds; it doubles per attempt. Default 250. */
  baseDelayMs: number;
  /** The largest backoff ceiling in milliseconds. Default 10 000. */
  maxDelayMs: number;
  /** Total time for one call, every attempt and wait included, in milliseconds. Default 120 000. */
  budgetMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { attempts: 5, baseDelayMs: 250, maxDelayMs: 10_000, budgetMs: 120_000 };

export const retryableStatuses = new Set([429, 502, 503, 504]);

/** The codes of a connect, header or body timeout (undici's, or Node's). */
const timeoutCodes = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

/** Network failure codes (Node and undici) that are worth another attempt: timeouts too. */
const retryableCodes = new Set([
  ...timeoutCodes,
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_CLOSED',
]);

const codeOf = (error: unknown): string => (error as { code?: string } | undefined)?.code ?? '';

export function isRetryableError(error: unknown): boolean {
  if (retryableCodes.has(codeOf(error))) return true;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause !== undefined && cause !== error && isRetryableError(cause);
}

export const isTimeoutError = (error: unknown): boolean => timeoutCodes.has(codeOf(error));

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; `undefined` when absent or unreadable. */
export function parseRetryAfter(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Full jitter: a random wait between 0 and min(max, base · 2^(attempt-1)). */
export function backoffDelay(attempt: number, policy: RetryPolicy, random = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}
