import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, SnapshotError, startServer } from '../src/server/index.ts';
import { type Answer, callsTo, ids, query } from './helpers/routes.ts';
import { getJson, rewrite, servedForFile, snapshotFolder, tinySnapshot } from './helpers/server.ts';

/**
 * Spec §1 and §5: a collection that lists its members (`"members": [<document id>, ...]`), over
 * HTTP against the real server, on the `tiny` fixture with collections of that kind added. Tiny's
 * documents are news 100–103 (101 tagged `exclude`, 100 tagged `featured`) and authors 200–201;
 * 300 and 301 are assets.
 */

/** Listed: a deleted document (999) and an asset (300) among the documents. */
const listed = ['101', '999', '300', '200', '103', '100'];
/** What `listed` holds, in listed order. */
const picks = ['101', '200', '103', '100'];

function membersSnapshot(): any {
  const snapshot = tinySnapshot();
  snapshot.collections.push(
    { apiId: 'picks', members: listed },
    { apiId: 'ratedPicks', members: listed, sorting: { 'fields.rating': 'DESC' } },
    {
      apiId: 'goodPicks',
      members: ['101', '200', '102', '100', '103'],
      contentType: 'news',
      filters: [{ 'news.fields.rating': { greaterThanEqual: 4 } }],
      excludeTags: ['exclude'],
    },
    { apiId: 'featuredPicks', members: ['102', '100', '101'], includeTags: ['featured'] },
    { apiId: 'noPicks', members: [] },
    { apiId: 'gonePicks', members: ['999', '300'] },
  );
  return snapshot;
}

const server = servedForFile(() => startServer({ snapshots: [membersSnapshot()], watch: false }));
const { call, post } = callsTo(server);

async function listOf(path: string): Promise<Answer> {
  const answer = await call(path);
  expect(answer.status, path).toBe(200);
  return answer;
}

describe('§1 a members collection holds the listed documents that exist', () => {
  it('answers them in the listed order when nothing sorts it', async () => {
    const answer = await listOf('/tiny/collections/picks');
    expect(ids(answer)).toEqual(picks);
    expect(answer.body.meta).toEqual({ count: 4, limit: 25, offset: 0, total: 4 });
  });

  it('skips ids of no document: deleted ones and assets', async () => {
    expect(ids(await listOf('/tiny/collections/gonePicks'))).toEqual([]);
    expect((await listOf('/tiny/collections/gonePicks')).body.meta.total).toBe(0);
    expect(ids(await listOf('/tiny/collections/picks'))).not.toContain('300');
  });

  it('answers an empty list as an empty collection', async () => {
    const answer = await listOf('/tiny/collections/noPicks');
    expect(answer.body).toEqual({ status: 200, meta: { count: 0, limit: 25, offset: 0, total: 0 }, data: [] });
  });

  it('applies its own contentType, filters and excludeTags, keeping the listed order', async () => {
    // 101 is tagged `exclude`, 200 is an author, 103 has no rating.
    expect(ids(await listOf('/tiny/collections/goodPicks'))).toEqual(['102', '100']);
  });

  it('applies its own includeTags', async () => {
    expect(ids(await listOf('/tiny/collections/featuredPicks'))).toEqual(['100']);
  });
});

describe('§5 the order of a members collection', () => {
  it("follows the collection's own sorting over the listed order", async () => {
    // Ratings: 100 → 5, 101 → 3; 103 and 200 have none and come last, ties on meta.id ascending.
    expect(ids(await listOf('/tiny/collections/ratedPicks'))).toEqual(['100', '101', '103', '200']);
  });

  it("follows the request's sorting over the listed order, in every option form", async () => {
    const ascending = ['100', '101', '103', '200'];
    expect(ids(await listOf('/tiny/collections/picks?sorting[meta.id]=ASC'))).toEqual(ascending);
    expect(ids(await listOf(`/tiny/collections/picks?${query({ sorting: { 'meta.id': 'ASC' } })}`))).toEqual(ascending);
    const posted = await post('/tiny/collections/picks', { sorting: { 'meta.id': 'ASC' } });
    expect(posted.status).toBe(200);
    expect(ids(posted)).toEqual(ascending);
  });

  it("follows the request's sorting over the collection's own", async () => {
    expect(ids(await listOf('/tiny/collections/ratedPicks?sorting[meta.id]=DESC'))).toEqual([
      '200',
      '103',
      '101',
      '100',
    ]);
  });

  it('sorts text in the request locale', async () => {
    // de_DE: Apfelernte (100), Bananenboote (101), Éclairs and more (103, from en_US), Redakteurin (200).
    const answer = await listOf('/tiny/collections/picks?locale=de_DE&sorting[fields.title]=DESC');
    expect(ids(answer)).toEqual(['200', '103', '101', '100']);
  });
});

