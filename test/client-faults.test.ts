import { readFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  type ClientOptions,
  closeAllPools,
  createClient,
  MemoryEtagStore,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  type ReadApiClient,
  type ReadApiError,
  type ResponseEvent,
  ServerError,
  sharedLimit,
  TimeoutError,
  UnexpectedAnswerError,
} from '../src/api/index.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { fixture, tinyKey } from './helpers/server.ts';

/**
 * The client against servers that misbehave on purpose: rate limits, failing gateways, reset
 * connections, silence, broken or unexpected answers. Each server is a real node:http server on
 * 127.0.0.1 that counts what it receives; retry delays are kept small so the tests stay fast.
 */

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  at: number;
}

interface FaultyServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

type Handler = (request: IncomingMessage, response: ServerResponse, n: number) => unknown;

const open: FaultyServer[] = [];

/** Starts a server whose handler gets each request with its number (1, 2, …). */
async function startFaulty(handler: Handler): Promise<FaultyServer> {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    seen.push({ method: request.method!, url: request.url!, headers: request.headers, at: performance.now() });
    request.resume();
    void handler(request, response, seen.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const faulty: FaultyServer = {
    url: `http://127.0.0.1:${port}/v1`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  open.push(faulty);
  return faulty;
}

afterEach(async () => {
  await closeAllPools();
  await Promise.all(open.splice(0).map((server) => server.close()));
});

const listBody = JSON.stringify({
  status: 200,
  meta: { count: 1, limit: 25, offset: 0, total: 1 },
  data: [{ fields: { title: 'Hello' }, meta: { id: '1', contentType: 'news' } }],
});

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers }).end(text);
}

const errorBody = (status: number, message: string) => ({ status, message, error: { code: 'x', message } });

const fastRetry = { attempts: 3, baseDelayMs: 1, maxDelayMs: 5, budgetMs: 10_000 };

function clientOf(url: string, options: Partial<ClientOptions> = {}, events: ResponseEvent[] = []): ReadApiClient {
  return createClient({ baseUrl: url, repository: 'tiny', apiKey: 'fault-key', retry: fastRetry, onResponse: (event) => events.push(event), ...options });
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const attemptsOf = (events: ResponseEvent[]) => events.map((e) => [e.attempt, e.status]);

describe('429 Too Many Requests', () => {
  it('waits the Retry-After seconds, then succeeds', async () => {
    const server = await startFaulty((_req, res, n) => (n === 1 ? json(res, 429, errorBody(429, 'slow down'), { 'retry-after': '1' }) : json(res, 200, listBody)));
    const events: ResponseEvent[] = [];
    const answer = await clientOf(server.url, {}, events).documents();
    expect(answer.data[0]!.meta.id).toBe('1');
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(attemptsOf(events)).toEqual([[1, 429], [2, 200]]);
  });

  it('waits until a Retry-After HTTP date, then succeeds', async () => {
    // A date has whole seconds: two seconds ahead is more than one second away.
    const server = await startFaulty((_req, res, n) =>
      n === 1 ? json(res, 429, errorBody(429, 'slow down'), { 'retry-after': new Date(Date.now() + 2000).toUTCString() }) : json(res, 200, listBody),
    );
    const events: ResponseEvent[] = [];
    await clientOf(server.url, {}, events).documents();
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(attemptsOf(events)).toEqual([[1, 429], [2, 200]]);
  });

  it('gives up at once with a RateLimitedError when Retry-After is longer than the time budget left', async () => {
    const server = await startFaulty((_req, res) => json(res, 429, errorBody(429, 'slow down'), { 'retry-after': '3600' }));
    const error = await clientOf(server.url).documents().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ status: 429, attempts: 1, retryAfterMs: 3_600_000 });
    expect(server.seen).toHaveLength(1);
  });

  it('throws a RateLimitedError after the attempt cap', async () => {
    const server = await startFaulty((_req, res) => json(res, 429, errorBody(429, 'slow down'), { 'retry-after': '0' }));
    const error = await clientOf(server.url).documents().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ status: 429, attempts: 3, serverMessage: 'slow down', retryAfterMs: 0 });
    expect(server.seen).toHaveLength(3);
  });
});

