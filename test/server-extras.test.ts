import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectionMembers, listBody } from '../src/server/answer.ts';
import { parseMask } from '../src/server/mask.ts';
import type { RequestOptions } from '../src/server/options.ts';
import { type ReadApiServer, type ReloadEvent, SnapshotError, startServer } from '../src/server/index.ts';
import { type PreparedRecord, PreparedRepository } from '../src/server/repository.ts';
import { parseSnapshot } from '../src/server/snapshot.ts';
import { parseSorting, sortRecords } from '../src/server/sorting.ts';
import { fixture, getJson, startTiny, tinyKey } from './helpers/server.ts';

/**
 * Spec §10 (asset files, webhooks), §1 (snapshot validation and reloading) and the `serve`
 * command, against the real server and the real CLI process.
 */

const tinyFile = fixture('tiny.json');
/** A fresh deep copy of the tiny fixture, to edit. */
const tiny = (): any => JSON.parse(readFileSync(tinyFile, 'utf8'));

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'read-api-extras-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let folders = 0;
/** A new folder under the scratch folder holding `tiny.json` with the given content (and the fixture's image). */
function snapshotFolder(snapshot: object = tiny()): string {
  const dir = join(scratch, `case-${++folders}`);
  mkdirSync(join(dir, 'images'), { recursive: true });
  writeFileSync(join(dir, 'images', 'apples.svg'), readFileSync(fixture('images/apples.svg')));
  writeFileSync(join(dir, 'tiny.json'), JSON.stringify(snapshot, null, 2));
  return join(dir, 'tiny.json');
}

/** Replaces a file in one step, as an editor that saves atomically does, so the watcher never reads half a file. */
function rewrite(file: string, content: string): void {
  writeFileSync(`${file}.partial`, content);
  renameSync(`${file}.partial`, file);
}

/** GETs a path exactly as written (fetch would resolve `..` before sending it). */
function rawGet(server: ReadApiServer, path: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest(`${server.origin}/`, { path }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks).toString() }));
    })
      .on('error', reject)
      .end();
  });
}

