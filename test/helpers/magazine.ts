import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { closeAllPools } from '../../src/api/transport.ts';
import type { CacheReader } from '../../src/cache/index.ts';
import { DatabaseSync } from '../../src/cache/sqlite.ts';
import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import type { Changeset } from '../../src/sync/changeset.ts';
import type { SyncConfigInput } from '../../src/sync/config.ts';
import type { SyncLogger, SyncResult } from '../../src/sync/engine.ts';
import type { StoredRecord } from '../../src/model/records.ts';

/**
 * What the sync's tests share: a small magazine repository with every field type, the local
 * server serving it (and edits of it), misbehaving proxies in front of it, temporary folders
 * removed after each test, a logger that keeps what it is told, and readers of a cache.
 */

export const key = 'mag-read-key-7d3b2468f1c0a9e5';
export const otherKey = 'mag-read-key-second-00c0ffee11';

export type Doc = {
  fields: Record<string, unknown>;
  meta: { id: string; contentType: string; revision: number; tags: string[]; createdAt: string; updatedAt: string };
};

export const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });
export const meta = (id: string, contentType: string, day: number): Doc['meta'] => ({
  id,
  contentType,
  revision: 1,
  tags: [],
  createdAt: `2024-01-${String(day).padStart(2, '0')}T00:00:00.000Z`,
  updatedAt: `2024-02-${String(day).padStart(2, '0')}T00:00:00.000Z`,
});

/**
 * A small magazine with every field type: three articles (one with a dangling reference), two
 * authors, two assets, German and Swiss German with gaps, three collections and an alias.
 */
export function magazine() {
  return {
    repository: {
      id: '500000000000000001',
      apiId: 'mag',
      name: 'Magazine',
      defaultLocale: 'en_US',
      locales: [{ key: 'en_US' }, { key: 'de_DE', fallback: 'en_US' }, { key: 'de_CH', fallback: 'de_DE' }],
      apiKeys: [key, otherKey],
    },
    contentTypes: [
      {
        apiId: 'article',
        fields: [
          { apiId: 'title', type: 'text', localized: true },
          { apiId: 'body', type: 'richtext', localized: true },
          { apiId: 'rating', type: 'number' },
          { apiId: 'publishedAt', type: 'date' },
          { apiId: 'featured', type: 'boolean' },
          { apiId: 'place', type: 'location' },
          { apiId: 'section', type: 'select' },
          { apiId: 'topics', type: 'select' },
          { apiId: 'color', type: 'color' },
          { apiId: 'author', type: 'relation' },
          { apiId: 'related', type: 'relation' },
          { apiId: 'cover', type: 'asset' },
          { apiId: 'gallery', type: 'asset', localized: true },
          { apiId: 'extra', type: 'json' },
        ],
      },
      {
        apiId: 'author',
        fields: [
          { apiId: 'name', type: 'text' },
          { apiId: 'bio', type: 'richtext', localized: true },
          { apiId: 'avatar', type: 'asset' },
          { apiId: 'favourite', type: 'relation' },
        ],
      },
    ],
    documents: [
      {
        fields: {
          title: { en_US: 'Apple harvest', de_DE: 'Apfelernte', de_CH: 'Öpfelernte' },
          body: {
            en_US: { html: '<p>Crisp <b>apples</b></p>', plain: 'Crisp apples' },
            de_DE: { html: '<p>Knackige Äpfel</p>', plain: 'Knackige Äpfel' },
          },
          rating: 5,
          publishedAt: '2024-03-01T10:00:00.000Z',
          featured: true,
          place: { lat: 47.37, lng: 8.54 },
          section: 'food',
          topics: ['fruit', 'autumn'],
          color: '#aa0000',
          author: ref('2001', 'author'),
          related: [ref('1002', 'article')],
          cover: [ref('3001', '_asset')],
          gallery: { en_US: [ref('3001', '_asset'), ref('3002', '_asset')], de_DE: [ref('3002', '_asset')] },
          extra: { source: 'wire', priority: 2 },
        },
        meta: meta('1001', 'article', 1),
      },
      {
        fields: {
          title: { en_US: 'Banana boats' },
          body: { en_US: { html: '<p>Boats</p>', plain: 'Boats' } },
          rating: 3,
          featured: false,
          author: ref('2002', 'author'),
          related: [ref('1001', 'article'), ref('1999', 'article')],
          cover: [ref('3002', '_asset')],
        },
        meta: meta('1002', 'article', 2),
      },
      {
        fields: {
          title: { en_US: 'Cherry season', de_DE: 'Kirschenzeit' },
          rating: 4,
          featured: true,
          author: ref('2001', 'author'),
        },
        meta: meta('1003', 'article', 3),
      },
      {
        fields: {
          name: 'Ada',
          bio: {
            en_US: { html: '<p>Editor</p>', plain: 'Editor' },
            de_DE: { html: '<p>Redakteurin</p>', plain: 'Redakteurin' },
          },
          avatar: [ref('3002', '_asset')],
          favourite: ref('1003', 'article'),
        },
        meta: meta('2001', 'author', 4),
      },
      {
        fields: {
          name: 'Bob',
          bio: { en_US: { html: '<p>Reporter</p>', plain: 'Reporter' } },
          favourite: ref('1001', 'article'),
        },
        meta: meta('2002', 'author', 5),
      },
    ] as Doc[],
    assets: [
      {
        fields: {
          title: { en_US: 'Apples', de_DE: 'Äpfel' },
          description: { en_US: 'A basket of apples', de_DE: 'Ein Korb Äpfel' },
          file: {
            url: 'https://images.example.com/apples.jpg',
            fileName: 'apples.jpg',
            mimeType: 'image/jpeg',
            size: 1200,
            width: 800,
            height: 600,
          },
        },
        meta: meta('3001', '_asset', 6),
      },
      {
        fields: {
          title: { en_US: 'Bananas' },
          file: {
            url: 'https://images.example.com/bananas.png',
            fileName: 'bananas.png',
            mimeType: 'image/png',
            size: 900,
            width: 400,
            height: 300,
          },
        },
        meta: meta('3002', '_asset', 7),
      },
    ] as Doc[],
    collections: [
      { apiId: 'articles', contentType: 'article', sorting: { 'fields.rating': 'DESC' } } as Record<string, unknown>,
      {
        apiId: 'featured',
        contentType: 'article',
        filters: [{ 'article.fields.featured': { equal: true } }],
      } as Record<string, unknown>,
      { apiId: 'authors', contentType: 'author' } as Record<string, unknown>,
    ],
    aliases: [{ apiId: 'home', document: '1001' }],
  };
}
export type Magazine = ReturnType<typeof magazine>;