describe("§3 the request's options apply to a members collection", () => {
  it('filters and tags narrow it, keeping the listed order', async () => {
    expect(ids(await listOf('/tiny/collections/picks?excludeTags=exclude'))).toEqual(['200', '103', '100']);
    expect(ids(await listOf('/tiny/collections/picks?includeTags=featured'))).toEqual(['100']);
    expect(ids(await listOf('/tiny/collections/picks?filters[0][*.meta.contentType][equal]=news'))).toEqual([
      '101',
      '103',
      '100',
    ]);
    expect(
      ids(await listOf(`/tiny/collections/picks?${query({ filters: [{ 'news.fields.rating': { lessThan: 5 } }] })}`)),
    ).toEqual(['101']);
    expect(ids(await listOf('/tiny/collections/picks?search=apple'))).toEqual(['100']);
  });

  it("ANDs the request's filters with the collection's own", async () => {
    expect(ids(await listOf('/tiny/collections/goodPicks?filters[0][news.fields.rating][lessThan]=5'))).toEqual([
      '102',
    ]);
  });

  it('filters and sorts at once', async () => {
    const answer = await listOf('/tiny/collections/picks?excludeTags=exclude&sorting[meta.id]=ASC');
    expect(ids(answer)).toEqual(['100', '103', '200']);
  });

  it('pages through it with offset and limit, total counting every member', async () => {
    const page = await listOf('/tiny/collections/picks?offset=1&limit=2');
    expect(ids(page)).toEqual(['200', '103']);
    expect(page.body.meta).toEqual({ count: 2, limit: 2, offset: 1, total: 4 });
    const sorted = await listOf('/tiny/collections/picks?offset=2&limit=2&sorting[meta.id]=ASC');
    expect(ids(sorted)).toEqual(['103', '200']);
    expect(sorted.body.meta).toEqual({ count: 2, limit: 2, offset: 2, total: 4 });
    const past = await listOf('/tiny/collections/picks?offset=10');
    expect(past.body.meta).toEqual({ count: 0, limit: 25, offset: 10, total: 4 });
    const counted = await listOf('/tiny/collections/picks?limit=0');
    expect(counted.body.meta).toEqual({ count: 0, limit: 0, offset: 0, total: 4 });
  });

  it('answers in the request locale, in the listed order', async () => {
    const answer = await listOf('/tiny/collections/picks?locale=de_CH');
    expect(ids(answer)).toEqual(picks);
    expect(answer.body.data.map((d: any) => d.fields.title)).toEqual([
      'Bananenschiffe',
      'Redakteurin',
      'Éclairs and more',
      'Apfelernte',
    ]);
    const all = await listOf('/tiny/collections/picks?locale=all');
    expect(all.body.data[0].fields.title).toEqual({
      en_US: 'Banana boats',
      de_DE: 'Bananenboote',
      de_CH: 'Bananenschiffe',
    });
  });

  it('applies includes and the fields mask', async () => {
    const answer = await listOf('/tiny/collections/picks?includes=1&fields=meta/id,includes');
    expect(answer.body.data).toEqual(picks.map((id) => ({ meta: { id } })));
    // Reached in the listed order: 101 (author 201, news 102), 200 (news 100, asset 301), 100 (author 200, news 101, asset 300; 999 dangles).
    const included = (group: string) => answer.body.includes[group].map((record: any) => record.meta.id);
    expect(included('author')).toEqual(['201', '200']);
    expect(included('relatedNews')).toEqual(['102', '101']);
    expect(included('favourite')).toEqual(['100']);
    expect(included('images')).toEqual(['300']);
  });
});

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'read-api-members-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function refusal(start: () => Promise<ReadApiServer>): Promise<unknown> {
  return start().then(
    async (started) => {
      await started.close();
      throw new Error('the server started');
    },
    (reason: unknown) => reason,
  );
}