describe('§10 a relative asset URL is answered as an absolute URL under /files/<repo>/', () => {
  let server: ReadApiServer;
  beforeAll(async () => {
    server = await startTiny();
  });
  afterAll(() => server.close());

  it('on the asset route', async () => {
    const { body } = await getJson(server, '/tiny/assets/300');
    expect(body.fields.file).toEqual({
      url: `${server.origin}/files/tiny/images/apples.svg`,
      fileName: 'apples.svg',
      mimeType: 'image/svg+xml',
      size: 114,
      width: 100,
      height: 80,
    });
  });

  it('in embedded assets, in includes and with locale=all', async () => {
    const url = `${server.origin}/files/tiny/images/apples.svg`;
    expect((await getJson(server, '/tiny/documents/100?embedAssets=true')).body.fields.images[0].fields.file.url).toBe(url);
    expect((await getJson(server, '/tiny/documents/100?includes=1')).body.includes.images[0].fields.file.url).toBe(url);
    expect((await getJson(server, '/tiny/assets/300?locale=all')).body.fields.file.url).toBe(url);
  });

  it('leaves an absolute URL as it is', async () => {
    expect((await getJson(server, '/tiny/assets/301')).body.fields.file.url).toBe('https://images.example.com/ada.png');
  });

  it('serves the file at that URL with its content type, without a key', async () => {
    const response = await fetch(`${server.origin}/files/tiny/images/apples.svg`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/svg+xml');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(Buffer.from(await response.arrayBuffer())).toEqual(readFileSync(fixture('images/apples.svg')));
  });

  it('answers HEAD on the file with its length and no body', async () => {
    const response = await fetch(`${server.origin}/files/tiny/images/apples.svg`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(readFileSync(fixture('images/apples.svg')).length));
    expect(await response.text()).toBe('');
  });

  it('encodes a file name with spaces, and serves it under the encoded URL', async () => {
    const snapshot = tiny();
    snapshot.assets[0].fields.file.url = './images/green apples.svg';
    const file = snapshotFolder(snapshot);
    renameSync(join(file, '..', 'images', 'apples.svg'), join(file, '..', 'images', 'green apples.svg'));
    const other = await startServer({ paths: [file], watch: false });
    try {
      const url = (await getJson(other, '/tiny/assets/300')).body.fields.file.url;
      expect(url).toBe(`${other.origin}/files/tiny/images/green%20apples.svg`);
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/svg+xml');
    } finally {
      await other.close();
    }
  });
});

describe('§10 only asset files are served: anything else under /files is 404', () => {
  let server: ReadApiServer;
  beforeAll(async () => {
    server = await startTiny();
  });
  afterAll(() => server.close());

  const paths = [
    '/files/tiny/../tiny.json',
    '/files/tiny/%2e%2e/tiny.json',
    '/files/tiny/%2E%2E%2Ftiny.json',
    '/files/tiny/images/../../fixtures/tiny.json',
    '/files/tiny/images/%2e%2e/%2e%2e/helpers/server.ts',
    '/files/tiny/..%5Ctiny.json',
    '/files/tiny/%2Fetc%2Fpasswd',
    '/files/tiny//etc/passwd',
    // The snapshot sits in the folder it serves files from, and holds the API keys.
    '/files/tiny/tiny.json',
    '/files/tiny/images/../tiny.json',
    '/files/tiny/images/%2e%2e/tiny.json',
    '/files/tiny/images/missing.svg',
    '/files/nowhere/images/apples.svg',
  ];
  for (const path of paths) {
    it(`GET ${path}`, async () => {
      const answer = await rawGet(server, path);
      expect(answer.status).toBe(404);
      expect(answer.body).not.toContain(tinyKey);
      expect(JSON.parse(answer.body).error.code).toBe('not_found');
    });
  }

  it('serves no files for a snapshot given as an object, which has no folder', async () => {
    const other = await startServer({ snapshots: [tiny()], watch: false });
    try {
      expect((await rawGet(other, '/files/tiny/images/apples.svg')).status).toBe(404);
    } finally {
      await other.close();
    }
  });
});

describe('§1 a snapshot that breaks the rules is refused at start, naming the file and the JSON path', () => {
  const cases: [string, (s: any) => void, string, string][] = [
    ['an unknown content type', (s) => (s.documents[1].meta.contentType = 'blog'), '$.documents[1].meta.contentType', 'blog'],
    ['a localized value with a locale the repository lacks', (s) => (s.documents[0].fields.title.fr_FR = 'Récolte'), '$.documents[0].fields.title', 'fr_FR'],
    ['a localized boolean field', (s) => (s.contentTypes[0].fields[4].localized = true), '$.contentTypes[0].fields[4].localized', 'boolean'],
    ['duplicate ids', (s) => (s.documents[2].meta.id = '100'), '$.documents[2].meta.id', '100'],
    ['a document id shared with an asset', (s) => (s.assets[1].meta.id = '201'), '$.assets[1].meta.id', '201'],
    ['an alias to a missing document', (s) => (s.aliases[0].document = '555'), '$.aliases[0].document', '555'],
    ['an alias to an asset', (s) => (s.aliases[0].document = '300'), '$.aliases[0].document', '300'],
    [
      'a fallback chain that does not end at the default locale',
      (s) => {
        s.repository.locales.push({ key: 'fr_FR' });
        s.repository.locales[2].fallback = 'fr_FR';
      },
      '$.repository.locales[2].fallback',
      'de_CH',
    ],
    [
      'a collection filtering on a relation field',
      (s) => (s.collections[1].filters = [{ 'news.fields.author': { equal: '200' } }]),
      '$.collections[1].filters',
      'relation',
    ],
    ['a collection sorting on an asset field', (s) => (s.collections[0].sorting = { 'fields.images': 'ASC' }), '$.collections[0].sorting', 'asset'],
    ['a value of the wrong type', (s) => (s.documents[1].fields.rating = 'three'), '$.documents[1].fields.rating', 'number'],
  ];
  for (const [problem, breakIt, path, mentions] of cases) {
    it(`refuses ${problem} at ${path}`, async () => {
      const snapshot = tiny();
      breakIt(snapshot);
      const file = snapshotFolder(snapshot);
      const error = await startServer({ paths: [file], watch: false }).then(
        async (server) => {
          await server.close();
          throw new Error('the server started');
        },
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(SnapshotError);
      expect((error as SnapshotError).path).toBe(path);
      expect((error as SnapshotError).message).toContain(`${file}: ${path}: `);
      expect((error as SnapshotError).message).toContain(mentions);
    });
  }

  it('refuses a file that is not JSON at $', async () => {
    const file = snapshotFolder();
    writeFileSync(file, '{"repository": ');
    await expect(startServer({ paths: [file], watch: false })).rejects.toThrow(`${file}: $: not valid JSON`);
  });

  it('names a snapshot given as an object by its position', async () => {
    const snapshot = tiny();
    snapshot.documents[0].meta.contentType = 'blog';
    await expect(startServer({ snapshots: [snapshot], watch: false })).rejects.toThrow('snapshot #0: $.documents[0].meta.contentType: ');
  });
});

describe('§1 a watched snapshot file is reloaded when it changes', () => {
  it('swaps in the edited snapshot and reports what changed', async () => {
    const file = snapshotFolder();
    const server = await startServer({ paths: [file], watch: true });
    try {
      const edited = tiny();
      edited.documents[0].fields.title.en_US = 'Apple harvest, revised';
      const reloaded = once(server.events, 'reload');
      rewrite(file, JSON.stringify(edited));
      const [event] = (await reloaded) as [ReloadEvent];
      expect(event).toEqual({ repository: 'tiny', changed: ['100'], removed: [] });
      expect((await getJson(server, '/tiny/documents/100')).body.fields.title).toBe('Apple harvest, revised');
    } finally {
      await server.close();
    }
  });

  it('keeps the old snapshot in service when the new file is not JSON', async () => {
    const file = snapshotFolder();
    const server = await startServer({ paths: [file], watch: true });
    try {
      const refused = once(server.events, 'reload-error');
      rewrite(file, '{ "repository": ');
      const [{ file: refusedFile, error }] = (await refused) as [{ file: string; error: Error }];
      expect(refusedFile).toBe(file);
      expect(error.message).toContain(`${file}: $: not valid JSON`);
      expect((await getJson(server, '/tiny/documents/100')).body.fields.title).toBe('Apple harvest');
    } finally {
      await server.close();
    }
  });

  it('keeps the old snapshot in service when the new one breaks the rules, and logs why', async () => {
    const file = snapshotFolder();
    const lines: string[] = [];
    const server = await startServer({ paths: [file], watch: true, log: (line) => lines.push(line) });
    try {
      const broken = tiny();
      broken.documents[0].fields.title.en_US = 'Never served';
      broken.aliases[0].document = '555';
      const refused = once(server.events, 'reload-error');
      rewrite(file, JSON.stringify(broken));
      const [{ error }] = (await refused) as [{ error: SnapshotError }];
      expect(error.path).toBe('$.aliases[0].document');
      expect(lines.some((line) => line.includes(file) && line.includes('$.aliases[0].document'))).toBe(true);
      expect((await getJson(server, '/tiny/documents/100')).body.fields.title).toBe('Apple harvest');
    } finally {
      await server.close();
    }
  });

  it('takes a good file again after a broken one', async () => {
    const file = snapshotFolder();
    const server = await startServer({ paths: [file], watch: true });
    try {
      const refused = once(server.events, 'reload-error');
      rewrite(file, 'not json');
      await refused;
      const fixed = tiny();
      fixed.documents[0].fields.title.en_US = 'Fixed';
      const reloaded = once(server.events, 'reload');
      rewrite(file, JSON.stringify(fixed));
      await reloaded;
      expect((await getJson(server, '/tiny/documents/100')).body.fields.title).toBe('Fixed');
    } finally {
      await server.close();
    }
  });
});

describe('replaceSnapshot swaps a repository in, as a reload would', () => {
  let server: ReadApiServer;
  beforeAll(async () => {
    server = await startServer({ snapshots: [tiny()], watch: false });
  });
  afterAll(() => server.close());

  it('answers from the new snapshot and reports what changed', async () => {
    const before = await getJson(server, '/tiny/documents/101');
    const next = tiny();
    next.documents[1].fields.title.en_US = 'Banana rafts';
    next.documents = next.documents.filter((d: any) => d.meta.id !== '103');
    const event = await server.replaceSnapshot(next);
    expect(event).toEqual({ repository: 'tiny', changed: ['101'], removed: ['103'] });
    const after = await getJson(server, '/tiny/documents/101', { headers: { 'if-none-match': before.headers.get('etag')! } });
    expect(after.status).toBe(200);
    expect(after.body.fields.title).toBe('Banana rafts');
    expect((await getJson(server, '/tiny/documents/103')).status).toBe(404);
  });

  it('does again, before the new snapshot goes live, the memoised work of the one it replaces, with the new definitions', async () => {
    const ids = async (path: string) => (await getJson(server, path)).body.data.map((d: { meta: { id: string } }) => d.meta.id);
    const raw = tiny();
    const before = new PreparedRepository(parseSnapshot(raw, 'tiny.json'), 'http://localhost');
    collectionMembers(before, before.snapshot.collections.find((c) => c.apiId === 'goodNews')!, 'en_US');
    sortRecords(before, before.documents, parseSorting(before, { 'fields.title': 'ASC' }), 'de_DE');
    raw.collections.find((c: { apiId: string }) => c.apiId === 'goodNews').filters = [{ 'news.fields.rating': { greaterThanEqual: 5 } }];
    const after = new PreparedRepository(parseSnapshot(raw, 'tiny.json'), 'http://localhost');
    after.warmLike(before);
    expect([...after.memo.keys()].sort()).toEqual([...before.memo.keys()].sort());
    expect((after.memo.get('collection:goodNews:en_US')!.value as PreparedRecord[]).map((r) => r.id)).toEqual(['100']);

    // Through the server: a collection answered before a reload that changed its stored filter answers by the new one.
    expect((await ids('/tiny/collections/goodNews?locale=en_US')).sort()).toEqual(['100', '102']);
    await server.replaceSnapshot(raw);
    expect(await ids('/tiny/collections/goodNews?locale=en_US')).toEqual(['100']);
  });

  it('serves id listings from JSON made once per snapshot and mask, made again for the next snapshot before it goes live', async () => {
    const listing = 'fields=meta(id,updatedAt,revision)&limit=1000';
    const data = async (query: string) => (await getJson(server, `/tiny/documents?${query}`)).body.data;
    await server.replaceSnapshot(tiny());
    const first = await data(listing);
    expect(first.length).toBeGreaterThan(3);
    // As any other masked answer makes it (with includes, the answer takes the general path).
    expect(await data(`${listing}&includes=1`)).toEqual(first);
    expect(await data('fields=meta(revision),meta/id,meta/updatedAt&limit=1000')).toEqual(first);
    const stamps = new Map<string, { updatedAt: string; revision: number }>(tiny().documents.map((d: any) => [d.meta.id, { updatedAt: d.meta.updatedAt, revision: d.meta.revision }]));
    for (const { meta } of first) expect(meta).toEqual({ id: meta.id, ...stamps.get(meta.id) });

    // The next snapshot's listing has the new stamps, and was made before any request asked for it.
    const raw = tiny();
    Object.assign(raw.documents[1].meta, { updatedAt: '2031-01-01T00:00:00.000Z', revision: 9 });
    const before = new PreparedRepository(parseSnapshot(tiny(), 'tiny.json'), 'http://localhost');
    const options = { locale: 'en_US', limit: 1000, offset: 0, embedAssets: false, mask: parseMask('meta(id,updatedAt,revision)') } as RequestOptions;
    listBody(before, before.defaultOrder, options);
    const after = new PreparedRepository(parseSnapshot(raw, 'tiny.json'), 'http://localhost');
    after.warmLike(before);
    const made = after.memo.get('listing:meta(id,updatedAt,revision)')!.value as string[];
    expect(after.documents.map((record) => JSON.parse(made[record.index]!))).toEqual(after.documents.map((record) => ({ meta: { id: record.id, updatedAt: record.meta.updatedAt, revision: record.meta.revision } })));
    await server.replaceSnapshot(raw);
    expect((await data(listing)).find((d: any) => d.meta.id === raw.documents[1].meta.id).meta).toMatchObject({ updatedAt: '2031-01-01T00:00:00.000Z', revision: 9 });

    // Past a few masks, listings are answered all the same, without being kept.
    const masks = ['meta(id)', 'meta(updatedAt)', 'meta(revision)', 'meta(id,revision)', 'meta(id,createdAt)', 'meta(tags)'];
    for (const mask of masks) {
      const keys = mask.slice('meta('.length, -1).split(',');
      const metaOf = (id: string) => raw.documents.find((d: any) => d.meta.id === id).meta;
      expect(await data(`fields=${mask}&limit=1000`)).toEqual(first.map(({ meta }: any) => ({ meta: Object.fromEntries(keys.map((k) => [k, metaOf(meta.id)[k]])) })));
      listBody(after, after.defaultOrder, { ...options, mask: parseMask(mask) });
    }
    expect([...after.memo.keys()].filter((key) => key.startsWith('listing:'))).toEqual(['listing:meta(id,updatedAt,revision)', 'listing:meta(id)', 'listing:meta(updatedAt)', 'listing:meta(revision)']);
  });

  it('refuses a broken snapshot and keeps the current one', async () => {
    const broken = tiny();
    broken.documents[0].meta.contentType = 'blog';
    await expect(server.replaceSnapshot(broken)).rejects.toThrow('$.documents[0].meta.contentType');
    expect((await getJson(server, '/tiny')).status).toBe(200);
    expect(server.repositories()).toEqual(['tiny']);
  });

  it('adds a repository it did not serve yet', async () => {
    const other = tiny();
    other.repository.apiId = 'tiny2';
    const event = await server.replaceSnapshot(other);
    expect(event.repository).toBe('tiny2');
    expect(event.removed).toEqual([]);
    expect(event.changed.sort()).toEqual(['100', '101', '102', '103', '200', '201', '300', '301']);
    expect(server.repositories().sort()).toEqual(['tiny', 'tiny2']);
    expect((await getJson(server, '/tiny2/documents/100')).status).toBe(200);
  });
});

describe('§10 after a reload the server POSTs a signed webhook', () => {
  const secret = 'webhook-secret-for-tests';
  const sign = (body: Buffer, key = secret) => `sha256=${createHmac('sha256', key).update(body).digest('hex')}`;

  interface Delivery {
    method: string;
    headers: IncomingHttpHeaders;
    body: Buffer;
  }
  let deliveries: Delivery[];
  let delivered: (delivery: Delivery) => void;
  const nextDelivery = () => new Promise<Delivery>((resolve) => (delivered = resolve));
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const delivery = { method: request.method!, headers: request.headers, body: Buffer.concat(chunks) };
      deliveries.push(delivery);
      response.end('ok');
      delivered(delivery);
    });
  });
  let receiverUrl: string;
  beforeAll(async () => {
    deliveries = [];
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

  it('sends { repository, changed, removed } for documents and assets, signed with HMAC-SHA256 of the raw body', async () => {
    deliveries = [];
    const file = snapshotFolder();
    const server = await startServer({ paths: [file], watch: true, webhook: { url: receiverUrl, secret } });
    try {
      const next = tiny();
      next.documents[0].fields.title.en_US = 'Apple harvest, revised';
      next.documents = next.documents.filter((d: any) => d.meta.id !== '103');
      next.assets = next.assets.filter((a: any) => a.meta.id !== '301');
      next.assets.push({ ...next.assets[0], meta: { ...next.assets[0].meta, id: '302' } });
      const delivery = nextDelivery();
      rewrite(file, JSON.stringify(next));
      const { method, headers, body } = await delivery;

      expect(method).toBe('POST');
      expect(headers['content-type']).toMatch(/^application\/json/);
      const payload = JSON.parse(body.toString('utf8'));
      expect(Object.keys(payload).sort()).toEqual(['changed', 'removed', 'repository']);
      expect(payload.repository).toBe('tiny');
      expect([...payload.changed].sort()).toEqual(['100', '302']);
      expect([...payload.removed].sort()).toEqual(['103', '301']);

      const signature = headers['x-webhook-signature'] as string;
      expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
      const expected = sign(body);
      expect(timingSafeEqual(Buffer.from(signature), Buffer.from(expected))).toBe(true);
      expect(signature).not.toBe(sign(body, 'another secret'));
    } finally {
      await server.close();
    }
  });

  it('is not called for a refused reload', async () => {
    deliveries = [];
    const file = snapshotFolder();
    const server = await startServer({ paths: [file], watch: true, webhook: { url: receiverUrl, secret } });
    try {
      const refused = once(server.events, 'reload-error');
      rewrite(file, 'not json');
      await refused;
      const next = tiny();
      next.documents[1].fields.rating = 2;
      const delivery = nextDelivery();
      rewrite(file, JSON.stringify(next));
      await delivery;
      expect(deliveries).toHaveLength(1);
      expect(JSON.parse(deliveries[0]!.body.toString())).toEqual({ repository: 'tiny', changed: ['101'], removed: [] });
    } finally {
      await server.close();
    }
  });

  it('is called after replaceSnapshot too', async () => {
    deliveries = [];
    const server = await startServer({ snapshots: [tiny()], watch: false, webhook: { url: receiverUrl, secret } });
    try {
      const next = tiny();
      next.documents[5].fields.name = 'Robert';
      const delivery = nextDelivery();
      await server.replaceSnapshot(next);
      const { headers, body } = await delivery;
      expect(JSON.parse(body.toString())).toEqual({ repository: 'tiny', changed: ['201'], removed: [] });
      expect(headers['x-webhook-signature']).toBe(sign(body));
    } finally {
      await server.close();
    }
  });
});