export const allRecordIds = ['1001', '1002', '1003', '2001', '2002', '3001', '3002'];

/** Marks a document as edited, as the CMS does. */
export function touch(doc: Doc): void {
  doc.meta.updatedAt = new Date().toISOString();
  doc.meta.revision += 1;
}
export const docOf = (snapshot: Magazine, id: string) => snapshot.documents.find((d) => d.meta.id === id)!;

// --- servers, proxies, folders -------------------------------------------------------------

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
afterAll(() => closeAllPools());

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sync-test-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export interface Served {
  server: ReadApiServer;
  /** `METHOD path?query status`, decoded, one per request. */
  requests: string[];
  snapshot: Magazine;
  /** Serves the (edited) snapshot. */
  publish(): Promise<void>;
}

export async function serve(snapshot: Magazine = magazine(), extra: unknown[] = []): Promise<Served> {
  const requests: string[] = [];
  const server = await startServer({
    snapshots: [structuredClone(snapshot), ...extra],
    watch: false,
    log: (line) => {
      if (/^(GET|POST|HEAD) /.test(line)) requests.push(decodeURIComponent(line.replace(/ [\d.]+ms$/, '')));
    },
  });
  cleanups.push(() => server.close());
  return {
    server,
    requests,
    snapshot,
    publish: async () => void (await server.replaceSnapshot(structuredClone(snapshot))),
  };
}

export interface Proxy {
  url: string;
  /** Requests seen, `METHOD path`. */
  seen: string[];
  /** From this many requests on, every request fails (`undefined`: none fails). */
  failFrom: number | undefined;
  /** How a failing request fails: a 500 answer, or the connection dropped without an answer. */
  failure: 'status' | 'hang-up';
  /** Fails a request when this says so (besides `failFrom`). */
  failIf?: () => boolean;
  /** Holds (answers not, until `release`) every request whose `METHOD path` this matches. */
  hold?: RegExp;
  /** Lets the held requests through. */
  release(): void;
}

