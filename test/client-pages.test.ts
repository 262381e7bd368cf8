import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.ts';
import { Filter } from '../src/api/query.ts';
import type { ResponseEvent } from '../src/api/transport.ts';
import type { ApiRecord, ListAnswer } from '../src/wire/schemas.ts';
import { ids, serveClients } from './helpers/client.ts';

/**
 * `pages()` and `all()`: every page in order, a bounded number ahead, against the local server
 * (helpers/client.ts) behind a proxy that delays and records requests; and against a server
 * that answers fewer documents a page than asked (a proxy or a service with a lower cap than
 * the API's 1,000), saying so in `meta.limit`: every document still comes, once, in order.
 */

const { server, clientOf } = serveClients();

/**
 * A proxy in front of the local server that delays each request (by a function of its offset) and
 * records when each starts and ends, to see how pages() schedules its requests.
 */
async function startRecordingProxy(delayFor: (offset: number) => number) {
  const log: { event: 'start' | 'end'; offset: number; limit: number }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const proxy: Server = createServer(async (request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const params = new URLSearchParams(request.url!.split('?')[1] ?? '');
    const options = body ? JSON.parse(body) : {};
    const offset = Number(params.get('offset') ?? options.offset ?? 0);
    const limit = Number(params.get('limit') ?? options.limit ?? 25);
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    log.push({ event: 'start', offset, limit });
    await new Promise((resolve) => setTimeout(resolve, delayFor(offset)));
    const answer = await fetch(`${server().origin}${request.url}`, {
      method: request.method!,
      headers: {
        authorization: request.headers.authorization!,
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      ...(body ? { body } : {}),
    });
    const text = await answer.text();
    log.push({ event: 'end', offset, limit });
    inFlight--;
    response.writeHead(answer.status, { 'content-type': 'application/json' }).end(text);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    log,
    maxInFlight: () => maxInFlight,
    requests: () => log.filter((entry) => entry.event === 'start'),
    close: () => new Promise<void>((resolve) => proxy.close(() => resolve())),
  };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('pages() and all()', () => {
  let everything: ListAnswer;
  beforeAll(async () => {
    everything = await clientOf('demo').documents({ limit: 1000, locale: 'all', includes: 1 });
    expect(everything.meta.total).toBe(43);
  });

  it('reads the total from the first page, then fetches the rest concurrently', async () => {
    const proxy = await startRecordingProxy(() => 20);
    try {
      const client = clientOf('demo', { baseUrl: proxy.url });
      const pages = await collect(client.pages('documents', { pageSize: 5, locale: 'all' }));
      expect(pages).toHaveLength(9);
      expect(proxy.log.slice(0, 2)).toEqual([
        { event: 'start', offset: 0, limit: 5 },
        { event: 'end', offset: 0, limit: 5 },
      ]);
      expect(proxy.requests().map((r) => r.offset)).toEqual([0, 5, 10, 15, 20, 25, 30, 35, 40]);
      expect(proxy.maxInFlight()).toBeGreaterThan(1);
      expect(proxy.maxInFlight()).toBeLessThanOrEqual(8);
    } finally {
      await proxy.close();
    }
  });

  it('yields pages in order even when later pages arrive first, matching one big request', async () => {
    const proxy = await startRecordingProxy((offset) => (offset === 0 ? 0 : Math.max(0, 60 - offset)));
    try {
      const client = clientOf('demo', { baseUrl: proxy.url });
      const pages = await collect(client.pages('documents', { pageSize: 10, locale: 'all', includes: 1 }));
      expect(pages.map((page) => page.meta.offset)).toEqual([0, 10, 20, 30, 40]);
      expect(pages.flatMap(ids)).toEqual(ids(everything));
      expect(pages.every((page) => page.meta.total === 43)).toBe(true);
      const documents = await collect(client.all('documents', { pageSize: 10, locale: 'all', includes: 1 }));
      expect(documents).toEqual(everything.data);
    } finally {
      await proxy.close();
    }
  });

  it('asks for pageSize documents per request, and refuses a page size out of range', async () => {
    const events: ResponseEvent[] = [];
    const client = clientOf('demo', {}, events);
    const pages = await collect(client.pages('documents', { pageSize: 7, locale: 'all', includes: 1 }));
    expect(pages.map((page) => page.data.length)).toEqual([7, 7, 7, 7, 7, 7, 1]);
    expect(events.map((e) => new URL(e.url).searchParams.get('limit'))).toEqual(Array(7).fill('7'));
    expect(pages.flatMap(ids)).toEqual(ids(everything));
    await expect(collect(client.pages('documents', { pageSize: 0 }))).rejects.toBeInstanceOf(RangeError);
    await expect(collect(client.pages('documents', { pageSize: 1001 }))).rejects.toBeInstanceOf(RangeError);
  });

  it('starts at the given offset', async () => {
    const events: ResponseEvent[] = [];
    const documents = await collect(
      clientOf('demo', {}, events).all('documents', { offset: 5, pageSize: 10, locale: 'all', includes: 1 }),
    );
    expect(documents).toEqual(everything.data.slice(5));
    expect(events.map((e) => Number(new URL(e.url).searchParams.get('offset'))).sort((a, b) => a - b)).toEqual([
      5, 15, 25, 35,
    ]);
  });

  it('answers an empty list with one empty page and one request', async () => {
    const events: ResponseEvent[] = [];
    const client = clientOf('demo', {}, events);
    const pages = await collect(client.pages('documents', { filters: new Filter().where('meta.id', 'equal', 1) }));
    expect(pages).toHaveLength(1);
    expect(pages[0]!.meta).toMatchObject({ count: 0, total: 0 });
    expect(await collect(client.all({ collection: 'posts' }, { search: 'no-such-word-anywhere' }))).toEqual([]);
    expect(events).toHaveLength(2);
  });

  it('makes one request for a list of exactly one page', async () => {
    const events: ResponseEvent[] = [];
    const client = clientOf('demo', {}, events);
    const authors = await collect(client.all({ collection: 'authors' }, { pageSize: 5 }));
    expect(authors.map((a) => a.fields.name)).toEqual(
      (await client.collection('authors')).data.map((a) => a.fields.name),
    );
    expect(authors).toHaveLength(5);
    const exact = await collect(client.pages('documents', { pageSize: 43, locale: 'all', includes: 1 }));
    expect(exact).toHaveLength(1);
    expect(exact[0]!.data).toEqual(everything.data);
    expect(events).toHaveLength(3);
  });

  it('reads a collection with its options on every page, in the collection’s order', async () => {
    const events: ResponseEvent[] = [];
    const client = clientOf('demo', {}, events);
    const whole = await client.collection('posts', {
      limit: 1000,
      locale: 'de_DE',
      filters: new Filter().where('featured', 'equal', false),
    });
    events.length = 0;
    const posts: ApiRecord[] = await collect(
      client.all(
        { collection: 'posts' },
        { pageSize: 4, locale: 'de_DE', filters: new Filter().where('featured', 'equal', false) },
      ),
    );
    expect(posts).toEqual(whole.data);
    expect(events.length).toBe(Math.ceil(whole.meta.total / 4));
    for (const event of events) expect(new URL(event.url).searchParams.get('locale')).toBe('de_DE');
  });
});

const total = 10;
const cap = 3;
let close: (() => void) | undefined;
afterEach(() => close?.());

/** A real server of `total` documents that caps each page at `cap`, as the spec's server caps it at 1,000. */
async function cappedServer(): Promise<string> {
  const server = createServer((request, response) => {
    const query = new URL(request.url!, 'http://x').searchParams;
    const offset = Number(query.get('offset') ?? 0);
    const limit = Math.min(Number(query.get('limit') ?? 25), cap);
    const data = Array.from({ length: Math.max(0, Math.min(limit, total - offset)) }, (_, i) => ({
      fields: {},
      meta: { id: String(100 + offset + i), contentType: 'note' },
    }));
    const body = JSON.stringify({ status: 200, meta: { count: data.length, limit, offset, total }, data });
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  close = () => server.close();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

describe('pages() when the server caps the page size', () => {
  it('steps by the limit the server answered with, so no document is skipped', async () => {
    const client = createClient({ baseUrl: await cappedServer(), repository: 'capped', apiKey: 'k' });
    const ids: string[] = [];
    for await (const page of client.pages('documents', { pageSize: 5 }))
      ids.push(...page.data.map((record) => record.meta!.id!));
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => String(100 + i)));
  });
});
