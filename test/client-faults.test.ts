import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.ts';
import {
  AuthenticationError,
  BadRequestError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  type ReadApiError,
  ServerError,
  TimeoutError,
  UnexpectedAnswerError,
} from '../src/api/errors.ts';
import { closeAllPools, type ResponseEvent, sharedLimit } from '../src/api/transport.ts';
import {
  clientOf,
  closedPort,
  closeFaultyServers,
  errorBody,
  fastRetry,
  type Handler,
  json,
  listBody,
  startFaulty,
} from './helpers/client-faults.ts';

/**
 * The client against servers that misbehave on purpose: rate limits, failing gateways, reset
 * connections, silence, broken or unexpected answers, client errors, and hundreds of calls under
 * one shared concurrency limit. Each server is a real node:http server on 127.0.0.1 that counts
 * what it receives (test/helpers/client-faults.ts); retry delays are kept small so the tests stay fast.
 */

afterEach(async () => {
  await closeAllPools();
  await closeFaultyServers();
});

const attemptsOf = (events: ResponseEvent[]) => events.map((e) => [e.attempt, e.status]);

describe('429 Too Many Requests', () => {
  it('waits the Retry-After seconds, then succeeds', async () => {
    const server = await startFaulty((_req, res, n) =>
      n === 1 ? json(res, 429, errorBody(429, 'slow down'), { 'retry-after': '1' }) : json(res, 200, listBody),
    );
    const events: ResponseEvent[] = [];
    const answer = await clientOf(server.url, {}, events).documents();
    expect(answer.data[0]!.meta.id).toBe('1');
    expect(server.seen).toHaveLength(2);
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(attemptsOf(events)).toEqual([
      [1, 429],
      [2, 200],
    ]);
  });

  it('waits until a Retry-After HTTP date, then succeeds', async () => {
    // A date has whole seconds: two seconds ahead is more than one second away.
    const server = await startFaulty((_req, res, n) =>
      n === 1
        ? json(res, 429, errorBody(429, 'slow down'), { 'retry-after': new Date(Date.now() + 2000).toUTCString() })
        : json(res, 200, listBody),
    );
    const events: ResponseEvent[] = [];
    await clientOf(server.url, {}, events).documents();
    expect(server.seen[1]!.at - server.seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(attemptsOf(events)).toEqual([
      [1, 429],
      [2, 200],
    ]);
  });

  it('gives up at once with a RateLimitedError when Retry-After is longer than the time budget left', async () => {
    const server = await startFaulty((_req, res) =>
      json(res, 429, errorBody(429, 'slow down'), { 'retry-after': '3600' }),
    );
    const error = await clientOf(server.url)
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ status: 429, attempts: 1, retryAfterMs: 3_600_000 });
    expect(server.seen).toHaveLength(1);
  });

  it('throws a RateLimitedError after the attempt cap', async () => {
    const server = await startFaulty((_req, res) =>
      json(res, 429, errorBody(429, 'slow down'), { 'retry-after': '0' }),
    );
    const error = await clientOf(server.url)
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ status: 429, attempts: 3, serverMessage: 'slow down', retryAfterMs: 0 });
    expect(server.seen).toHaveLength(3);
  });
});

