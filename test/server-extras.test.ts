import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectionMembers } from '../src/server/answer.ts';
import { compileFilters } from '../src/server/filters.ts';
import { type ReadApiServer, type ReloadEvent, SnapshotError, startServer } from '../src/server/index.ts';
import { PreparedRepository, type SnapshotIndexes } from '../src/server/prepared-repository.ts';
import { parseSnapshot } from '../src/wire/snapshot.ts';
import { parseSorting, sortRecords } from '../src/server/sorting.ts';
import { warmFrom } from '../src/server/warm.ts';
import { runCli, serveProcess } from './helpers/cli.ts';
import { fixture, getJson, rewrite, snapshotFolder, tinyKey, tinySnapshot as tiny } from './helpers/server.ts';

/**
 * Spec §10 (asset files, webhooks), §1 (snapshot validation and reloading) and the `serve`
 * command, against the real server and the real CLI process.
 */

const tinyFile = fixture('tiny.json');

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'read-api-extras-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('§1 a snapshot that breaks the rules is refused at start, naming the file and the JSON path', () => {
  const cases: [string, (s: any) => void, string, string][] = [
    [
      'an unknown content type',
      (s) => (s.documents[1].meta.contentType = 'blog'),
      '$.documents[1].meta.contentType',
      'blog',
    ],
    [
      'a localized value with a locale the repository lacks',
      (s) => (s.documents[0].fields.title.fr_FR = 'Récolte'),
      '$.documents[0].fields.title',
      'fr_FR',
    ],
    [
      'a localized boolean field',
      (s) => (s.contentTypes[0].fields[4].localized = true),
      '$.contentTypes[0].fields[4].localized',
      'boolean',
    ],
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
    [
      'a collection sorting on an asset field',
      (s) => (s.collections[0].sorting = { 'fields.images': 'ASC' }),
      '$.collections[0].sorting',
      'asset',
    ],
    [
      'a value of the wrong type',
      (s) => (s.documents[1].fields.rating = 'three'),
      '$.documents[1].fields.rating',
      'number',
    ],
    [
      'fields that are no object',
      (s) => (s.documents[1].fields = ['three']),
      '$.documents[1].fields',
      'expected an object of fields',
    ],
  ];
  for (const [problem, breakIt, path, mentions] of cases) {
    it(`refuses ${problem} at ${path}`, async () => {
      const snapshot = tiny();
      breakIt(snapshot);
      const file = snapshotFolder(scratch, snapshot);
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
    const file = snapshotFolder(scratch);
    writeFileSync(file, '{"repository": ');
    await expect(startServer({ paths: [file], watch: false })).rejects.toThrow(`${file}: $: not valid JSON`);
  });

  it('names a snapshot given as an object by its position', async () => {
    const snapshot = tiny();
    snapshot.documents[0].meta.contentType = 'blog';
    await expect(startServer({ snapshots: [snapshot], watch: false })).rejects.toThrow(
      'snapshot #0: $.documents[0].meta.contentType: ',
    );
  });
});

