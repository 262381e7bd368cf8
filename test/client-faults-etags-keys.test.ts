import { readFile } from 'node:fs/promises';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.ts';
import type { ReadApiError } from '../src/api/errors.ts';
import { closeAllPools, MemoryEtagStore, type ResponseEvent } from '../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
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
import { fixture, tinyKey } from './helpers/server.ts';

/**
 * The client's conditional requests with ETags, against the real server and one that counts what
 * it receives, and its API key, which must show in no error that a misbehaving server provokes.
 * Each misbehaving server is a real node:http server on 127.0.0.1 (test/helpers/client-faults.ts);
 * retry delays are kept small so the tests stay fast.
 */

afterEach(async () => {
  await closeAllPools();
  await closeFaultyServers();
});

describe('conditional requests with ETags', () => {
  let local: ReadApiServer;
  beforeAll(async () => {
    local = await startServer({ paths: [fixture('tiny.json')], watch: false });
  });
  afterAll(() => local.close());

  it('sends If-None-Match on the second identical request, and a 304 gives back the stored answer', async () => {
    const events: ResponseEvent[] = [];
    const client = createClient({
      baseUrl: local.url,
      repository: 'tiny',
      apiKey: tinyKey,
      onResponse: (event) => events.push(event),
    });
    const first = await client.documents({ locale: 'de_DE' });
    const second = await client.documents({ locale: 'de_DE' });
    expect(second).toEqual(first);
    expect(events.map((e) => [e.status, e.notModified])).toEqual([
      [200, false],
      [304, true],
    ]);
    expect(events[1]!.bytes).toBe(0);
    await client.documents({ locale: 'de_CH' }); // another request is not conditional
    expect(events[2]!.status).toBe(200);
  });

  it('takes a changed answer in place of the stored one', async () => {
    const events: ResponseEvent[] = [];
    const client = createClient({
      baseUrl: local.url,
      repository: 'tiny',
      apiKey: tinyKey,
      onResponse: (event) => events.push(event),
    });
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
    expect(server.seen.slice(2).map((s) => [s.method, s.headers['if-none-match']])).toEqual([
      ['POST', undefined],
      ['POST', undefined],
    ]);
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
  const pieces = (key: string) =>
    spellings(key).flatMap((spelling) =>
      Array.from({ length: spelling.length - 7 }, (_, i) => spelling.slice(i, i + 8)),
    );

  /** Echoes whatever carried the key (the Authorization header, the URL) back in its answer. */
  const echo =
    (status: number, extra: Record<string, string> = {}): Handler =>
    (req, res) =>
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
    [
      'UnexpectedAnswerError',
      (req, res) =>
        res
          .writeHead(200)
          .end(
            `${'x'.repeat(50)}${req.headers.authorization ?? new URL(req.url!, 'http://h').searchParams.get('key')}`,
          ),
    ],
  ];

  for (const key of keys) {
    for (const keyInUrl of [false, true]) {
      describe(`with the key ${JSON.stringify(key)}${keyInUrl ? ' in the URL' : ' in the header'}`, () => {
        it.each(provocations)('%s', async (name, fault) => {
          const url =
            fault === 'refused' ? `http://127.0.0.1:${await closedPort()}/v1` : (await startFaulty(fault)).url;
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