describe('§1 a members list that repeats an id is refused at start', () => {
  it('names the JSON path of the repetition, given as an object', async () => {
    const snapshot = membersSnapshot();
    snapshot.collections.push({ apiId: 'twice', members: ['101', '100', '101'] });
    const at = `$.collections[${snapshot.collections.length - 1}].members[2]`;
    const error = await refusal(() => startServer({ snapshots: [snapshot], watch: false }));
    expect(error).toBeInstanceOf(SnapshotError);
    expect((error as SnapshotError).path).toBe(at);
    expect((error as SnapshotError).message).toBe(
      `snapshot #0: ${at}: duplicate member 101 (also at $.collections[${snapshot.collections.length - 1}].members[0])`,
    );
  });

  it('names the file and the JSON path, given as a file; a member that is no id is refused too', async () => {
    const snapshot = tinySnapshot();
    snapshot.collections = [{ apiId: 'twice', members: ['999', '999'] }];
    const file = snapshotFolder(scratch, snapshot);
    const error = await refusal(() => startServer({ paths: [file], watch: false }));
    expect((error as SnapshotError).message).toContain(`${file}: $.collections[0].members[1]: duplicate member 999`);
    snapshot.collections = [{ apiId: 'odd', members: ['100', 'abc'] }];
    const other = snapshotFolder(scratch, snapshot);
    const wrong = await refusal(() => startServer({ paths: [other], watch: false }));
    expect((wrong as SnapshotError).path).toBe('$.collections[0].members[1]');
  });
});

/** A snapshot file as a person writes it, with a members collection. */
const handWritten = `{
  "repository": {
    "id": "700000000000000000", "apiId": "notes", "name": "Notes", "defaultLocale": "en_US",
    "locales": [{ "key": "en_US" }], "apiKeys": ["notes-key"]
  },
  "contentTypes": [{ "apiId": "note", "fields": [{ "apiId": "title", "type": "text" }] }],
  "documents": [
    { "fields": { "title": "First" },  "meta": { "id": "1", "contentType": "note", "revision": 1, "tags": [], "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z" } },
    { "fields": { "title": "Second" }, "meta": { "id": "2", "contentType": "note", "revision": 1, "tags": [], "createdAt": "2024-01-02T00:00:00.000Z", "updatedAt": "2024-01-02T00:00:00.000Z" } },
    { "fields": { "title": "Third" },  "meta": { "id": "3", "contentType": "note", "revision": 1, "tags": [], "createdAt": "2024-01-03T00:00:00.000Z", "updatedAt": "2024-01-03T00:00:00.000Z" } }
  ],
  "collections": [{ "apiId": "pinned", "members": ["2", "4", "1"] }]
}
`;

describe('§1 a hand-written snapshot file with a members collection', () => {
  it('loads from a path and answers the listed order', async () => {
    const dir = join(scratch, 'hand-written');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'notes.json');
    writeFileSync(file, handWritten);
    const started = await startServer({ paths: [file], watch: false });
    try {
      const answer = await getJson(started, '/notes/collections/pinned', {}, 'notes-key');
      expect(answer.status).toBe(200);
      expect(answer.body.data.map((d: any) => d.fields.title)).toEqual(['Second', 'First']);
      expect(answer.body.meta.total).toBe(2);
      const documents = await getJson(started, '/notes/documents', {}, 'notes-key');
      expect(documents.body.data.map((d: any) => d.meta.id)).toEqual(['3', '2', '1']);
    } finally {
      await started.close();
    }
  });

  it('answers the new listed order after a reload', async () => {
    const dir = join(scratch, 'reloaded');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'notes.json');
    writeFileSync(file, handWritten);
    const started = await startServer({ paths: [file], watch: true });
    try {
      const before = await getJson(started, '/notes/collections/pinned', {}, 'notes-key');
      expect(before.body.data.map((d: any) => d.meta.id)).toEqual(['2', '1']);
      const reloaded = once(started.events, 'reload');
      rewrite(file, handWritten.replace('["2", "4", "1"]', '["3", "1", "2"]'));
      await reloaded;
      const after = await getJson(started, '/notes/collections/pinned', {}, 'notes-key');
      expect(after.body.data.map((d: any) => d.meta.id)).toEqual(['3', '1', '2']);
    } finally {
      await started.close();
    }
  });
});
