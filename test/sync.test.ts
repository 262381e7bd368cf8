import { spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateSnapshot } from '../bench/generate.ts';
import { NetworkError } from '../src/api/errors.ts';
import { closeAllPools } from '../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { acquireLock, cacheFormat, type RecordEntry, readManifest, RecordReader } from '../src/sync/cache.ts';
import type { Changeset } from '../src/sync/changeset.ts';
import { ConfigError, parseSyncConfig, type SyncConfigInput } from '../src/sync/config.ts';
import { sync, SyncError, type SyncLogger, type SyncResult } from '../src/sync/engine.ts';
import { entryOf, entrySchemaFor, loadEntries } from '../src/sync/entries.ts';
import type { StoredRecord } from '../src/sync/records.ts';

/**
 * The sync engine against the real local server (and small misbehaving proxies in front of it):
 * normalisation, locales, the cache, modes, the failure policy, changesets and the CLI.
 */

const key = 'mag-read-key-7d3b2468f1c0a9e5';
const otherKey = 'mag-read-key-second-00c0ffee11';

type Doc = { fields: Record<string, unknown>; meta: { id: string; contentType: string; revision: number; tags: string[]; createdAt: string; updatedAt: string } };

const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });
const meta = (id: string, contentType: string, day: number): Doc['meta'] => ({
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
function magazine() {
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
          body: { en_US: { html: '<p>Crisp <b>apples</b></p>', plain: 'Crisp apples' }, de_DE: { html: '<p>Knackige Äpfel</p>', plain: 'Knackige Äpfel' } },
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
        fields: { title: { en_US: 'Cherry season', de_DE: 'Kirschenzeit' }, rating: 4, featured: true, author: ref('2001', 'author') },
        meta: meta('1003', 'article', 3),
      },
      {
        fields: {
          name: 'Ada',
          bio: { en_US: { html: '<p>Editor</p>', plain: 'Editor' }, de_DE: { html: '<p>Redakteurin</p>', plain: 'Redakteurin' } },
          avatar: [ref('3002', '_asset')],
          favourite: ref('1003', 'article'),
        },
        meta: meta('2001', 'author', 4),
      },
      {
        fields: { name: 'Bob', bio: { en_US: { html: '<p>Reporter</p>', plain: 'Reporter' } }, favourite: ref('1001', 'article') },
        meta: meta('2002', 'author', 5),
      },
    ] as Doc[],
    assets: [
      {
        fields: {
          title: { en_US: 'Apples', de_DE: 'Äpfel' },
          description: { en_US: 'A basket of apples', de_DE: 'Ein Korb Äpfel' },
          file: { url: 'https://images.example.com/apples.jpg', fileName: 'apples.jpg', mimeType: 'image/jpeg', size: 1200, width: 800, height: 600 },
        },
        meta: meta('3001', '_asset', 6),
      },
      {
        fields: {
          title: { en_US: 'Bananas' },
          file: { url: 'https://images.example.com/bananas.png', fileName: 'bananas.png', mimeType: 'image/png', size: 900, width: 400, height: 300 },
        },
        meta: meta('3002', '_asset', 7),
      },
    ] as Doc[],
    collections: [
      { apiId: 'articles', contentType: 'article', sorting: { 'fields.rating': 'DESC' } } as Record<string, unknown>,
      { apiId: 'featured', contentType: 'article', filters: [{ 'article.fields.featured': { equal: true } }] } as Record<string, unknown>,
      { apiId: 'authors', contentType: 'author' } as Record<string, unknown>,
    ],
    aliases: [{ apiId: 'home', document: '1001' }],
  };
}
type Magazine = ReturnType<typeof magazine>;

const allRecordIds = ['1001', '1002', '1003', '2001', '2002', '3001', '3002'];

/** Marks a document as edited, as the CMS does. */
function touch(doc: Doc): void {
  doc.meta.updatedAt = new Date().toISOString();
  doc.meta.revision += 1;
}
const docOf = (snapshot: Magazine, id: string) => snapshot.documents.find((d) => d.meta.id === id)!;

// --- servers, proxies, folders -------------------------------------------------------------

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
afterAll(() => closeAllPools());

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sync-test-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Served {
  server: ReadApiServer;
  /** `METHOD path?query status`, decoded, one per request. */
  requests: string[];
  snapshot: Magazine;
  /** Serves the (edited) snapshot. */
  publish(): Promise<void>;
}

async function serve(snapshot: Magazine = magazine(), extra: unknown[] = []): Promise<Served> {
  const requests: string[] = [];
  const server = await startServer({
    snapshots: [structuredClone(snapshot), ...extra],
    watch: false,
    log: (line) => {
      if (/^(GET|POST|HEAD) /.test(line)) requests.push(decodeURIComponent(line.replace(/ [\d.]+ms$/, '')));
    },
  });
  cleanups.push(() => server.close());
  return { server, requests, snapshot, publish: async () => void (await server.replaceSnapshot(structuredClone(snapshot))) };
}

interface Proxy {
  url: string;
  /** Requests seen, `METHOD path`. */
  seen: string[];
  /** From this many requests on, every request fails (`undefined`: none fails). */
  failFrom: number | undefined;
  /** How a failing request fails: a 500 answer, or the connection dropped without an answer. */
  failure: 'status' | 'hang-up';
  /** Fails a request when this says so (besides `failFrom`). */
  failIf?: () => boolean;
}

/** A real HTTP proxy in front of the server that can rewrite answers and stop answering. */
async function startProxy(target: ReadApiServer, rewrite?: (path: string, body: any) => any): Promise<Proxy> {
  const proxy: Proxy = { url: '', seen: [], failFrom: undefined, failure: 'status' };
  const server: Server = createServer((req, res) => {
    proxy.seen.push(`${req.method} ${decodeURIComponent(req.url ?? '')}`);
    if ((proxy.failFrom !== undefined && proxy.seen.length >= proxy.failFrom) || proxy.failIf?.()) {
      if (proxy.failure === 'hang-up') req.socket.destroy();
      else res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 500, message: 'down', error: { code: 'server_error', message: 'down for maintenance' } }));
      return;
    }
    const upstream = httpRequest({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer: IncomingMessage) => {
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
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
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
function recorder(): SyncLogger & { infos: string[]; warns: string[] } {
  const infos: string[] = [];
  const warns: string[] = [];
  return { infos, warns, info: (m) => infos.push(m), warn: (m) => warns.push(m) };
}

const standard = { collections: { articles: {}, featured: {} }, aliases: ['home'], queries: { authors: { contentType: 'author' } } } satisfies Partial<SyncConfigInput>;

function configFor(baseUrl: string, cacheDir: string, extra: Partial<SyncConfigInput> = {}): SyncConfigInput {
  return { baseUrl, repository: 'mag', apiKey: key, cacheDir, onError: 'fail', ...standard, ...extra };
}

async function recordsOf(result: Pick<SyncResult, 'reader'>): Promise<Map<string, StoredRecord>> {
  const out = new Map<string, StoredRecord>();
  for await (const record of result.reader.all()) out.set(record.id, record);
  return out;
}

/** Damages a cache: the articles' members name a record it does not have. */
async function addMemberThatIsNoRecord(dir: string): Promise<void> {
  const head = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
  head.sources['collection:articles'].members.push('9999');
  head.sources['collection:articles'].digests.push('x');
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(head));
}

/** Every file of the cache folder with its bytes, to prove a failed sync changed nothing. */
async function folderState(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await readdir(dir)).sort()) out[name] = (await readFile(join(dir, name))).toString('base64');
  return out;
}

const sorted = (ids: Iterable<string>) => [...ids].sort();
const none = { added: [], updated: [], removed: [] };
/** Changes with their ids sorted: which ids, not in which order. */
const tidy = (changes: { added: string[]; updated: string[]; removed: string[] }) => ({ added: sorted(changes.added), updated: sorted(changes.updated), removed: sorted(changes.removed) });
const tidySources = (changeset: Changeset) => Object.fromEntries(Object.entries(changeset.sources).map(([k, v]) => [k, tidy(v)]));

// --- config ---------------------------------------------------------------------------------