describe('failing gateways (502, 503, 504)', () => {
  it('retries a 503, then succeeds', async () => {
    const server = await startFaulty((_req, res, n) => (n === 1 ? json(res, 503, errorBody(503, 'maintenance')) : json(res, 200, listBody)));
    const events: ResponseEvent[] = [];
    expect((await clientOf(server.url, {}, events).documents()).meta.total).toBe(1);
    expect(attemptsOf(events)).toEqual([[1, 503], [2, 200]]);
  });

  it.each([502, 504])('retries a %i as well', async (status) => {
    const server = await startFaulty((_req, res, n) => (n < 3 ? json(res, status, errorBody(status, 'gateway')) : json(res, 200, listBody)));
    const events: ResponseEvent[] = [];
    await clientOf(server.url, {}, events).documents();
    expect(attemptsOf(events)).toEqual([[1, status], [2, status], [3, 200]]);
  });

  it('throws a ServerError with the attempts and the server’s message when every attempt fails', async () => {
    const server = await startFaulty((_req, res) => json(res, 503, errorBody(503, 'maintenance')));
    const error = await clientOf(server.url).document('7').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 503, method: 'GET', url: `${server.url}/tiny/documents/7`, attempts: 3, serverMessage: 'maintenance' });
    expect(server.seen).toHaveLength(3);
  });

  it('does not retry a 500', async () => {
    const server = await startFaulty((_req, res) => json(res, 500, errorBody(500, 'bug')));
    await expect(clientOf(server.url).documents()).rejects.toMatchObject({ name: 'ServerError', status: 500, attempts: 1 });
    expect(server.seen).toHaveLength(1);
  });
});

describe('broken connections', () => {
  /** Promises a long body, sends part of it, and drops the connection. */
  const resetMidBody: Handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(listBody.length + 100) });
    res.write(listBody.slice(0, 40));
    setTimeout(() => res.socket?.destroy(), 10);
  };

  it('retries a connection reset in the middle of the body, then succeeds', async () => {
    const server = await startFaulty((req, res, n) => (n === 1 ? resetMidBody(req, res, n) : json(res, 200, listBody)));
    const events: ResponseEvent[] = [];
    expect((await clientOf(server.url, {}, events).documents()).data).toHaveLength(1);
    expect(events.map((e) => [e.attempt, e.status, e.error !== undefined])).toEqual([[1, undefined, true], [2, 200, false]]);
  });

  it('throws a NetworkError when the body is cut on every attempt', async () => {
    const server = await startFaulty(resetMidBody);
    const error = await clientOf(server.url).documents().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ attempts: 3, method: 'GET', url: `${server.url}/tiny/documents` });
    expect(server.seen).toHaveLength(3);
  });

  it('throws a NetworkError after retries when the connection is refused', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const events: ResponseEvent[] = [];
    const error = await clientOf(url, {}, events).repository().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ attempts: 3, status: undefined, url: `${url}/tiny` });
    expect((error as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });
    expect(events.map((e) => e.attempt)).toEqual([1, 2, 3]);
  });
});

describe('timeouts', () => {
  const silent: Handler = () => {}; // never answers

  it('gives up waiting for headers after headersMs, retries, and throws a TimeoutError after the attempt cap', async () => {
    const server = await startFaulty(silent);
    const error = await clientOf(server.url, { timeouts: { headersMs: 100 }, retry: { ...fastRetry, attempts: 2 } })
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ attempts: 2, status: undefined });
    expect(server.seen).toHaveLength(2);
  });

  it('gives up when the body stalls for longer than bodyMs', async () => {
    const server = await startFaulty((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(listBody.length) });
      res.write(listBody.slice(0, 10));
    });
    const error = await clientOf(server.url, { timeouts: { bodyMs: 100 }, retry: { ...fastRetry, attempts: 2 } })
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(server.seen).toHaveLength(2);
  });

  it('stops at the total time budget, whatever the per-request timeouts', { timeout: 5_000 }, async () => {
    const server = await startFaulty(silent);
    const error = await clientOf(server.url, { timeouts: { headersMs: 60_000 }, retry: { ...fastRetry, budgetMs: 300 } })
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toMatchObject({ attempts: 1 });
    expect(server.seen).toHaveLength(1);
  });
});