/** A real HTTP proxy in front of the server that can rewrite answers and stop answering. */
export async function startProxy(target: ReadApiServer, rewrite?: (path: string, body: any) => any): Promise<Proxy> {
  const held: (() => void)[] = [];
  const proxy: Proxy = {
    url: '',
    seen: [],
    failFrom: undefined,
    failure: 'status',
    release: () => {
      proxy.hold = undefined;
      for (const go of held.splice(0)) go();
    },
  };
  const server: Server = createServer((req, res) => {
    const seen = `${req.method} ${decodeURIComponent(req.url ?? '')}`;
    proxy.seen.push(seen);
    if (proxy.hold?.test(seen)) {
      held.push(() => forward(req, res));
      return;
    }
    forward(req, res);
  });
  const forward = (req: IncomingMessage, res: import('node:http').ServerResponse) => {
    if ((proxy.failFrom !== undefined && proxy.seen.length >= proxy.failFrom) || proxy.failIf?.()) {
      if (proxy.failure === 'hang-up') req.socket.destroy();
      else
        res.writeHead(500, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            status: 500,
            message: 'down',
            error: { code: 'server_error', message: 'down for maintenance' },
          }),
        );
      return;
    }
    const upstream = httpRequest(
      { host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer: IncomingMessage) => {
        const path = (req.url ?? '').split('?')[0]!;
        if (!rewrite || answer.statusCode !== 200) {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          return;
        }
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const body = JSON.stringify(rewrite(path, JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          const { 'content-length': _length, ...headers } = answer.headers;
          res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(body) }).end(body);
        });
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  };
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  cleanups.push(
    () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  );
  return proxy;
}

/** A logger that keeps what it is told. */
export function recorder(): SyncLogger & { infos: string[]; warns: string[] } {
  const infos: string[] = [];
  const warns: string[] = [];
  return { infos, warns, info: (m) => infos.push(m), warn: (m) => warns.push(m) };
}

export const standard = {
  collections: { articles: {}, featured: {} },
  aliases: ['home'],
  queries: { authors: { contentType: 'author' } },
} satisfies Partial<SyncConfigInput>;

export function configFor(baseUrl: string, cacheDir: string, extra: Partial<SyncConfigInput> = {}): SyncConfigInput {
  return { baseUrl, repository: 'mag', apiKey: key, cacheDir, onError: 'fail', ...standard, ...extra };
}

/** Every record of a sync's cache, by id. */
export function recordsOf(result: Pick<SyncResult, 'cache'>): Map<string, StoredRecord> {
  const cache = result.cache;
  const ids = cache
    .sources()
    .flatMap((source) => [...cache.members(source.key).map((m) => m.id), ...cache.included(source.key)]);
  return new Map([...cache.records(new Set(ids))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Everything a cache holds, table by table and row by row (read through a connection of its
 * own): what proves that a failed sync left the cache as it was, whatever SQLite's own files do.
 */
export function cacheContent(dir: string): Record<string, unknown[]> {
  const db = new DatabaseSync(join(dir, 'cache.sqlite'), { readOnly: true });
  try {
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]
    ).map((row) => row.name);
    return Object.fromEntries(
      tables.map((table) => [
        table,
        db
          .prepare(`SELECT * FROM "${table}" ORDER BY 1, 2`)
          .all()
          .map((row) => ({ ...row })),
      ]),
    );
  } finally {
    db.close();
  }
}

export const sorted = (ids: Iterable<string>) => [...ids].sort();

/** What a cache shows. A folder's reader always shows its last commit: take this before the next sync. */
export function contentOf(cache: CacheReader) {
  const sources = cache.sources();
  return {
    head: structuredClone(cache.head),
    sources,
    members: Object.fromEntries(sources.map((source) => [source.key, cache.members(source.key)])),
    included: Object.fromEntries(sources.map((source) => [source.key, sorted(cache.included(source.key))])),
    dangling: cache.dangling(),
    records: recordsOf({ cache }),
  };
}
export const none = { added: [], updated: [], removed: [] };
/** Changes with their ids sorted: which ids, not in which order. */
export const tidy = (changes: { added: string[]; updated: string[]; removed: string[] }) => ({
  added: sorted(changes.added),
  updated: sorted(changes.updated),
  removed: sorted(changes.removed),
});
export const tidySources = (changeset: Changeset) =>
  Object.fromEntries(Object.entries(changeset.sources).map(([k, v]) => [k, tidy(v)]));