describe('config validation', () => {
  const valid = { baseUrl: 'http://127.0.0.1:1/v1', repository: 'mag', apiKey: key, collections: { articles: {} } };

  function problem(input: unknown): ConfigError {
    try {
      parseSyncConfig(input);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return error as ConfigError;
    }
    throw new Error('expected a ConfigError');
  }

  it('accepts a minimal config and fills in the defaults', () => {
    const config = parseSyncConfig({ ...valid, onError: 'fail' });
    expect(config).toMatchObject({ mode: 'incremental', safetyMarginMs: 300_000, concurrency: 8, pageSize: 1000, aliases: [], queries: {}, onError: 'fail' });
  });

  it('names the option and the allowed values when the mode is wrong', () => {
    const error = problem({ ...valid, mode: 'sometimes' });
    expect(error.option).toBe('mode');
    expect(error.message).toContain('mode');
    for (const allowed of ['incremental', 'fresh', 'offline']) expect(error.message).toContain(allowed);
    expect(error.message).toContain('sometimes');
  });

  it('names the option of onError and its allowed values', () => {
    const error = problem({ ...valid, onError: 'ignore' });
    expect(error.option).toBe('onError');
    expect(error.message).toMatch(/"fail".*"use-cache"/);
  });

  it('names nested source options by their path', () => {
    expect(problem({ ...valid, collections: { articles: { includes: 9 } } }).option).toBe('collections.articles.includes');
    expect(problem({ ...valid, collections: { articles: { colour: 'red' } } }).message).toContain('"colour"');
    expect(problem({ ...valid, queries: { people: { sorting: { name: 'ASC' } } } }).option).toMatch(/^queries\.people\.sorting/);
  });

  it('asks for the repository and the key when they are missing', () => {
    expect(problem({ ...valid, repository: undefined }).option).toBe('repository');
    const error = problem({ ...valid, apiKey: undefined });
    expect(error.option).toBe('apiKey');
    expect(error.message).toMatch(/environment/);
  });

  it('refuses a config with nothing to sync', () => {
    const error = problem({ baseUrl: valid.baseUrl, repository: 'mag', apiKey: key });
    expect(error.option).toBe('collections');
    expect(error.message).toMatch(/nothing to sync/);
  });

  it('shows the wrong value, but never the API key', () => {
    expect(problem({ ...valid, pageSize: 5000 }).message).toContain('5000');
    const error = problem({ ...valid, apiKey: [key] });
    expect(error.option).toBe('apiKey');
    expect(error.message).not.toContain(key);
  });

  it('is checked before anything touches the cache or the network', async () => {
    const dir = await tempDir();
    await expect(sync({ ...valid, cacheDir: dir, mode: 'sometimes' } as never, recorder())).rejects.toBeInstanceOf(ConfigError);
    expect(await readdir(dir)).toEqual([]);
  });

  it('defaults onError to fail when CI is set, and to use-cache otherwise', () => {
    const before = process.env.CI;
    try {
      process.env.CI = 'true';
      expect(parseSyncConfig(valid).onError).toBe('fail');
      delete process.env.CI;
      expect(parseSyncConfig(valid).onError).toBe('use-cache');
    } finally {
      if (before === undefined) delete process.env.CI;
      else process.env.CI = before;
    }
  });
});

// --- normalisation --------------------------------------------------------------------------

describe('normalisation into records', () => {
  let result: SyncResult;
  let records: Map<string, StoredRecord>;
  let log: ReturnType<typeof recorder>;

  beforeEach(async () => {
    const { server } = await serve();
    log = recorder();
    result = await sync(configFor(server.url, await tempDir()), log);
    records = await recordsOf(result);
  });

  const entry = (id: string, locale: string) => entryOf(records.get(id)!, locale, result.manifest.locales, (assetId) => records.get(assetId));

  it('keeps one record per document or asset, however many sources and includes reach it', async () => {
    expect(sorted(records.keys())).toEqual(allRecordIds);
    expect(sorted(result.manifest.records.keys())).toEqual(allRecordIds);
    expect(result.stats.written).toBe(allRecordIds.length);
    const lines = (await Promise.all((await readdir(result.cacheDir)).filter((n) => n.startsWith('records-')).map((n) => readFile(join(result.cacheDir, n), 'utf8'))))
      .join('')
      .trim()
      .split('\n');
    expect(lines).toHaveLength(allRecordIds.length);
  });

  it('keeps the own values of every locale of a localized field, without fallback', () => {
    expect(records.get('1001')!.fields.title).toEqual({ en_US: 'Apple harvest', de_DE: 'Apfelernte', de_CH: 'Öpfelernte' });
    expect(records.get('1002')!.fields.title).toEqual({ en_US: 'Banana boats' });
    expect(records.get('1001')!.localized).toEqual(['title', 'body', 'gallery']);
    expect(records.get('1001')!.fields.rating).toBe(5);
  });

  it('applies the fallback chain in entries and marks where a value came from', () => {
    expect(entry('1003', 'de_CH').fields.title).toBe('Kirschenzeit');
    expect(entry('1003', 'de_CH').fallbacks).toEqual({ title: 'de_DE' });
    expect(entry('1002', 'de_CH').fields.title).toBe('Banana boats');
    expect(entry('1002', 'de_CH').fallbacks).toEqual({ title: 'en_US', body: 'en_US' });
    expect(entry('1002', 'de_DE').fallbacks).toEqual({ title: 'en_US', body: 'en_US' });
    expect(entry('1001', 'de_CH').fields.title).toBe('Öpfelernte');
    expect(entry('1001', 'de_CH').fallbacks).toEqual({ body: 'de_DE', gallery: 'de_DE' });
    expect(entry('1001', 'en_US').fallbacks).toEqual({});
  });

  it('gives relations as references to their record', () => {
    expect(entry('1001', 'en_US').fields.author).toEqual({ id: '2001', contentType: 'author' });
    expect(entry('1001', 'de_DE').fields.related).toEqual([{ id: '1002', contentType: 'article' }]);
    expect(records.get('1001')!.fields.author).toEqual({ id: '2001', contentType: 'author' });
  });

  it('reports a dangling reference with the document and field, keeps it as a reference, and goes on', () => {
    expect(result.dangling).toEqual([{ from: '1002', field: 'related', id: '1999' }]);
    expect(result.manifest.dangling).toEqual(result.dangling);
    expect(entry('1002', 'en_US').fields.related).toEqual([
      { id: '1001', contentType: 'article' },
      { id: '1999', contentType: 'article' },
    ]);
    const warning = result.warnings.find((w) => w.includes('1999'));
    expect(warning).toBeDefined();
    expect(warning).toContain('1002');
    expect(warning).toContain('related');
    expect(log.warns).toContain(warning);
  });

  it('turns assets into image objects with src, size and alt text in each locale', () => {
    const apples = { id: '3001', src: 'https://images.example.com/apples.jpg', width: 800, height: 600, mimeType: 'image/jpeg', fileName: 'apples.jpg' };
    expect(entry('1001', 'en_US').fields.cover).toEqual([{ ...apples, alt: 'A basket of apples' }]);
    expect(entry('1001', 'de_DE').fields.cover).toEqual([{ ...apples, alt: 'Ein Korb Äpfel' }]);
    expect(entry('1001', 'de_CH').fields.cover).toEqual([{ ...apples, alt: 'Ein Korb Äpfel' }]);
    // Without a description the title is the alt text; a localized asset field follows its locale.
    const bananas = { id: '3002', src: 'https://images.example.com/bananas.png', width: 400, height: 300, alt: 'Bananas', mimeType: 'image/png', fileName: 'bananas.png' };
    expect(entry('1001', 'de_DE').fields.gallery).toEqual([bananas]);
    expect(entry('1001', 'en_US').fields.gallery).toEqual([{ ...apples, alt: 'A basket of apples' }, bananas]);
    expect(records.get('3001')!.contentType).toBe('_asset');
  });

  it('keeps richtext as html and plain text', () => {
    expect(entry('1001', 'de_CH').fields.body).toEqual({ html: '<p>Knackige Äpfel</p>', plain: 'Knackige Äpfel' });
    expect(entry('1002', 'en_US').fields.body).toEqual({ html: '<p>Boats</p>', plain: 'Boats' });
  });

  it('maps every field type of the spec, and the entries fit the schema built from the model', async () => {
    const article = result.manifest.model.article!;
    expect(article.title).toMatchObject({ kind: 'text', localized: true });
    expect(article.body).toMatchObject({ kind: 'richtext', localized: true });
    expect(article.rating).toMatchObject({ kind: 'number', localized: false });
    expect(article.publishedAt).toMatchObject({ kind: 'date', localized: false });
    expect(article.featured).toMatchObject({ kind: 'boolean', localized: false });
    expect(article.place).toMatchObject({ kind: 'location', localized: false });
    // A single-choice select is a plain string on the wire: it reads as text.
    expect(article.section).toMatchObject({ localized: false });
    expect(['select', 'text']).toContain(article.section!.kind);
    expect(article.topics).toMatchObject({ kind: 'select', multiple: true });
    expect(article.color).toMatchObject({ kind: 'color' });
    expect(article.author).toMatchObject({ kind: 'relation' });
    expect(article.related).toMatchObject({ kind: 'relation', multiple: true });
    expect(article.cover).toMatchObject({ kind: 'asset', localized: false });
    expect(article.gallery).toMatchObject({ kind: 'asset', localized: true });
    expect(article.extra).toMatchObject({ kind: 'json' });

    const en = entry('1001', 'en_US').fields;
    expect(en).toMatchObject({
      rating: 5,
      publishedAt: '2024-03-01T10:00:00.000Z',
      featured: true,
      place: { lat: 47.37, lng: 8.54 },
      section: 'food',
      topics: ['fruit', 'autumn'],
      color: '#aa0000',
      extra: { source: 'wire', priority: 2 },
    });

    const entries = await loadEntries(result.reader, result.manifest.sources['collection:articles']!.members, result.manifest.locales);
    expect(entries).toHaveLength(3 * 3);
    for (const e of entries) expect(() => entrySchemaFor(result.manifest.model, e.contentType).parse(e)).not.toThrow();
  });
});