describe('answers that are not what was asked for', () => {
  it('refuses truncated JSON with an UnexpectedAnswerError, without retrying', async () => {
    const server = await startFaulty((_req, res) => json(res, 200, listBody.slice(0, -20)));
    const error = await clientOf(server.url).documents().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect((error as Error).message).toMatch(/not JSON/);
    expect(server.seen).toHaveLength(1);
  });

  it('refuses a 200 that is not JSON with an UnexpectedAnswerError quoting its start, without retrying', async () => {
    const server = await startFaulty((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Maintenance</body></html>'));
    const error = await clientOf(server.url).documents().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect(error).toMatchObject({ attempts: 1, method: 'GET', url: `${server.url}/tiny/documents` });
    expect((error as Error).message).toContain('<html><body>Maintenance');
    expect(server.seen).toHaveLength(1);
  });

  it('refuses an answer of the wrong shape, naming the JSON path and the URL', async () => {
    const wrong = JSON.parse(listBody);
    wrong.data.push({ fields: {}, meta: { id: 2, contentType: 'news' } });
    const server = await startFaulty((_req, res) => json(res, 200, wrong));
    const error = await clientOf(server.url).documents({ limit: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect((error as Error).message).toContain('$.data[1].meta.id');
    expect((error as Error).message).toContain(`${server.url}/tiny/documents?limit=2`);
    expect((error as ReadApiError).url).toBe(`${server.url}/tiny/documents?limit=2`);
    expect(server.seen).toHaveLength(1);
  });

  it('refuses a masked list of the wrong shape, naming the JSON path, and takes a right one as sent', async () => {
    const right = { status: 200, meta: { count: 2, limit: 2, offset: 0, total: 2 }, data: [{ meta: { id: '1', revision: 3, extra: true } }, {}] };
    const wrong = { ...right, data: [right.data[0], { meta: { id: '2', revision: '4' } }] };
    let answer: object = right;
    const server = await startFaulty((_req, res) => json(res, 200, answer));
    expect(await clientOf(server.url).documents({ limit: 2, fields: 'meta(id,revision)' })).toEqual(right);
    answer = wrong;
    const error = await clientOf(server.url).documents({ limit: 2, fields: 'meta(id,revision)' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect((error as Error).message).toContain('$.data[1].meta.revision');
  });

  it('names the path of fields that are not an object, in data and in includes', async () => {
    const answers = [
      { ...JSON.parse(listBody), data: [{ fields: ['title'], meta: { id: '1', contentType: 'news' } }] },
      { ...JSON.parse(listBody), includes: { author: [{ fields: {}, meta: { id: '2', contentType: 'author' } }, { fields: 'Ada', meta: { id: '3', contentType: 'author' } }] } },
    ];
    const server = await startFaulty((_req, res, n) => json(res, 200, answers[n - 1]));
    const client = clientOf(server.url);
    await expect(client.documents()).rejects.toThrow(/\$\.data\[0\]\.fields: /);
    await expect(client.collection('news')).rejects.toThrow(/\$\.includes\.author\[1\]\.fields: /);
  });

  it('refuses a list without its envelope', async () => {
    const server = await startFaulty((_req, res) => json(res, 200, { data: [] }));
    await expect(clientOf(server.url).documents()).rejects.toThrow(/\$\.meta/);
  });
});

describe('client errors are final', () => {
  const cases: [number, string, new (...args: never[]) => ReadApiError][] = [
    [400, 'Unknown locale "xx"', BadRequestError],
    [401, 'Invalid authentication credentials', AuthenticationError],
    [403, 'Forbidden', AuthenticationError],
    [404, 'No document with id "7"', NotFoundError],
  ];

  it.each(cases)('a %i is sent once and throws with status, method, URL, attempts and the server’s message', async (status, message, type) => {
    const server = await startFaulty((_req, res) => json(res, status, errorBody(status, message)));
    const error = await clientOf(server.url).document('7', { locale: 'de_DE' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    expect(error).toMatchObject({ status, method: 'GET', url: `${server.url}/tiny/documents/7?locale=de_DE`, attempts: 1, serverMessage: message });
    expect((error as Error).message).toContain(message);
    expect(server.seen).toHaveLength(1);
  });

  it('reads the server’s message from `message` when there is no `error.message`, and POSTs are not retried either', async () => {
    const server = await startFaulty((_req, res) => json(res, 401, { status: 401, message: 'No API key found in request' }));
    const error = await clientOf(server.url, { maxUrlLength: 1 }).documents({ limit: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ method: 'POST', serverMessage: 'No API key found in request', attempts: 1 });
    expect(server.seen.map((s) => s.method)).toEqual(['POST']);
  });
});

describe('the shared concurrency limit', () => {
  it('holds across two clients of one server over hundreds of parallel calls, and is reached', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const server = await startFaulty(async (_req, res) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setTimeout(resolve, 2));
      inFlight--;
      json(res, 200, listBody);
    });
    const first = clientOf(server.url, { concurrency: 4 });
    const second = createClient({ baseUrl: server.url, repository: 'other', apiKey: 'other-key', concurrency: 4 });
    expect(sharedLimit(server.url)).toBe(sharedLimit(`${server.url}/`));
    expect(sharedLimit(server.url)!.concurrency).toBe(4);
    const calls = Array.from({ length: 300 }, (_, i) => (i % 2 === 0 ? first : second).documents({ offset: i }));
    const answers = await Promise.all(calls);
    expect(answers).toHaveLength(300);
    expect(server.seen).toHaveLength(300);
    expect(maxInFlight).toBe(4);
  });
});

describe('conditional requests with ETags', () => {
  let local: ReadApiServer;
  beforeAll(async () => {
    local = await startServer({ paths: [fixture('tiny.json')], watch: false });
  });
  afterAll(() => local.close());

  it('sends If-None-Match on the second identical request, and a 304 gives back the stored answer', async () => {
    const events: ResponseEvent[] = [];
    const client = createClient({ baseUrl: local.url, repository: 'tiny', apiKey: tinyKey, onResponse: (event) => events.push(event) });
    const first = await client.documents({ locale: 'de_DE' });
    const second = await client.documents({ locale: 'de_DE' });
    expect(second).toEqual(first);
    expect(events.map((e) => [e.status, e.notModified])).toEqual([[200, false], [304, true]]);
    expect(events[1]!.bytes).toBe(0);
    await client.documents({ locale: 'de_CH' }); // another request is not conditional
    expect(events[2]!.status).toBe(200);
  });

  it('takes a changed answer in place of the stored one', async () => {
    const events: ResponseEvent[] = [];
    const client = createClient({ baseUrl: local.url, repository: 'tiny', apiKey: tinyKey, onResponse: (event) => events.push(event) });
    expect((await client.document('100')).fields.title).toBe('Apple harvest');
    const snapshot = JSON.parse(await readFile(fixture('tiny.json'), 'utf8'));
    snapshot.documents[0].fields.title.en_US = 'Pear harvest';
    await local.replaceSnapshot(snapshot);
    expect((await client.document('100')).fields.title).toBe('Pear harvest');
    expect((await client.document('100')).fields.title).toBe('Pear harvest');
    expect(events.map((e) => e.status)).toEqual([200, 200, 304]);
  });

  it('sends exactly the stored ETag, never on POST, and none with etags: false', async () => {
    const server = await startFaulty((req, res) => {
      if (req.headers['if-none-match'] === '"v1"') res.writeHead(304, { etag: '"v1"' }).end();
      else json(res, 200, listBody, { etag: '"v1"' });
    });
    const store = new MemoryEtagStore();
    const client = clientOf(server.url, { etags: store });
    await client.documents();
    await client.documents();
    expect(server.seen.map((s) => s.headers['if-none-match'])).toEqual([undefined, '"v1"']);
    const post = clientOf(server.url, { maxUrlLength: 1 });
    await post.documents({ limit: 1 });
    await post.documents({ limit: 1 });
    expect(server.seen.slice(2).map((s) => [s.method, s.headers['if-none-match']])).toEqual([['POST', undefined], ['POST', undefined]]);
    const plain = clientOf(server.url, { etags: false });
    await plain.documents();
    await plain.documents();
    expect(server.seen.slice(4).map((s) => s.headers['if-none-match'])).toEqual([undefined, undefined]);
  });
});

describe('the API key never shows', () => {
  // One plain key, one that URL encoding changes: it must show in neither spelling, not even in part.
  const keys = ['sk-live-REDACTME-5f0c9a1e', 'sk/REDACT+ME=5f0c 9a1e'];
  const spellings = (key: string) => [key, encodeURIComponent(key), encodeURIComponent(key).replaceAll('%20', '+')];
  const pieces = (key: string) => spellings(key).flatMap((spelling) => Array.from({ length: spelling.length - 7 }, (_, i) => spelling.slice(i, i + 8)));

  /** Echoes whatever carried the key (the Authorization header, the URL) back in its answer. */
  const echo = (status: number, extra: Record<string, string> = {}): Handler => (req, res) =>
    json(res, status, errorBody(status, `rejected ${req.headers.authorization ?? '-'} at ${req.url}`), extra);

  const provocations: [string, Handler | 'refused'][] = [
    ['AuthenticationError', echo(401)],
    ['NotFoundError', echo(404)],
    ['BadRequestError', echo(400)],
    ['RateLimitedError', echo(429, { 'retry-after': '0' })],
    ['ServerError', echo(503)],
    ['NetworkError', 'refused'],
    ['TimeoutError', () => {}],
    // The key straddles the end of the body's start that the error quotes.
    ['UnexpectedAnswerError', (req, res) => res.writeHead(200).end(`${'x'.repeat(50)}${req.headers.authorization ?? new URL(req.url!, 'http://h').searchParams.get('key')}`)],
  ];

  for (const key of keys) {
    for (const keyInUrl of [false, true]) {
      describe(`with the key ${JSON.stringify(key)}${keyInUrl ? ' in the URL' : ' in the header'}`, () => {
        it.each(provocations)('%s', async (name, fault) => {
          const url = fault === 'refused' ? `http://127.0.0.1:${await closedPort()}/v1` : (await startFaulty(fault)).url;
          const events: ResponseEvent[] = [];
          const client = createClient({
            baseUrl: url,
            repository: 'tiny',
            apiKey: key,
            keyInUrl,
            // The silent server is left by the time budget.
            retry: { ...fastRetry, attempts: 2, budgetMs: 300 },
            onResponse: (event) => events.push(event),
          });
          const error = (await client.document('100', { locale: 'de_DE' }).catch((e: unknown) => e)) as ReadApiError;
          expect(error.name).toBe(name);
          const shown = [
            error.message,
            JSON.stringify(error),
            inspect(error, { depth: 10 }),
            String(error.stack),
            error.url,
            String(error.serverMessage),
            inspect(error.cause),
            JSON.stringify(events),
          ];
          for (const text of shown) for (const piece of pieces(key)) expect(text).not.toContain(piece);
          expect(error.url).toBe(`${url}/tiny/documents/100?locale=de_DE`);
        });
      });
    }
  }
});