describe('the serve command', () => {
  const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));

  interface Run {
    child: ChildProcessWithoutNullStreams;
    /** The next line the command prints on stdout. */
    nextLine(): Promise<string>;
    /** Everything printed on stdout after the lines read so far, and the exit, once the process ends. */
    exit(): Promise<{ code: number | null; signal: NodeJS.Signals | null; rest: string[]; stderr: string }>;
  }

  function run(args: string[]): Run {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    const lines: string[] = [];
    const waiting: ((line: string) => void)[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      const reader = waiting.shift();
      if (reader) reader(line);
      else lines.push(line);
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    );
    return {
      child,
      nextLine: () => (lines.length > 0 ? Promise.resolve(lines.shift()!) : new Promise<string>((resolve) => waiting.push(resolve))),
      exit: async () => ({ ...(await exited), rest: lines, stderr }),
    };
  }

  /** Starts `serve` on the tiny fixture and reads the base URL from its first line. */
  async function serve(...flags: string[]): Promise<{ run: Run; firstLine: string; url: string }> {
    const started = run(['serve', tinyFile, '--port', '0', ...flags]);
    const firstLine = await started.nextLine();
    const url = /(http:\/\/\S+\/v1)\b/.exec(firstLine)?.[1];
    if (!url) throw new Error(`no base URL in ${JSON.stringify(firstLine)}`);
    return { run: started, firstLine, url };
  }

  it('prints a base URL ending in /v1 that answers, and the repositories it serves', async () => {
    const { run: started, firstLine, url } = await serve();
    try {
      expect(firstLine).toMatch(/http:\/\/127\.0\.0\.1:\d+\/v1/);
      expect(firstLine).toContain('tiny');
      const response = await fetch(`${url}/tiny`, { headers: { authorization: tinyKey } });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { meta: { apiId: string } }).meta.apiId).toBe('tiny');
    } finally {
      started.child.kill('SIGTERM');
      await started.exit();
    }
  });

  it('logs each request: method, path without the key, status and milliseconds', async () => {
    const { run: started, url } = await serve();
    try {
      await (await fetch(`${url}/tiny/documents?key=${tinyKey}&limit=1`)).arrayBuffer();
      const line = await started.nextLine();
      expect(line).toMatch(/^GET \/v1\/tiny\/documents\?limit=1 200 \d+(\.\d+)?ms$/);

      await (await fetch(`${url}/tiny?key=wrong`)).arrayBuffer();
      expect(await started.nextLine()).toMatch(/^GET \/v1\/tiny 401 \d+(\.\d+)?ms$/);

      await (await fetch(`${url}/tiny/documents/100?%6Bey=${tinyKey}`)).arrayBuffer();
      const encoded = await started.nextLine();
      expect(encoded).toMatch(/^GET \/v1\/tiny\/documents\/100 200 \d+(\.\d+)?ms$/);

      await (await fetch(`${url}/tiny/documents`, { method: 'POST', headers: { authorization: tinyKey }, body: '{}' })).arrayBuffer();
      expect(await started.nextLine()).toMatch(/^POST \/v1\/tiny\/documents 200 \d+(\.\d+)?ms$/);
    } finally {
      started.child.kill('SIGTERM');
      const { stderr } = await started.exit();
      expect(stderr).not.toContain(tinyKey);
    }
  });

  it('prints no request lines with --quiet', async () => {
    const { run: started, url } = await serve('--quiet');
    const response = await fetch(`${url}/tiny/documents?key=${tinyKey}`);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    started.child.kill('SIGTERM');
    const { code, rest } = await started.exit();
    expect(code).toBe(0);
    expect(rest).toEqual([]);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`exits with code 0 on ${signal}, even with a connection kept alive`, async () => {
      const { run: started, url } = await serve('--quiet');
      await (await fetch(`${url}/tiny`, { headers: { authorization: tinyKey } })).arrayBuffer();
      started.child.kill(signal);
      const { code, signal: killedBy } = await started.exit();
      expect(killedBy).toBeNull();
      expect(code).toBe(0);
    });
  }

  const usageErrors: [string, string[], string][] = [
    ['a port that is not a number', ['serve', tinyFile, '--port', 'abc'], '--port'],
    ['a port out of range', ['serve', tinyFile, '--port', '70000'], '--port'],
    ['no snapshot path', ['serve', '--port', '0'], 'snapshot'],
    ['an unknown flag', ['serve', tinyFile, '--bogus'], '--bogus'],
    ['a flag without its value', ['serve', tinyFile, '--port'], '--port'],
    ['an unknown command', ['start', tinyFile], 'start'],
    ['a webhook without its secret', ['serve', tinyFile, '--port', '0', '--webhook', 'http://127.0.0.1:9/hook'], '--webhook-secret'],
  ];
  for (const [problem, args, mentions] of usageErrors) {
    it(`exits with code 2 and a message for ${problem}`, async () => {
      const { code, stderr } = await run(args).exit();
      expect(code).toBe(2);
      expect(stderr).toContain('Error:');
      expect(stderr).toContain(mentions);
      expect(stderr).toContain('Usage:');
    });
  }

  it('exits with code 1, naming the file and the JSON path, for a broken snapshot', async () => {
    const snapshot = tiny();
    snapshot.aliases[0].document = '555';
    const file = snapshotFolder(snapshot);
    const { code, stderr } = await run(['serve', file, '--port', '0']).exit();
    expect(code).toBe(1);
    expect(stderr).toContain(`${file}: $.aliases[0].document: `);
  });
});