describe('a field mask on a source', () => {
  const masked = { fields: 'fields(title)' };

  for (const [order, collections] of [
    ['declared first', { featured: masked, articles: {} }],
    ['declared last', { articles: {}, featured: masked }],
  ] as const) {
    it(`does not strip the fields another source needs (${order})`, async () => {
      const served = await serve();
      const options = { collections, aliases: [], queries: {} };
      const dir = await tempDir();
      const full = await recordsOf(await sync(configFor(served.server.url, await tempDir(), { ...options, collections: { articles: {} } }), recorder()));
      const both = await recordsOf(await sync(configFor(served.server.url, dir, options), recorder()));
      expect(both.get('1001')).toEqual(full.get('1001'));
      expect(both.get('1003')).toEqual(full.get('1003'));

      (docOf(served.snapshot, '1001').fields.title as Record<string, string>).de_DE = 'Apfellese';
      docOf(served.snapshot, '1001').fields.rating = 4.5;
      touch(docOf(served.snapshot, '1001'));
      await served.publish();
      const incremental = await sync(configFor(served.server.url, dir, options), recorder());
      const fresh = await sync({ ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' }, recorder());
      expect(await recordsOf(incremental)).toEqual(await recordsOf(fresh));
      expect((await incremental.reader.get('1001'))!.fields.rating).toBe(4.5);
    });
  }

  it('keeps only the masked fields of a record once no other source needs it whole, as a fresh sync does', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir, { collections: { featured: masked, articles: {} }, aliases: [], queries: {} }), recorder());
    const options = { collections: { featured: masked }, aliases: [], queries: {} };
    const incremental = await sync(configFor(served.server.url, dir, options), recorder());
    const fresh = await sync({ ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' }, recorder());
    expect(await recordsOf(incremental)).toEqual(await recordsOf(fresh));
    expect(Object.keys((await incremental.reader.get('1001'))!.fields)).toEqual(['title']);
  });

  it('fetches whole the records a masked source left partial once another source needs them, as a fresh sync does', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir, { collections: { featured: masked }, aliases: [], queries: {} }), recorder());
    // Read back, the partial flags are in the rows.
    const table = (await readManifest(dir))!.records;
    expect(table.anyPartial()).toBe(true);
    for (const id of ['1001', '1003']) table.set(id, { ...table.get(id)!, p: undefined });
    expect(table.anyPartial()).toBe(false);

    const options = { collections: { featured: masked, articles: {} }, aliases: [], queries: {} };
    const incremental = await sync(configFor(served.server.url, dir, options), recorder());
    const fresh = await sync({ ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' }, recorder());
    expect(await recordsOf(incremental)).toEqual(await recordsOf(fresh));
    expect((await incremental.reader.get('1001'))!.fields.rating).toBeDefined();
  });

  it('keeps only the masked fields of records no other source needs', async () => {
    const { server } = await serve();
    const result = await sync(configFor(server.url, await tempDir(), { collections: { featured: masked }, aliases: [], queries: {} }), recorder());
    const records = await recordsOf(result);
    expect(sorted(records.keys())).toEqual(['1001', '1003']);
    expect(records.get('1001')!.fields).toEqual({ title: { en_US: 'Apple harvest', de_DE: 'Apfelernte', de_CH: 'Öpfelernte' } });
    expect(records.get('1001')!.updatedAt).toBe('2024-02-01T00:00:00.000Z');
  });
});

// --- locales --------------------------------------------------------------------------------