describe('failing gateways (502, 503, 504)', () => {
  it('retries a 503, then succeeds', async () => {
    const server = await startFaulty((_req, res, n) =>
      n === 1 ? json(res, 503, errorBody(503, 'maintenance')) : json(res, 200, listBody),
    );
    const events: ResponseEvent[] = [];
    expect((await clientOf(server.url, {}, events).documents()).meta.total).toBe(1);
    expect(attemptsOf(events)).toEqual([
      [1, 503],
      [2, 200],
    ]);
  });

  it.each([502, 504])('retries a %i as well', async (status) => {
    const server = await startFaulty((_req, res, n) =>
      n < 3 ? json(res, status, errorBody(status, 'gateway')) : json(res, 200, listBody),
    );
    const events: ResponseEvent[] = [];
    await clientOf(server.url, {}, events).documents();
    expect(attemptsOf(events)).toEqual([
      [1, status],
      [2, status],
      [3, 200],
    ]);
  });

  it('throws a ServerError with the attempts and the server’s message when every attempt fails', async () => {
    const server = await startFaulty((_req, res) => json(res, 503, errorBody(503, 'maintenance')));
    const error = await clientOf(server.url)
      .document('7')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({
      status: 503,
      method: 'GET',
      url: `${server.url}/tiny/documents/7`,
      attempts: 3,
      serverMessage: 'maintenance',
    });
    expect(server.seen).toHaveLength(3);
  });

  it('does not retry a 500', async () => {
    const server = await startFaulty((_req, res) => json(res, 500, errorBody(500, 'bug')));
    await expect(clientOf(server.url).documents()).rejects.toMatchObject({
      name: 'ServerError',
      status: 500,
      attempts: 1,
    });
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
    expect(events.map((e) => [e.attempt, e.status, e.error !== undefined])).toEqual([
      [1, undefined, true],
      [2, 200, false],
    ]);
  });

  it('throws a NetworkError when the body is cut on every attempt', async () => {
    const server = await startFaulty(resetMidBody);
    const error = await clientOf(server.url)
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ attempts: 3, method: 'GET', url: `${server.url}/tiny/documents` });
    expect(server.seen).toHaveLength(3);
  });

  it('throws a NetworkError after retries when the connection is refused', async () => {
    const url = `http://127.0.0.1:${await closedPort()}/v1`;
    const events: ResponseEvent[] = [];
    const error = await clientOf(url, {}, events)
      .repository()
      .catch((e: unknown) => e);
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
    const error = await clientOf(server.url, {
      timeouts: { headersMs: 60_000 },
      retry: { ...fastRetry, budgetMs: 300 },
    })
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
    const error = await clientOf(server.url)
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect((error as Error).message).toMatch(/not JSON/);
    expect(server.seen).toHaveLength(1);
  });

  it('refuses a 200 that is not JSON with an UnexpectedAnswerError quoting its start, without retrying', async () => {
    const server = await startFaulty((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Maintenance</body></html>'),
    );
    const error = await clientOf(server.url)
      .documents()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect(error).toMatchObject({ attempts: 1, method: 'GET', url: `${server.url}/tiny/documents` });
    expect((error as Error).message).toContain('<html><body>Maintenance');
    expect(server.seen).toHaveLength(1);
  });

  it('refuses an answer of the wrong shape, naming the JSON path and the URL', async () => {
    const wrong = JSON.parse(listBody);
    wrong.data.push({ fields: {}, meta: { id: 2, contentType: 'news' } });
    const server = await startFaulty((_req, res) => json(res, 200, wrong));
    const error = await clientOf(server.url)
      .documents({ limit: 2 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect((error as Error).message).toContain('$.data[1].meta.id');
    expect((error as Error).message).toContain(`${server.url}/tiny/documents?limit=2`);
    expect((error as ReadApiError).url).toBe(`${server.url}/tiny/documents?limit=2`);
    expect(server.seen).toHaveLength(1);
  });

  it('refuses a masked list of the wrong shape, naming the JSON path, and takes a right one as sent', async () => {
    const right = {
      status: 200,
      meta: { count: 2, limit: 2, offset: 0, total: 2 },
      data: [{ meta: { id: '1', revision: 3, extra: true } }, {}],
    };
    const wrong = { ...right, data: [right.data[0], { meta: { id: '2', revision: '4' } }] };
    let answer: object = right;
    const server = await startFaulty((_req, res) => json(res, 200, answer));
    expect(await clientOf(server.url).documents({ limit: 2, fields: 'meta(id,revision)' })).toEqual(right);
    answer = wrong;
    const error = await clientOf(server.url)
      .documents({ limit: 2, fields: 'meta(id,revision)' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnexpectedAnswerError);
    expect((error as Error).message).toContain('$.data[1].meta.revision');
  });

  it('names the path of fields that are not an object, in data and in includes', async () => {
    const answers = [
      { ...JSON.parse(listBody), data: [{ fields: ['title'], meta: { id: '1', contentType: 'news' } }] },
      {
        ...JSON.parse(listBody),
        includes: {
          author: [
            { fields: {}, meta: { id: '2', contentType: 'author' } },
            { fields: 'Ada', meta: { id: '3', contentType: 'author' } },
          ],
        },
      },
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
    [404, 'No document with id "7". Check it.', NotFoundError],
  ];

  it.each(cases)(
    'a %i is sent once and throws with status, method, URL, attempts and the server’s message',
    async (status, message, type) => {
      const server = await startFaulty((_req, res) => json(res, status, errorBody(status, message)));
      const error = await clientOf(server.url)
        .document('7', { locale: 'de_DE' })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(type);
      expect(error).toMatchObject({
        status,
        method: 'GET',
        url: `${server.url}/tiny/documents/7?locale=de_DE`,
        attempts: 1,
        serverMessage: message,
      });
      expect((error as Error).message).toContain(message);
      expect((error as Error).message).not.toMatch(/\.\./); // one full stop after the server's message, whether it ends with one or not
      expect(server.seen).toHaveLength(1);
    },
  );

  it('reads the server’s message from `message` when there is no `error.message`, and POSTs are not retried either', async () => {
    const server = await startFaulty((_req, res) =>
      json(res, 401, { status: 401, message: 'No API key found in request' }),
    );
    const error = await clientOf(server.url, { maxUrlLength: 1 })
      .documents({ limit: 1 })
      .catch((e: unknown) => e);
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