describe('§1 a watched snapshot file is reloaded when it changes', () => {
  it('swaps in the edited snapshot and reports what changed', async () => {
    const file = snapshotFolder(scratch);
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
    const file = snapshotFolder(scratch);
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
    const file = snapshotFolder(scratch);
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
    const file = snapshotFolder(scratch);
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
    const after = await getJson(server, '/tiny/documents/101', {
      headers: { 'if-none-match': before.headers.get('etag')! },
    });
    expect(after.status).toBe(200);
    expect(after.body.fields.title).toBe('Banana rafts');
    expect((await getJson(server, '/tiny/documents/103')).status).toBe(404);
  });

  it('does again, before the new snapshot goes live, the work requests did on the one it replaces, with the new definitions', async () => {
    const ids = async (path: string) =>
      (await getJson(server, path)).body.data.map((d: { meta: { id: string } }) => d.meta.id);
    const raw = tiny();
    const before = new PreparedRepository(parseSnapshot(raw, 'tiny.json'), 'http://localhost');
    collectionMembers(before, before.snapshot.collections.find((c) => c.apiId === 'goodNews')!, 'en_US');
    sortRecords(before, before.documents, parseSorting(before, { 'fields.title': 'ASC' }), 'de_DE');
    const matches = compileFilters(
      before,
      [{ '*.fields.title': { like: '%a%' } }, { '*.meta.id': { in: ['100', '101'] } }],
      'en_US',
    );
    const candidates = matches!.candidates!();
    before.documents.filter((record) => candidates.has(record) && matches!(record, 'en_US'));
    before.localFiles();
    raw.collections.find((c: { apiId: string }) => c.apiId === 'goodNews').filters = [
      { 'news.fields.rating': { greaterThanEqual: 5 } },
    ];
    raw.documents[0].fields.title.de_DE = 'Zzz';
    const after = new PreparedRepository(parseSnapshot(raw, 'tiny.json'), 'http://localhost');
    warmFrom(after, before);
    const keys = (indexes: SnapshotIndexes) => ({
      collections: [...indexes.collections.keys()].sort(),
      columns: [...indexes.columns.keys()].sort(),
      sortRanks: [...indexes.sortRanks.keys()].sort(),
      likeTexts: [...indexes.likeTexts.keys()].sort(),
      ids: indexes.ids !== undefined,
      localFiles: indexes.localFiles !== undefined,
    });
    expect(keys(after.indexes)).toEqual(keys(before.indexes));
    expect(keys(after.indexes)).toMatchObject({
      collections: ['goodNews:en_US'],
      likeTexts: ['fields.title:en_US'],
      ids: true,
      localFiles: true,
    });
    // Made from the new snapshot: its collection definition, its values.
    expect(after.indexes.collections.get('goodNews:en_US')!.members.map((r) => r.id)).toEqual(['100']);
    const title = after.indexes.sortRanks.get('fields.title:de_DE')!.value;
    expect(Math.max(...title)).toBe(title[after.byId.get(raw.documents[0].meta.id)!.index]);

    // Through the server: a collection answered before a reload that changed its stored filter answers by the new one.
    expect((await ids('/tiny/collections/goodNews?locale=en_US')).sort()).toEqual(['100', '102']);
    await server.replaceSnapshot(raw);
    expect(await ids('/tiny/collections/goodNews?locale=en_US')).toEqual(['100']);
  });

  it('answers id listings (masks that keep no field) with the masked meta of each document, from the live snapshot', async () => {
    const listing = 'fields=meta(id,updatedAt,revision)&limit=1000';
    const data = async (query: string) => (await getJson(server, `/tiny/documents?${query}`)).body.data;
    await server.replaceSnapshot(tiny());
    const first = await data(listing);
    expect(first.length).toBeGreaterThan(3);
    expect(await data(`${listing}&includes=1`)).toEqual(first);
    expect(await data('fields=meta(revision),meta/id,meta/updatedAt&limit=1000')).toEqual(first);
    const stamps = new Map<string, { updatedAt: string; revision: number }>(
      tiny().documents.map((d: any) => [d.meta.id, { updatedAt: d.meta.updatedAt, revision: d.meta.revision }]),
    );
    for (const { meta } of first) expect(meta).toEqual({ id: meta.id, ...stamps.get(meta.id) });

    const raw = tiny();
    Object.assign(raw.documents[1].meta, { updatedAt: '2031-01-01T00:00:00.000Z', revision: 9 });
    await server.replaceSnapshot(raw);
    expect((await data(listing)).find((d: any) => d.meta.id === raw.documents[1].meta.id).meta).toMatchObject({
      updatedAt: '2031-01-01T00:00:00.000Z',
      revision: 9,
    });
    for (const mask of [
      'meta(id)',
      'meta(updatedAt)',
      'meta(revision)',
      'meta(id,revision)',
      'meta(id,createdAt)',
      'meta(tags)',
    ]) {
      const keys = mask.slice('meta('.length, -1).split(',');
      const metaOf = (id: string) => raw.documents.find((d: any) => d.meta.id === id).meta;
      expect(await data(`fields=${mask}&limit=1000`)).toEqual(
        first.map(({ meta }: any) => ({ meta: Object.fromEntries(keys.map((k) => [k, metaOf(meta.id)[k]])) })),
      );
    }
  });

  it('keeps the ETag of a single record across snapshots while the record is unchanged', async () => {
    await server.replaceSnapshot(tiny());
    const before = await getJson(server, '/tiny/assets/300');
    const other = tiny();
    other.documents[0].fields.title.en_US = 'Something else entirely';
    await server.replaceSnapshot(other);
    const unchanged = await getJson(server, '/tiny/assets/300', {
      headers: { 'if-none-match': before.headers.get('etag')! },
    });
    expect(unchanged.status).toBe(304);
    other.assets.find((a: any) => a.meta.id === '300').fields.title.en_US = 'Apples, renamed';
    await server.replaceSnapshot(other);
    const changed = await getJson(server, '/tiny/assets/300', {
      headers: { 'if-none-match': before.headers.get('etag')! },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.fields.title).toBe('Apples, renamed');
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

describe('the serve command', () => {
  const run = runCli;
  /** Starts `serve` on the tiny fixture and reads the base URL from its first line. */
  const serve = (...flags: string[]) => serveProcess({ flags });

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

      await (
        await fetch(`${url}/tiny/documents`, { method: 'POST', headers: { authorization: tinyKey }, body: '{}' })
      ).arrayBuffer();
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
    [
      'a webhook without its secret',
      ['serve', tinyFile, '--port', '0', '--webhook', 'http://127.0.0.1:9/hook'],
      'CMFT_WEBHOOK_SECRET',
    ],
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
    const file = snapshotFolder(scratch, snapshot);
    const { code, stderr } = await run(['serve', file, '--port', '0']).exit();
    expect(code).toBe(1);
    expect(stderr).toContain(`${file}: $.aliases[0].document: `);
  });
});