describe('locales', () => {
  it('come from the repository endpoint, with their fallbacks', async () => {
    const { server } = await serve();
    const result = await sync(configFor(server.url, await tempDir()), recorder());
    expect(result.manifest.locales).toEqual({
      defaultLocale: 'en_US',
      locales: [{ key: 'en_US' }, { key: 'de_DE', fallback: 'en_US' }, { key: 'de_CH', fallback: 'de_DE' }],
      source: 'repository',
    });
    expect(result.warnings).toEqual([expect.stringContaining('Dangling reference')]);
  });

  async function withoutLocales() {
    const { server } = await serve();
    const proxy = await startProxy(server, (path, body) => {
      if (path === '/v1/mag') delete body.meta.locales;
      return body;
    });
    return { server, proxy };
  }

  it('come from the data, with a warning, when the server does not list them', async () => {
    const { proxy } = await withoutLocales();
    const log = recorder();
    const result = await sync(configFor(proxy.url, await tempDir()), log);
    expect(result.manifest.locales.source).toBe('data');
    expect(result.manifest.locales.defaultLocale).toBe('en_US');
    expect(sorted(result.manifest.locales.locales.map((l) => l.key))).toEqual(['de_CH', 'de_DE', 'en_US']);
    expect(log.warns.some((w) => /did not list the repository's locales/.test(w))).toBe(true);
    expect(result.warnings.some((w) => /did not list the repository's locales/.test(w))).toBe(true);
  });

  it('guessed from the data, do not mistake a location or other plain objects for translations', async () => {
    const { proxy } = await withoutLocales();
    const result = await sync(configFor(proxy.url, await tempDir()), recorder());
    const records = await recordsOf(result);
    expect(records.get('1001')!.fields.place).toEqual({ lat: 47.37, lng: 8.54 });
    expect(records.get('1001')!.localized).toEqual(['title', 'body', 'gallery']);
    expect(records.get('1001')!.fields.title).toEqual({ en_US: 'Apple harvest', de_DE: 'Apfelernte', de_CH: 'Öpfelernte' });
  });

  it('guessed from the data, stay the same on a later sync that downloads nothing', async () => {
    const { proxy } = await withoutLocales();
    const dir = await tempDir();
    const only = { collections: { articles: {} }, aliases: [], queries: {} };
    const first = await sync(configFor(proxy.url, dir, only), recorder());
    const second = await sync(configFor(proxy.url, dir, only), recorder());
    expect(second.stats.written).toBe(0);
    expect(second.manifest.locales).toEqual(first.manifest.locales);
  });
});

// --- the cache ------------------------------------------------------------------------------

describe('the cache manifest', () => {
  it('records the sources, the records, the locales and the model, and where each record is', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const result = await sync(configFor(server.url, dir), recorder());
    const manifest = (await readManifest(dir))!;
    expect(manifest).toEqual(result.manifest);
    expect(manifest).toMatchObject({ format: cacheFormat, repository: 'mag', baseUrl: server.url, lastSync: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(sorted(Object.keys(manifest.sources))).toEqual(['alias:home', 'collection:articles', 'collection:featured', 'query:authors']);
    expect(manifest.sources['collection:articles']!.members).toEqual(['1001', '1003', '1002']); // the collection's sorting
    expect(manifest.sources['collection:featured']!.members).toEqual(['1003', '1001']);
    expect(manifest.sources['alias:home']).toMatchObject({ kind: 'alias', name: 'home', members: ['1001'] });
    expect(sorted(manifest.sources['alias:home']!.closure)).toEqual(['1001', '1002', '2001', '3001', '3002']);
    expect(sorted(manifest.sources['query:authors']!.members)).toEqual(['2001', '2002']);
    expect(manifest.sources['query:authors']!.digests).toEqual([expect.any(String), expect.any(String)]);
    expect(manifest.records.get('1001')).toMatchObject({ t: 'article', r: 1, u: '2024-02-01T00:00:00.000Z', f: ['author', '2001', 'related', '1002', 'cover', '3001', 'gallery', '3001', 'gallery', '3002'] });
    const reader = new RecordReader(dir, manifest);
    expect((await reader.get('2002'))!.fields.name).toBe('Bob');
    expect(Object.keys(manifest.etags).some((k) => k.includes('/alias/home'))).toBe(true);
  });

  it('reads the records as a Map whose entries are made when first asked for, and which acts as any Map', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const read = async () => (await readManifest(dir))!.records;
    const plain = new Map(await read()); // every entry made, in a plain Map
    const ids = [...plain.keys()];

    // Passes over every record read the rows as they are, and agree with the entries.
    const table = await read();
    for (const targets of [['2001'], ['3001', '1002'], ['9999'], ids]) {
      const found: string[] = [];
      table.eachReferrer(new Set(targets), (id) => found.push(id));
      const referrers = [...plain].filter(([, entry]) => entry.f.some((target, i) => i % 2 === 1 && targets.includes(target))).map(([id]) => id);
      expect(sorted(found)).toEqual(sorted(referrers));
    }
    table.get(ids[0]!); // one entry made, the others read from the rows
    const found: string[] = [];
    table.eachReferrer(new Set(['2001']), (id) => found.push(id));
    expect(sorted(found)).toEqual(sorted([...plain].filter(([, entry]) => entry.f.includes('2001')).map(([id]) => id)));
    expect(table.anyPartial()).toBe(false);
    for (const [id, { u, r, t }] of plain) {
      expect(table.typeOf(id)).toBe(t);
      expect(table.sameStamps(id, u, r)).toBe(true);
      expect(table.sameStamps(id, u, r + 1)).toBe(false);
    }
    expect(table.sameStamps('nothing', '', 0)).toBe(false);
    expect(table.typeOf('nothing')).toBeUndefined();

    // Seeded random gets, sets and deletes, half of them before an entry is made.
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const other = (await read()) as Map<string, RecordEntry>;
    for (let step = 0; step < 300; step++) {
      const id = random() < 0.9 ? ids[Math.floor(random() * ids.length)]! : `new-${step % 7}`;
      const what = random();
      if (what < 0.3) expect(other.get(id)).toEqual(plain.get(id));
      else if (what < 0.5) expect(other.has(id)).toBe(plain.has(id));
      else if (what < 0.75) {
        const entry = { ...plain.get(ids[0]!)!, o: step };
        other.set(id, entry);
        plain.set(id, entry);
      } else expect(other.delete(id)).toBe(plain.delete(id));
      expect(other.size).toBe(plain.size);
    }
    expect(sorted(other.keys())).toEqual(sorted(plain.keys()));
    expect(new Map([...other].sort())).toEqual(new Map([...plain].sort()));
  });

  it('compares listed stamps in the order of the rows, and sums what each segment holds, as the entries would', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const result = await sync(configFor(server.url, dir), recorder());
    const read = async () => (await readManifest(dir))!.records;
    const plain = new Map(await read());
    // A full index lists the sources' members first, in the order listed.
    const members = [...new Set(Object.values(result.manifest.sources).flatMap((state) => state.members))];
    expect([...(await read()).keys()].slice(0, members.length)).toEqual(members);

    const ids = [...plain.keys()];
    const orders = [ids, [...ids].reverse(), [ids[2]!, 'unknown', ...ids.slice(0, 2), ...ids.slice(4)]];
    const table = await read();
    table.get(ids[1]!); // made an entry
    const changed = { ...plain.get(ids[3]!)!, r: 99 };
    table.set(ids[3]!, changed); // replaced: its row no longer holds
    plain.set(ids[3]!, changed);
    table.delete(ids[5]!);
    plain.delete(ids[5]!);
    for (const order of orders) {
      for (const bump of [0, 1]) {
        const same = table.sameStampsInOrder();
        for (const id of order) {
          const entry = plain.get(id);
          expect(same(id, entry?.u, (entry?.r ?? 0) + bump), `${id} +${bump}`).toBe(entry !== undefined && bump === 0 ? id : undefined);
        }
      }
    }

    const useOf = (entries: Map<string, RecordEntry>) => {
      const use = new Map<string, { count: number; bytes: number; end: number }>();
      for (const { s, o, l } of entries.values()) {
        const known = use.get(s) ?? { count: 0, bytes: 0, end: 0 };
        use.set(s, { count: known.count + 1, bytes: known.bytes + l + 1, end: Math.max(known.end, o + l) });
      }
      return use;
    };
    expect(table.segmentUse()).toEqual(useOf(plain));
    expect((await read()).segmentUse()).toEqual(useOf(new Map(await read())));
  });

  it('reads later index files over earlier ones: their rows replace, their removed ids remove', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir), recorder());
    served.snapshot.documents = served.snapshot.documents.filter((d) => d.meta.id !== '1003');
    await served.publish();
    const second = await sync(configFor(served.server.url, dir), recorder());
    expect(second.changeset.records.removed).toContain('1003');
    expect(JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')).index).toHaveLength(2);
    const read = (await readManifest(dir))!.records;
    expect(read.has('1003')).toBe(false);
    expect(read.size).toBe(second.manifest.records.size);
    expect(read.get('1001')).toEqual(second.manifest.records.get('1001'));
    expect(new Map(read)).toEqual(new Map(second.manifest.records));
  });

  it('writes the records a sync changed to an index file of their own, and folds the files into one as they grow', async () => {
    const served = await serve();
    const dir = await tempDir();
    const indexFiles = async () => (await readdir(dir)).filter((name) => name.startsWith('index-')).sort();
    const first = await sync(configFor(served.server.url, dir), recorder());
    expect(await indexFiles()).toHaveLength(1);

    touch(docOf(served.snapshot, '1002'));
    await served.publish();
    const second = await sync(configFor(served.server.url, dir), recorder());
    expect(second.changeset.records.updated).toEqual(['1002']);
    const index = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')).index as string[];
    expect(index).toHaveLength(2);
    expect(index[0]).toBe((await indexFiles())[0]);
    const later = JSON.parse(await readFile(join(dir, index[1]!), 'utf8'));
    expect(later.ids[0]).toBe('1002');
    expect(later.digests).toEqual([second.manifest.records.get('1002')!.d]); // one row
    expect(later.rows).toHaveLength(7 + 2 * later.rows[6]);
    expect(await readManifest(dir)).toEqual(second.manifest);
    expect(second.manifest.records.get('1002')!.r).toBe(first.manifest.records.get('1002')!.r + 1);

    // A sync without a change writes no index file; one more change makes the later rows a quarter of the records.
    await sync(configFor(served.server.url, dir), recorder());
    expect(await indexFiles()).toHaveLength(2);
    touch(docOf(served.snapshot, '1003'));
    await served.publish();
    const third = await sync(configFor(served.server.url, dir), recorder());
    expect(await indexFiles()).toHaveLength(1);
    expect(JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')).index).toEqual(await indexFiles());
    expect(await readManifest(dir)).toEqual(third.manifest);
    expect(await recordsOf({ reader: new RecordReader(dir, (await readManifest(dir))!) })).toEqual(await recordsOf(third));
  });

  it('moves the records of a mostly dead segment to the new one, so the cache stays about as large as its records', async () => {
    const served = await serve();
    const dir = await tempDir();
    const segments = async () => (await readdir(dir)).filter((name) => name.startsWith('records-'));
    await sync(configFor(served.server.url, dir), recorder());
    const [first] = await segments();
    touch(docOf(served.snapshot, '1002'));
    await served.publish();
    await sync(configFor(served.server.url, dir), recorder());
    expect(await segments()).toHaveLength(2); // the first one is mostly alive: kept as it is
    for (const id of ['1001', '1002', '1003', '2001', '2002']) touch(docOf(served.snapshot, id));
    await served.publish();
    const result = await sync(configFor(served.server.url, dir), recorder());
    expect(await segments()).toHaveLength(1);
    expect(await segments()).not.toContain(first);
    expect(result.stats.written).toBe(5); // the assets were moved, not written anew
    const fresh = await sync(configFor(served.server.url, await tempDir()), recorder());
    expect(await recordsOf(result)).toEqual(await recordsOf(fresh));
    expect(await recordsOf({ reader: new RecordReader(dir, (await readManifest(dir))!) })).toEqual(await recordsOf(fresh));
  });

  it('never holds the API key, in any file', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    await sync(configFor(server.url, dir), recorder());
    const files = await readdir(dir);
    expect(files).toContain('manifest.json');
    for (const name of files) {
      const text = await readFile(join(dir, name), 'latin1');
      expect(text, name).not.toContain(key);
      expect(text, name).not.toContain(encodeURIComponent(key));
      expect(text, name).not.toContain(key.slice(-12));
    }
  });

  it('does not depend on the key: another key of the same repository keeps the cache', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const second = await sync({ ...configFor(server.url, dir), apiKey: otherKey }, recorder());
    expect(second.stats.written).toBe(0);
    expect(second.warnings.filter((w) => /rebuild/.test(w))).toEqual([]);
  });
});

