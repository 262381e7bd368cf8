import pLimit, { type LimitFunction } from 'p-limit';
import { Pool } from 'undici';
import type { z } from 'zod';
import { errorAnswerSchema } from '../wire/schemas.ts';
import {
  codeForStatus,
  errorForStatus,
  NetworkError,
  RateLimitedError,
  type ReadApiError,
  type ReadApiErrorDetails,
  redactUrl,
  scrub,
  TimeoutError,
  UnexpectedAnswerError,
} from './errors.ts';
import { type Answer, exchange } from './exchange.ts';
import { hintFor, type OptionsSite } from './hints.ts';
import {
  backoffDelay,
  defaultRetryPolicy,
  isRetryableError,
  isTimeoutError,
  parseRetryAfter,
  retryableStatuses,
  type RetryPolicy,
} from './retry.ts';

/**
 * HTTP for the Read API on undici: one keep-alive pool and one concurrency limit per server
 * (shared by every client of that server, because Astro runs all collections' loaders at once),
 * timeouts, retries, and conditional GETs.
 */

/**
 * Each holds to within a few milliseconds of a free event loop; a timed-out attempt is retried like a network failure.
 */
export interface Timeouts {
  /** Milliseconds to establish a connection (TLS included). Default 10 000. */
  connectMs: number;
  /** Milliseconds from sending the request until the answer's headers arrive. Default 30 000. */
  headersMs: number;
  /** Milliseconds of silence allowed while the body arrives. Default 30 000. */
  bodyMs: number;
}

const defaultTimeouts: Timeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000 };

/** An answer kept for a conditional GET: its ETag and its text. */
type EtagEntry = { etag: string; body: string };

/** Remembers answers by request, for conditional GETs. */
export interface EtagStore {
  get(key: string): EtagEntry | undefined;
  set(key: string, entry: EtagEntry): void;
}