describe('atomic commits', () => {
  it('a sync that fails half-way leaves the previous manifest and records intact and readable', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const first = await sync(configFor(proxy.url, dir), recorder());
    const before = await folderState(dir);
    const recordsBefore = await recordsOf(first);

    const title = docOf(served.snapshot, '1001').fields.title as Record<string, string>;
    title.en_US = 'Pear harvest';
    touch(docOf(served.snapshot, '1001'));
    served.snapshot.documents = served.snapshot.documents.filter((d) => d.meta.id !== '1003');
    await served.publish();
    proxy.failFrom = proxy.seen.length + 4; // the repository and a few listings get through, then nothing
    await expect(sync(configFor(proxy.url, dir), recorder())).rejects.toMatchObject({ code: 'server_failed' });

    expect(await folderState(dir)).toEqual(before);
    const manifest = (await readManifest(dir))!;
    expect(manifest).toEqual(first.manifest);
    expect(await recordsOf({ reader: new RecordReader(dir, manifest) })).toEqual(recordsBefore);
  });

  it('a sync whose connection drops leaves the previous cache too, and the next sync completes the change', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    await sync(configFor(proxy.url, dir), recorder());
    const before = await folderState(dir);

    touch(docOf(served.snapshot, '2002'));
    docOf(served.snapshot, '2002').fields.name = 'Robert';
    await served.publish();
    proxy.failure = 'hang-up';
    proxy.failFrom = proxy.seen.length + 2;
    await expect(sync(configFor(proxy.url, dir), recorder())).rejects.toBeInstanceOf(SyncError);
    expect(await folderState(dir)).toEqual(before);

    proxy.failFrom = undefined;
    const result = await sync(configFor(proxy.url, dir), recorder());
    expect(result.changeset.records.updated).toEqual(['2002']);
    expect((await result.reader.get('2002'))!.fields.name).toBe('Robert');
  });

  it('a large sync that fails after part of its new segment is on disk leaves no trace of it', async () => {
    const snapshot = generateSnapshot({ documents: 1500, seed: 9, apiId: 'big', key });
    const server = await startServer({ snapshots: [structuredClone(snapshot)], watch: false });
    cleanups.push(() => server.close());
    const proxy = await startProxy(server);
    const dir = await tempDir();
    const config: SyncConfigInput = {
      baseUrl: proxy.url,
      repository: 'big',
      apiKey: key,
      cacheDir: dir,
      onError: 'fail',
      pageSize: 250,
      collections: { latest: {}, technology: {}, authors: {} },
      queries: { categories: { contentType: 'category' } },
    };
    const first = await sync(config, recorder());
    // Several sources wrote to the segment at once; every record still reads back whole.
    const records = await recordsOf(first);
    expect(records.size).toBe(first.manifest.records.size);
    expect(await recordsOf(await sync({ ...config, cacheDir: await tempDir(), mode: 'fresh' }, recorder()))).toEqual(records);
    const before = await folderState(dir);

    for (const doc of snapshot.documents) touch(doc as Doc);
    await server.replaceSnapshot(snapshot);
    let failedWithPartialSegment = false;
    proxy.failIf = () => (failedWithPartialSegment ||= readdirSync(dir).some((name) => name.endsWith('.jsonl.tmp')));
    await expect(sync(config, recorder())).rejects.toMatchObject({ code: 'server_failed' });
    expect(failedWithPartialSegment).toBe(true);
    expect(await folderState(dir)).toEqual(before);
    expect(await recordsOf({ reader: new RecordReader(dir, (await readManifest(dir))!) })).toEqual(records);
  });

  it('a first sync that fails leaves no cache at all, never an empty or half-written one', async () => {
    const { server } = await serve();
    const proxy = await startProxy(server);
    proxy.failFrom = 3;
    const dir = await tempDir();
    await expect(sync({ ...configFor(proxy.url, dir), onError: 'use-cache' }, recorder())).rejects.toMatchObject({ code: 'server_failed' });
    expect(await readdir(dir)).toEqual([]);
    await expect(sync({ ...configFor(proxy.url, dir), mode: 'offline' }, recorder())).rejects.toMatchObject({ code: 'offline_without_cache' });
  });
});

describe('the cache lock', () => {
  it('makes a second concurrent sync wait for the first, then build on its cache', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const results = await Promise.all([sync(configFor(server.url, dir), recorder()), sync(configFor(server.url, dir), recorder())]);
    expect(results.map((r) => r.stats.written).sort()).toEqual([0, allRecordIds.length]);
    expect(results.flatMap((r) => r.warnings).filter((w) => /lock|rebuild/.test(w))).toEqual([]);
    expect(await readdir(dir)).not.toContain('sync.lock');
  });

  it('is waited for while a live process holds it', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const release = await acquireLock(dir);
    let settled = false;
    const waiting = sync(configFor(server.url, dir), recorder()).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(settled).toBe(false);
    expect(await readdir(dir)).toEqual(['sync.lock']);
    await release();
    expect((await waiting).stats.written).toBe(allRecordIds.length);
  });

  it('that was just created and is not written yet is waited for, not taken over', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await writeFile(join(dir, 'sync.lock'), '');
    let settled = false;
    const waiting = sync(configFor(server.url, dir), recorder()).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(settled).toBe(false);
    await rm(join(dir, 'sync.lock'));
    const result = await waiting;
    expect(result.warnings.filter((w) => /lock/.test(w))).toEqual([]);
  });

  it('left unreadable long ago is taken over, with a warning', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await writeFile(join(dir, 'sync.lock'), '{"pid":');
    const anHourAgo = new Date(Date.now() - 3_600_000);
    await utimes(join(dir, 'sync.lock'), anHourAgo, anHourAgo);
    const result = await sync(configFor(server.url, dir), recorder());
    expect(result.warnings.some((w) => w.includes('stale cache lock'))).toBe(true);
  });

  it('left by a process that is gone is taken over, with a warning', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const dead = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid!;
    await writeFile(join(dir, 'sync.lock'), JSON.stringify({ pid: dead, host: hostname(), since: new Date().toISOString() }));
    const result = await sync(configFor(server.url, dir), recorder());
    expect(result.stats.written).toBe(allRecordIds.length);
    expect(result.warnings.some((w) => w.includes('stale cache lock') && w.includes(String(dead)))).toBe(true);
    expect(await readdir(dir)).not.toContain('sync.lock');
  });
});

describe('a damaged or foreign cache', () => {
  async function synced() {
    const served = await serve();
    const dir = await tempDir();
    const first = await sync(configFor(served.server.url, dir), recorder());
    return { ...served, dir, first };
  }

  async function expectRebuilt(result: SyncResult, warning: RegExp) {
    expect(result.warnings.some((w) => warning.test(w) && /rebuild/.test(w)), result.warnings.join('\n')).toBe(true);
    expect(result.stats.written).toBe(allRecordIds.length);
    expect(sorted((await recordsOf(result)).keys())).toEqual(allRecordIds);
  }

  it('a corrupt manifest is detected and the cache rebuilt with a warning', async () => {
    const { server, dir } = await synced();
    await writeFile(join(dir, 'manifest.json'), '{"format": 1, "records": ');
    await expectRebuilt(await sync(configFor(server.url, dir), recorder()), /not valid JSON/);
  });

  it('a manifest of the wrong shape is detected and rebuilt with a warning', async () => {
    const { server, dir } = await synced();
    const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
    delete manifest.sources;
    await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
    await expectRebuilt(await sync(configFor(server.url, dir), recorder()), /damaged/);
  });

  it('a damaged record row, segment name or source list is detected and rebuilt with a warning', async () => {
    const { server, dir } = await synced();
    const head = await readFile(join(dir, 'manifest.json'), 'utf8');
    const [index] = JSON.parse(head).index as string[];
    const rows = await readFile(join(dir, index!), 'utf8');
    const damage: [string, (json: any) => unknown][] = [
      [index!, (m) => (m.rows[8] = m.ids.length)], // a reference to an id the file does not have
      [index!, (m) => (m.rows[2] = 0)], // a record of no length
      [index!, (m) => (m.rows[6] = m.rows.length)], // more references than the file holds
      [index!, (m) => (m.rows[4] = m.types.length)], // a content type the file does not name
      [index!, (m) => m.rows.push(0)], // more numbers than the rows use
      [index!, (m) => m.digests.pop()], // a digest short
      ['manifest.json', (m) => Object.values<{ digests: unknown[] }>(m.sources)[0]!.digests.pop()],
      ['manifest.json', (m) => m.index.push(...Array.from({ length: 40 }, () => m.index[0]))], // more index files than a cache has
      [index!, (m) => (m.segments[0] = '.')], // a segment name that is no segment (a folder)
      ['manifest.json', (m) => Object.values<{ included: unknown[] }>(m.sources)[0]!.included.push('9999')], // no such record
    ];
    for (const [file, change] of damage) {
      const json = JSON.parse(file === index ? rows : head);
      change(json);
      await writeFile(join(dir, file), JSON.stringify(json));
      await expect(readManifest(dir)).rejects.toThrow(/damaged at (rows\.\d+|digests|index|segments\.0|sources\..+\.(digests|included))$/);
      await writeFile(join(dir, index!), rows);
      await writeFile(join(dir, 'manifest.json'), head);
    }
    await rm(join(dir, index!));
    await expectRebuilt(await sync(configFor(server.url, dir), recorder()), /index .* is missing/);
  });

  it('a member that is no record is damage to readManifest; a sync, which looks every listed member up, just lists the members again', async () => {
    const { server, dir } = await synced();
    await addMemberThatIsNoRecord(dir);
    await expect(readManifest(dir)).rejects.toThrow(/damaged at sources\.collection:articles\.members$/);
    expect(await readManifest(dir, { checkMembers: false })).toBeDefined();

    const log = recorder();
    const result = await sync(configFor(server.url, dir), log);
    expect(log.warns.filter((warning) => /damaged|rebuild/.test(warning))).toEqual([]);
    expect(result.stats.written).toBe(0);
    expect(result.manifest.sources['collection:articles']!.members).toEqual(['1001', '1003', '1002']);
    expect(result.changeset.sources['collection:articles']).toEqual({ added: [], updated: [], removed: ['9999'] });
    expect(await readManifest(dir)).toEqual(result.manifest);
    const fresh = await sync(configFor(server.url, await tempDir()), recorder());
    expect(await recordsOf(result)).toEqual(await recordsOf(fresh));
  });

  it('a missing segment is detected and the cache rebuilt with a warning', async () => {
    const { server, dir } = await synced();
    for (const name of await readdir(dir)) if (name.startsWith('records-')) await rm(join(dir, name));
    await expectRebuilt(await sync(configFor(server.url, dir), recorder()), /segment/);
  });

  it('a truncated segment is detected and the cache rebuilt with a warning', async () => {
    const { server, dir } = await synced();
    for (const name of await readdir(dir)) if (name.startsWith('records-')) await writeFile(join(dir, name), '{"id":"1001"');
    await expectRebuilt(await sync(configFor(server.url, dir), recorder()), /segment/);
  });

  it('a cache of another repository is not reused', async () => {
    const other = magazine();
    other.repository = { ...other.repository, id: '500000000000000002', apiId: 'other', apiKeys: [key] };
    const served = await serve(magazine(), [other]);
    const dir = await tempDir();
    await sync({ ...configFor(served.server.url, dir), repository: 'other' }, recorder());
    await expectRebuilt(await sync(configFor(served.server.url, dir), recorder()), /other/);
    expect((await readManifest(dir))!.repository).toBe('mag');
  });

  it('a cache of another base URL is not reused', async () => {
    const { dir } = await synced();
    const elsewhere = await serve();
    await expectRebuilt(await sync(configFor(elsewhere.server.url, dir), recorder()), /made for/);
    expect((await readManifest(dir))!.baseUrl).toBe(elsewhere.server.url);
  });

  it('offline, a damaged cache fails clearly instead of serving it', async () => {
    const { dir } = await synced();
    await writeFile(join(dir, 'manifest.json'), 'garbage');
    const log = recorder();
    const error = await sync({ ...configFor('http://127.0.0.1:9/v1', dir), mode: 'offline' }, log).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'offline_without_cache' });
    expect(log.warns.some((w) => /not valid JSON/.test(w))).toBe(true);
  });
});

describe('a changed source option', () => {
  it('refetches only that source; the others stay incremental', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir, { collections: { articles: {}, authors: { includes: 0 } }, aliases: [], queries: {} }), recorder());
    served.requests.length = 0;
    const result = await sync(configFor(served.server.url, dir, { collections: { articles: {}, authors: { includes: 1 } }, aliases: [], queries: {} }), recorder());

    const listing = /fields=meta\(id,updatedAt,revision\)/;
    const toAuthors = served.requests.filter((r) => r.includes('/collections/authors'));
    const toArticles = served.requests.filter((r) => r.includes('/collections/articles'));
    expect(toAuthors.some((r) => !listing.test(r) && /includes=1/.test(r))).toBe(true); // fetched in full, with the new option
    expect(toArticles.length).toBeGreaterThan(0);
    expect(toArticles.every((r) => listing.test(r))).toBe(true); // only its member listing
    // Everything the authors now include is already cached: nothing to write.
    expect(result.stats.written).toBe(0);
    expect(result.changeset.sources['collection:articles']).toEqual(none);
    expect(tidy(result.changeset.sources['collection:authors']!)).toEqual({ added: [], updated: ['2001', '2002'], removed: [] });
    expect(result.manifest.sources['collection:authors']!.closure).toEqual(expect.arrayContaining(['1001', '1003']));
  });

  it('writes only the records the new option brings in', async () => {
    const served = await serve();
    const dir = await tempDir();
    const first = await sync(configFor(served.server.url, dir, { collections: { authors: { includes: 0 } }, aliases: [], queries: {} }), recorder());
    expect(sorted(first.manifest.records.keys())).toEqual(['2001', '2002', '3002']);
    const second = await sync(configFor(served.server.url, dir, { collections: { authors: { includes: 1, embedAssets: true } }, aliases: [], queries: {} }), recorder());
    // The favourites 1001 and 1003 and the asset 3001 of 1001 join; the authors are not written again.
    expect(tidy(second.changeset.records)).toEqual({ added: ['1001', '1003', '3001'], updated: [], removed: [] });
    expect(second.stats.written).toBe(3);
  });
});

// --- modes ----------------------------------------------------------------------------------