/** An in-memory store of the most recent answers. */
export class MemoryEtagStore implements EtagStore {
  readonly #entries = new Map<string, EtagEntry>();
  readonly #max: number;
  constructor(max = 256) {
    this.#max = max;
  }
  get(key: string) {
    const entry = this.#entries.get(key);
    if (entry) this.set(key, entry); // now the most recent
    return entry;
  }
  set(key: string, entry: EtagEntry) {
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

/** Reported after every attempt, for progress and metrics; the URL carries no key. */
export interface ResponseEvent {
  method: string;
  url: string;
  status: number | undefined;
  bytes: number;
  ms: number;
  attempt: number;
  /** True when a 304 answered from the stored copy. */
  notModified: boolean;
  error?: string;
}

export interface TransportOptions {
  /** Base URL including `/v1`, such as `https://api.cmft.io/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Send the key as `?key=` on GET instead of in the `Authorization` header. Default false. */
  keyInUrl?: boolean;
  /** Requests in flight at once to this server, shared with every other client of it. Default 8. */
  concurrency?: number;
  timeouts?: Partial<Timeouts>;
  retry?: Partial<RetryPolicy>;
  /** Where answers with an ETag are kept for conditional GETs; `false` turns them off. Default: in memory. */
  etags?: EtagStore | false;
  onResponse?: (event: ResponseEvent) => void;
}

interface HttpRequest<T> {
  method: 'GET' | 'POST';
  /** Path after the base URL, starting with `/`. */
  path: string;
  /** Query string without `?`. */
  query?: string;
  /** JSON body for POST. */
  body?: string;
  schema: z.ZodType<T>;
}

interface Shared {
  limit: LimitFunction;
  /**
   * Pools by connect timeout: a pool's own timeout ends connections that hang (each request is timed by `exchange`).
   */
  pools: Map<number, Pool>;
}
const sharedByOrigin = new Map<string, Shared>();

/**
 * What the clients of one server share: the limit of requests in flight (that of the first
 * client), and connections, among clients of the same connect timeout. Were they pooled with
 * another, the pool's timeout, the first client's, would end their connects too.
 */
function sharedFor(origin: string, concurrency: number, connectMs: number) {
  let shared = sharedByOrigin.get(origin);
  if (!shared) sharedByOrigin.set(origin, (shared = { limit: pLimit(concurrency), pools: new Map() }));
  let pool = shared.pools.get(connectMs);
  if (!pool)
    shared.pools.set(
      connectMs,
      (pool = new Pool(origin, { connect: { timeout: connectMs }, keepAliveTimeout: 30_000 })),
    );
  return { limit: shared.limit, pool };
}

/** The concurrency limit shared by every client of a server (for tests and diagnostics). */
export function sharedLimit(baseUrl: string): LimitFunction | undefined {
  return sharedByOrigin.get(new URL(baseUrl).origin)?.limit;
}

/** Closes every pooled connection (for tests and short-lived scripts). */
export async function closeAllPools(): Promise<void> {
  const pools = [...sharedByOrigin.values()].flatMap((s) => [...s.pools.values()]);
  sharedByOrigin.clear();
  await Promise.all(pools.map((pool) => pool.close()));
}

/** The client's hints, after its messages: its caller knows where the options are written. */
const clientSite: OptionsSite = { kind: 'client', call: 'createClient()', options: 'createClient()' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Transport {
  readonly baseUrl: string;
  readonly #basePath: string;
  readonly #apiKey: string;
  readonly #keyInUrl: boolean;
  readonly #shared: ReturnType<typeof sharedFor>;
  readonly #timeouts: Timeouts;
  readonly #retry: RetryPolicy;
  readonly #etags: EtagStore | undefined;
  readonly #onResponse: ((event: ResponseEvent) => void) | undefined;

  constructor(options: TransportOptions) {
    const base = new URL(options.baseUrl.replace(/\/+$/, ''));
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw new TypeError(`baseUrl must be an http(s) URL, got ${JSON.stringify(redactUrl(options.baseUrl))}`);
    if (!options.apiKey) throw new TypeError('apiKey is required: pass the Read API key of the repository');
    // Without a trailing slash (a bare origin's path is "/"), so that paths join with one.
    this.baseUrl = redactUrl(base.href).replace(/\/+$/, '');
    this.#basePath = base.pathname.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#keyInUrl = options.keyInUrl ?? false;
    this.#timeouts = { ...defaultTimeouts, ...options.timeouts };
    this.#retry = { ...defaultRetryPolicy, ...options.retry };
    this.#shared = sharedFor(base.origin, options.concurrency ?? 8, this.#timeouts.connectMs);
    this.#etags = options.etags === false ? undefined : (options.etags ?? new MemoryEtagStore());
    this.#onResponse = options.onResponse;
  }

  /** Sends a request with retries; resolves to the validated answer. */
  async request<T>(request: HttpRequest<T>): Promise<T> {
    const useKeyInUrl = this.#keyInUrl && request.method === 'GET';
    const query = [request.query, useKeyInUrl ? `key=${encodeURIComponent(this.#apiKey)}` : '']
      .filter(Boolean)
      .join('&');
    const target = `${this.#basePath}${request.path}${query ? `?${query}` : ''}`;
    const shown = redactUrl(`${this.baseUrl}${request.path}${request.query ? `?${request.query}` : ''}`);
    const cacheKey = `${request.method} ${shown}${request.body ? ` ${request.body}` : ''}`;
    const started = Date.now();
    const details = (attempts: number, extra: { status?: number; serverMessage?: string; cause?: unknown } = {}) => ({
      method: request.method,
      url: shown,
      attempts,
      status: extra.status,
      serverMessage: extra.serverMessage === undefined ? undefined : scrub(extra.serverMessage, this.#apiKey),
      cause: extra.cause === undefined ? undefined : this.#describeCause(extra.cause),
    });

    for (let attempt = 1; ; attempt++) {
      const remaining = this.#retry.budgetMs - (Date.now() - started);
      if (remaining <= 0)
        throw new TimeoutError(
          `${request.method} ${shown} ran out of its time budget of ${this.#retry.budgetMs} ms after ` +
            `${attempt - 1} attempts`,
          details(attempt - 1),
        );
      const cached = request.method === 'GET' ? this.#etags?.get(cacheKey) : undefined;
      const attemptStarted = performance.now();
      let outcome: Answer;
      try {
        outcome = await this.#shared.limit(() =>
          this.#send(request, target, cached?.etag, started + this.#retry.budgetMs),
        );
      } catch (error) {
        const timedOut = isTimeoutError(error) || (error as Error).name === 'TimeoutError';
        this.#report(request.method, shown, undefined, 0, attemptStarted, attempt, false, (error as Error).message);
        const wait = backoffDelay(attempt, this.#retry);
        if (
          (isRetryableError(error) || timedOut) &&
          attempt < this.#retry.attempts &&
          wait < this.#retry.budgetMs - (Date.now() - started)
        ) {
          await sleep(wait);
          continue;
        }
        const what = timedOut ? 'timed out' : 'failed';
        const message =
          `${request.method} ${shown} ${what} after ${attempt} ` +
          `attempt${attempt === 1 ? '' : 's'}: ${scrub((error as Error).message, this.#apiKey)}`;
        throw timedOut
          ? new TimeoutError(message, details(attempt, { cause: error }))
          : new NetworkError(message, details(attempt, { cause: error }));
      }

      const { status, headers, text } = outcome;
      const notModified = status === 304 && cached !== undefined;
      // Content-Length when given: measuring a page of several MB of text costs as much as validating it.
      const bytes = Number(headers['content-length']) || Buffer.byteLength(text);
      this.#report(request.method, shown, status, bytes, attemptStarted, attempt, notModified);
      if (notModified) return this.#parse(request, cached.body, shown, attempt);
      if (status >= 200 && status < 300) {
        const value = this.#parse(request, text, shown, attempt);
        const etag = headers.etag;
        if (typeof etag === 'string' && request.method === 'GET') this.#etags?.set(cacheKey, { etag, body: text });
        return value;
      }

      const serverMessage = this.#serverMessage(text);
      if (retryableStatuses.has(status) && attempt < this.#retry.attempts) {
        const retryAfter = parseRetryAfter(headers['retry-after']);
        const wait = retryAfter ?? backoffDelay(attempt, this.#retry);
        const left = this.#retry.budgetMs - (Date.now() - started);
        if (wait < left) {
          await sleep(wait);
          continue;
        }
        if (status === 429) {
          const error = new RateLimitedError(
            `${request.method} ${shown} was rate limited; the server asks to wait ${Math.ceil(wait / 1000)} ` +
              `s, more than the ${Math.ceil(left / 1000)} s left of the time budget`,
            details(attempt, { status, serverMessage }),
          );
          error.retryAfterMs = retryAfter;
          throw error;
        }
      }
      throw this.#statusError(
        request.method,
        shown,
        status,
        serverMessage,
        details(attempt, { status, serverMessage }),
        headers,
      );
    }
  }

  /**
   * One attempt; `deadline` (a `Date.now()` time) is when the time budget runs out, a wait for a free slot included.
   */
  #send(request: HttpRequest<unknown>, target: string, etag: string | undefined, deadline: number): Promise<Answer> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'comfortable-loader' };
    if (!(this.#keyInUrl && request.method === 'GET')) headers.authorization = this.#apiKey;
    if (etag) headers['if-none-match'] = etag;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    return exchange(
      this.#shared.pool,
      { path: target, method: request.method, headers, body: request.body },
      {
        ...this.#timeouts,
        totalMs: Math.max(0, deadline - Date.now()),
        totalMessage: `the time budget of ${this.#retry.budgetMs} ms ran out`,
      },
    );
  }

  #parse<T>(request: HttpRequest<T>, text: string, shown: string, attempts: number): T {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      // Scrub before cutting: a key cut in half by the preview would not be recognised.
      const preview = scrub(text, this.#apiKey).slice(0, 60).replace(/\s+/g, ' ');
      throw new UnexpectedAnswerError(
        `${request.method} ${shown} answered something that is not JSON: ${JSON.stringify(preview)}`,
        { method: request.method, url: shown, attempts },
      );
    }
    const result = request.schema.safeParse(json);
    if (result.success) return result.data;
    const issue = result.error.issues[0]!;
    const path = issue.path.reduce<string>(
      (out, key) => (typeof key === 'number' ? `${out}[${key}]` : `${out}.${String(key)}`),
      '$',
    );
    throw new UnexpectedAnswerError(
      `${request.method} ${shown} answered an unexpected shape at ${path}: ${issue.message}`,
      {
        method: request.method,
        url: shown,
        attempts,
      },
    );
  }

  #serverMessage(text: string): string | undefined {
    try {
      const body = errorAnswerSchema.safeParse(JSON.parse(text));
      // Scrubbed here, as it goes into the error's message as well as its serverMessage.
      if (body.success) {
        const message = body.data.error?.message ?? body.data.message;
        return message === undefined ? undefined : scrub(message, this.#apiKey);
      }
    } catch {
      // not JSON: no server message
    }
    return undefined;
  }

  #statusError(
    method: string,
    shown: string,
    status: number,
    serverMessage: string | undefined,
    details: ReadApiErrorDetails,
    headers: Record<string, string | string[] | undefined>,
  ): ReadApiError {
    const said = serverMessage ? `: ${serverMessage}` : '';
    const hint = hintFor({ code: codeForStatus(status), ...details }, { baseUrl: this.baseUrl }, clientSite);
    const message = `${method} ${shown} answered ${status}${said}${/[.!?]$/.test(said) ? '' : '.'}`;
    const error = errorForStatus(status, hint ? `${message} ${hint}` : message, details);
    if (error instanceof RateLimitedError) error.retryAfterMs = parseRetryAfter(headers['retry-after']);
    return error;
  }

  #describeCause(error: unknown): { name: string; code?: string; message: string } {
    const e = error as { name?: string; code?: string; message?: string };
    return {
      name: e.name ?? 'Error',
      ...(e.code ? { code: e.code } : {}),
      message: scrub(String(e.message ?? error), this.#apiKey),
    };
  }

  #report(
    method: string,
    url: string,
    status: number | undefined,
    bytes: number,
    started: number,
    attempt: number,
    notModified: boolean,
    error?: string,
  ) {
    this.#onResponse?.({
      method,
      url,
      status,
      bytes,
      ms: performance.now() - started,
      attempt,
      notModified,
      ...(error ? { error: scrub(error, this.#apiKey) } : {}),
    });
  }
}