describe('modes', () => {
  it('fresh downloads everything again, ignoring the cache, and still reports changes against it', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir), recorder());
    served.snapshot.documents = served.snapshot.documents.filter((d) => d.meta.id !== '1002');
    await served.publish();
    served.requests.length = 0;
    const result = await sync({ ...configFor(served.server.url, dir), mode: 'fresh' }, recorder());
    expect(result.stats.written).toBe(allRecordIds.length - 1);
    expect(served.requests.some((r) => /fields=meta\(id,updatedAt,revision\)/.test(r))).toBe(false);
    expect(served.requests.every((r) => !r.endsWith(' 304'))).toBe(true);
    expect(result.changeset.records).toEqual({ added: [], updated: [], removed: ['1002'] });
    expect(tidy(result.changeset.sources['collection:articles']!)).toEqual({ added: [], updated: ['1001'], removed: ['1002'] }); // 1001 included 1002
  });

  it('offline reads only the cache, without a single request', async () => {
    const served = await serve();
    const dir = await tempDir();
    const online = await sync(configFor(served.server.url, dir), recorder());
    await served.server.close();
    const onSync: Changeset[] = [];
    const offline = await sync({ ...configFor(served.server.url, dir), mode: 'offline', onSync: (c) => void onSync.push(c) }, recorder());
    expect(offline.stats.requests).toBe(0);
    expect(offline.changeset.empty).toBe(true);
    expect(offline.manifest).toEqual(online.manifest);
    expect(await recordsOf(offline)).toEqual(await recordsOf(online));
    expect(onSync).toEqual([]);
  });

  it('offline without a cache fails clearly', async () => {
    const dir = await tempDir();
    const error = await sync({ ...configFor('http://127.0.0.1:9/v1', dir), mode: 'offline' }, recorder()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncError);
    expect(error).toMatchObject({ code: 'offline_without_cache' });
    expect((error as Error).message).toContain(dir);
    expect((error as Error).message).toMatch(/run a sync online first/);
  });
});

// --- failures -------------------------------------------------------------------------------

describe('when the server fails', () => {
  async function cachedThenDown() {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const first = await sync(configFor(proxy.url, dir), recorder());
    const before = await folderState(dir);
    touch(docOf(served.snapshot, '1001'));
    await served.publish();
    proxy.failFrom = proxy.seen.length + 3;
    return { served, proxy, dir, first, before };
  }

  it('with onError use-cache, keeps the last good content, warns and names what is stale', async () => {
    const { proxy, dir, first, before } = await cachedThenDown();
    const calls: Changeset[] = [];
    const log = recorder();
    const result = await sync({ ...configFor(proxy.url, dir), onError: 'use-cache', onSync: (c) => void calls.push(c) }, log);
    expect(sorted(result.stale)).toEqual(['alias:home', 'collection:articles', 'collection:featured', 'query:authors']);
    const warning = result.warnings.find((w) => /stale/.test(w));
    expect(warning).toBeDefined();
    for (const source of result.stale) expect(warning).toContain(source);
    expect(warning).toContain(first.manifest.lastSync);
    expect(log.warns).toContain(warning);
    expect(await recordsOf(result)).toEqual(await recordsOf(first));
    expect(result.changeset.empty).toBe(true);
    expect(calls).toEqual([]);
    expect(await folderState(dir)).toEqual(before);
  });

  it('with onError use-cache, serves the records as they were, not the changes taken in before the failure', async () => {
    const { proxy, dir, first, before } = await cachedThenDown();
    proxy.failFrom = undefined;
    // The changed document comes in (the "changed since" query); every request after it fails.
    let failing = false;
    proxy.failIf = () => {
      if (failing) return true;
      failing = /meta\.updatedAt/.test(proxy.seen.at(-1)!);
      return false;
    };
    const result = await sync({ ...configFor(proxy.url, dir), onError: 'use-cache' }, recorder());
    expect(failing).toBe(true);
    expect(result.stale.length).toBeGreaterThan(0);
    expect(result.manifest.records).toEqual(first.manifest.records);
    expect(await recordsOf(result)).toEqual(await recordsOf(first));
    expect(await folderState(dir)).toEqual(before);
  });

  it('with onError use-cache, does not serve a cache whose members are not records', async () => {
    const { proxy, dir } = await cachedThenDown();
    await addMemberThatIsNoRecord(dir);
    await expect(sync({ ...configFor(proxy.url, dir), onError: 'use-cache' }, recorder())).rejects.toMatchObject({ code: 'server_failed' });
  });

  it('with onError fail, throws and leaves the cache unchanged', async () => {
    const { proxy, dir, before } = await cachedThenDown();
    const calls: Changeset[] = [];
    const error = await sync({ ...configFor(proxy.url, dir), onError: 'fail', onSync: (c) => void calls.push(c) }, recorder()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncError);
    expect((error as Error).message).toMatch(/the cache was left as it was/);
    expect((error as Error).message).toContain('500');
    expect((error as Error).message).not.toContain(key);
    expect(calls).toEqual([]);
    expect(await folderState(dir)).toEqual(before);
  });

  it('fails by default when CI is set', async () => {
    const { proxy, dir, before } = await cachedThenDown();
    const previous = process.env.CI;
    process.env.CI = 'true';
    try {
      const { onError: _onError, ...config } = configFor(proxy.url, dir);
      await expect(sync(config, recorder())).rejects.toMatchObject({ code: 'server_failed' });
    } finally {
      if (previous === undefined) delete process.env.CI;
      else process.env.CI = previous;
    }
    expect(await folderState(dir)).toEqual(before);
  });
});

// --- onSync ---------------------------------------------------------------------------------

describe('onSync', () => {
  it('is called after the commit, with the changeset of the sync', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const seen: { changeset: Changeset; committed: string[] }[] = [];
    const result = await sync(
      {
        ...configFor(server.url, dir),
        onSync: async (changeset) => {
          const manifest = await readManifest(dir);
          seen.push({ changeset, committed: sorted(manifest?.records.keys() ?? []) });
        },
      },
      recorder(),
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]!.changeset).toEqual(result.changeset);
    expect(seen[0]!.committed).toEqual(allRecordIds);
    expect(sorted(seen[0]!.changeset.records.added)).toEqual(allRecordIds);
  });

  it('that fails, fails the sync with its own error, after the commit, even with onError use-cache', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir), recorder());
    touch(docOf(served.snapshot, '1001'));
    await served.publish();
    const failure = new NetworkError('the CDN did not answer', { method: 'POST', url: 'https://cdn.example/purge', attempts: 1 });
    const onSync = () => Promise.reject(failure);
    await expect(sync({ ...configFor(served.server.url, dir), onError: 'use-cache', onSync }, recorder())).rejects.toBe(failure);
    const committed = (await readManifest(dir))!;
    expect(committed.records.get('1001')!.r).toBe(docOf(served.snapshot, '1001').meta.revision);
  });

  it('is not called when nothing changed', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const calls: Changeset[] = [];
    await sync({ ...configFor(server.url, dir), onSync: (c) => void calls.push(c) }, recorder());
    expect(calls).toEqual([]);
  });
});

// --- incremental syncs -------------------------------------------------------------------

describe('a warm sync with no change', () => {
  it('downloads no document: only member listings and 304s', async () => {
    const served = await serve();
    const dir = await tempDir();
    const cold = await sync(configFor(served.server.url, dir), recorder());
    served.requests.length = 0;
    const warm = await sync(configFor(served.server.url, dir), recorder());
    expect(warm.stats.written).toBe(0);
    expect(warm.changeset.empty).toBe(true);
    expect(warm.stats.notModified).toBe(2); // the repository and the alias
    const answered = served.requests.filter((r) => r.endsWith(' 200'));
    expect(answered.length).toBeGreaterThan(0);
    // Member listings, and one look for the target of the dangling reference (it may exist by now).
    for (const line of answered) expect(line).toMatch(/fields=meta\(id,updatedAt,revision\)|\[\*\.meta\.id\]\[in\]=1999&/);
    expect(served.requests.filter((r) => r.endsWith(' 304'))).toHaveLength(2);
    expect(warm.stats.bytes).toBeLessThan(cold.stats.bytes / 3);
    expect(await recordsOf(warm)).toEqual(await recordsOf(cold));
  });
});

describe('changes show up exactly in the changeset', () => {
  async function change(edit: (snapshot: Magazine) => void, options: Partial<SyncConfigInput> = {}) {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir, options), recorder());
    edit(served.snapshot);
    await served.publish();
    const result = await sync(configFor(served.server.url, dir, options), recorder());
    const fresh = await sync({ ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' }, recorder());
    expect(await recordsOf(result)).toEqual(await recordsOf(fresh));
    return result;
  }

  it('a deleted document leaves its sources and the cache, and what included it is updated', async () => {
    const result = await change((s) => {
      s.documents = s.documents.filter((d) => d.meta.id !== '1003');
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: [], updated: [], removed: ['1003'] },
      'collection:featured': { added: [], updated: [], removed: ['1003'] },
      'alias:home': none,
      'query:authors': { added: [], updated: ['2001'], removed: [] }, // its favourite is gone
    });
    expect(tidy(result.changeset.records)).toEqual({ added: [], updated: [], removed: ['1003'] });
    expect(result.dangling).toContainEqual({ from: '2001', field: 'favourite', id: '1003' });
  });

  it('an unpublished document (out of a collection filter) leaves only that collection', async () => {
    const result = await change((s) => {
      docOf(s, '1003').fields.featured = false;
      touch(docOf(s, '1003'));
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: [], updated: ['1003'], removed: [] },
      'collection:featured': { added: [], updated: [], removed: ['1003'] },
      'alias:home': none,
      'query:authors': { added: [], updated: ['2001'], removed: [] },
    });
    expect(result.changeset.records).toEqual({ added: [], updated: ['1003'], removed: [] });
  });

  it('a re-pointed alias swaps its member and nothing else', async () => {
    const result = await change((s) => {
      s.aliases = [{ apiId: 'home', document: '1002' }];
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': none,
      'collection:featured': none,
      'alias:home': { added: ['1002'], updated: [], removed: ['1001'] },
      'query:authors': none,
    });
    expect(result.changeset.records).toEqual(none);
    expect(result.manifest.sources['alias:home']!.members).toEqual(['1002']);
  });

  it('a changed stored filter of a collection moves exactly the documents it selects', async () => {
    const result = await change((s) => {
      s.collections[1] = { apiId: 'featured', contentType: 'article', filters: [{ 'article.fields.rating': { lessThan: 4.5 } }] };
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': none,
      'collection:featured': { added: ['1002'], updated: [], removed: ['1001'] },
      'alias:home': none,
      'query:authors': none,
    });
    expect(result.changeset.records).toEqual(none);
    expect(result.manifest.sources['collection:featured']!.members).toEqual(['1003', '1002']);
  });

  it('a changed translation updates the document and every member that includes it', async () => {
    const result = await change((s) => {
      (docOf(s, '1001').fields.title as Record<string, string>).de_CH = 'Öpfelernt';
      touch(docOf(s, '1001'));
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: [], updated: ['1001', '1002'], removed: [] }, // 1002 includes 1001
      'collection:featured': { added: [], updated: ['1001'], removed: [] },
      'alias:home': { added: [], updated: ['1001'], removed: [] },
      'query:authors': { added: [], updated: ['2002'], removed: [] }, // Bob's favourite
    });
    expect(result.changeset.records).toEqual({ added: [], updated: ['1001'], removed: [] });
    expect((await result.reader.get('1001'))!.fields.title).toEqual({ en_US: 'Apple harvest', de_DE: 'Apfelernte', de_CH: 'Öpfelernt' });
  });

  it('an edited included record is refetched although no member changed', async () => {
    const result = await change((s) => {
      docOf(s, '2002').fields.name = 'Robert';
      touch(docOf(s, '2002'));
    });
    expect(result.changeset.records).toEqual({ added: [], updated: ['2002'], removed: [] });
    expect(result.changeset.sources['collection:articles']).toEqual({ added: [], updated: ['1002'], removed: [] });
    expect(result.changeset.sources['query:authors']).toEqual({ added: [], updated: ['2002'], removed: [] });
  });

  it('a record reached again only through a newly fetched one is checked for changes too', async () => {
    // Before: featured 1001 and 1003; 1001 → 1002 → 2002 brings Bob in at level 2.
    // After: 1001 leaves, Ada (2001, included by 1003) now favours a new 1004 written by Bob, and Bob was renamed.
    const result = await change(
      (s) => {
        docOf(s, '1001').fields.featured = false;
        touch(docOf(s, '1001'));
        docOf(s, '2001').fields.favourite = ref('1004', 'article');
        touch(docOf(s, '2001'));
        s.documents.push({ fields: { title: { en_US: 'Date night' }, rating: 2, featured: false, author: ref('2002', 'author') }, meta: { ...meta('1004', 'article', 9), updatedAt: new Date().toISOString() } });
        docOf(s, '2002').fields.name = 'Robert';
        touch(docOf(s, '2002'));
      },
      { collections: { featured: { includes: 3 } }, aliases: [], queries: {} },
    );
    expect((await result.reader.get('2002'))!.fields.name).toBe('Robert');
    expect(tidySources(result.changeset)).toEqual({ 'collection:featured': { added: [], updated: ['1003'], removed: ['1001'] } });
  });

  it('a newly added document joins its sources', async () => {
    const result = await change((s) => {
      s.documents.push({ fields: { title: { en_US: 'Date night' }, rating: 2, featured: true, author: ref('2002', 'author') }, meta: { ...meta('1004', 'article', 9), updatedAt: new Date().toISOString() } });
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: ['1004'], updated: [], removed: [] },
      'collection:featured': { added: ['1004'], updated: [], removed: [] },
      'alias:home': none,
      'query:authors': none,
    });
    expect(result.changeset.records).toEqual({ added: ['1004'], updated: [], removed: [] });
  });
});

// --- the CLI --------------------------------------------------------------------------------

describe('the sync command', () => {
  const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

  function run(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const { CI: _ci, ...env } = process.env;
      const child = spawn(process.execPath, [cli, 'sync', ...args], { cwd, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  async function project(config: Record<string, unknown>): Promise<string> {
    const dir = await tempDir();
    await writeFile(join(dir, 'comfortable.config.json'), JSON.stringify({ cacheDir: join(dir, 'cache'), ...config }));
    return dir;
  }

  it('prints progress and a changeset summary, and exits 0', async () => {
    const { server } = await serve();
    const dir = await project({ baseUrl: server.url, repository: 'mag', apiKey: key, ...standard, pageSize: 2 });
    const { code, stdout, stderr } = await run([], dir);
    expect(code).toBe(0);
    expect(stderr.trim().split('\n')).toEqual(['warning: Dangling reference: document 1002, field related points to 1999, which the server does not have']);
    expect(stdout).toContain(`Syncing with ${join(dir, 'comfortable.config.json')}`);
    expect(stdout).toMatch(/collection:articles: 2 of 3 documents/);
    expect(stdout).toMatch(/Synced mag: 7 records \(7 added, 0 updated, 0 removed\)/);
    expect(stdout).toContain('  collection:articles: 3 added, 0 updated, 0 removed');
    expect(stdout).toContain('  alias:home: 1 added, 0 updated, 0 removed');
    expect(stdout).not.toContain(key);

    const again = await run(['--mode', 'incremental'], dir);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('  collection:articles: 0 added, 0 updated, 0 removed');
  });

  it('with --json prints the result as JSON on stdout and progress on stderr', async () => {
    const { server } = await serve();
    const dir = await project({ baseUrl: server.url, repository: 'mag', apiKey: key, ...standard });
    const { code, stdout, stderr } = await run(['--json'], dir);
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(sorted(result.changeset.records.added)).toEqual(allRecordIds);
    expect(result.stats.written).toBe(7);
    expect(result.dangling).toEqual([{ from: '1002', field: 'related', id: '1999' }]);
    expect(result.cacheDir).toBe(join(dir, 'cache'));
    expect(stderr).toMatch(/Synced mag/);
  });

  it('exits 2 on a bad config, naming the option', async () => {
    const dir = await project({ baseUrl: 'http://127.0.0.1:9/v1', repository: 'mag', apiKey: key, ...standard, mode: 'sometimes' });
    const { code, stderr } = await run([], dir);
    expect(code).toBe(2);
    expect(stderr).toMatch(/mode/);
    expect(stderr).toMatch(/incremental/);
    expect(stderr).not.toContain(key);
    expect((await run(['--mode', 'sometimes'], dir)).code).toBe(2);
    expect((await run(['--config', 'missing.json'], dir)).code).toBe(2);
  });

  it('exits 1 when the sync fails', async () => {
    const dir = await project({ baseUrl: 'http://127.0.0.1:9/v1', repository: 'mag', apiKey: key, ...standard, onError: 'fail' });
    const offline = await run(['--mode', 'offline'], dir);
    expect(offline.code).toBe(1);
    expect(offline.stderr).toMatch(/Offline mode needs a cache/);
    const unreachable = await run([], dir);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/failed/);
    expect(unreachable.stderr).not.toContain(key);
  }, 60_000);
});
