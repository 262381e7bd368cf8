import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AuthenticationError,
  BadRequestError,
  closeAllPools,
  type ClientOptions,
  createClient,
  Filter,
  type FilterEntry,
  Includes,
  type ListOptions,
  NotFoundError,
  type ReadApiClient,
  type ResponseEvent,
  Sorting,
} from '../src/api/index.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import type { ApiRecord, ListAnswer } from '../src/wire/schemas.ts';
import { demoKey, demoSnapshot, fixture, tinyKey } from './helpers/server.ts';

/**
 * The Read API client against the local server, serving the hand-written `tiny` fixture and the
 * playground's `demo` repository. Every option is sent in each wire form the client knows —
 * bracketed parameters (the default), `query=` JSON (`notation: 'json'`) and a POST body (forced
 * with a tiny `maxUrlLength`) — and must get the same answer in each.
 */

let server: ReadApiServer;
beforeAll(async () => {
  server = await startServer({ paths: [fixture('tiny.json'), demoSnapshot], watch: false });
});
afterAll(async () => {
  await server.close();
  await closeAllPools();
});

type Form = 'brackets' | 'json' | 'post';
const everyForm: Form[] = ['brackets', 'json', 'post'];

/** A client of `tiny` (or `demo`) that records what it sent. */
function clientOf(repository: 'tiny' | 'demo', options: Partial<ClientOptions> = {}, events: ResponseEvent[] = []): ReadApiClient {
  return createClient({
    baseUrl: server.url,
    repository,
    apiKey: repository === 'tiny' ? tinyKey : demoKey,
    onResponse: (event) => events.push(event),
    ...options,
  });
}

function clientInForm(form: Form, events: ResponseEvent[], repository: 'tiny' | 'demo' = 'tiny'): ReadApiClient {
  return clientOf(repository, form === 'json' ? { notation: 'json' } : form === 'post' ? { maxUrlLength: 1 } : {}, events);
}

/** Checks that the request went out in the given form. */
function expectForm(event: ResponseEvent, form: Form): void {
  if (form === 'post') {
    expect(event.method).toBe('POST');
    expect(event.url).not.toContain('?');
  } else {
    expect(event.method).toBe('GET');
    // Options travel as one `query=` parameter, or as brackets; a request without options has no query at all.
    if (form === 'json') expect(event.url).toMatch(/^[^?]*(\?query=[^&]+)?$/);
    else expect(event.url).not.toContain('query=');
  }
}

/**
 * Runs one call in each form, checks each went out in its form and that every answer is the same,
 * and returns that answer.
 */
async function inEveryForm<T>(call: (client: ReadApiClient) => Promise<T>, forms: Form[] = everyForm, repository: 'tiny' | 'demo' = 'tiny'): Promise<T> {
  const answers: T[] = [];
  for (const form of forms) {
    const events: ResponseEvent[] = [];
    answers.push(await call(clientInForm(form, events, repository)));
    expect(events).toHaveLength(1);
    expectForm(events[0]!, form);
  }
  for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0]);
  return answers[0]!;
}

/** The records' ids, in order. */
const ids = (answer: { data: { meta?: { id?: string } }[] }): string[] => answer.data.map((record) => record.meta!.id!);
/** Included records' ids by group. */
const includedIds = (includes: Record<string, { meta?: { id?: string } }[]> | undefined) =>
  Object.fromEntries(Object.entries(includes ?? {}).map(([group, records]) => [group, records.map((r) => r.meta!.id)]));
const byId = { sorting: new Sorting().asc('meta.id') };

describe('the repository endpoint', () => {
  it('answers the API id, the default locale and the locales with their fallbacks', async () => {
    const answer = await clientOf('tiny').repository();
    expect(answer.meta).toMatchObject({
      apiId: 'tiny',
      defaultLocale: 'en_US',
      locales: [{ key: 'en_US' }, { key: 'de_DE', fallback: 'en_US' }, { key: 'de_CH', fallback: 'de_DE' }],
    });
  });

  it('refuses a key of another repository with an AuthenticationError', async () => {
    const error = await createClient({ baseUrl: server.url, repository: 'tiny', apiKey: demoKey }).repository().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ status: 401, method: 'GET', attempts: 1, serverMessage: 'Invalid authentication credentials' });
  });
});

describe('the documents endpoint', () => {
  it('lists every document in the list envelope, newest first, ties on the larger id', async () => {
    const answer = await inEveryForm((client) => client.documents({}), ['brackets', 'json']);
    expect(answer.meta).toEqual({ count: 6, limit: 25, offset: 0, total: 6 });
    expect(ids(answer)).toEqual(['103', '102', '101', '100', '201', '200']);
  });
});

describe('the collection endpoint', () => {
  it('applies the collection’s own sorting', async () => {
    expect(ids(await clientOf('tiny').collection('news'))).toEqual(['100', '102', '101', '103']);
  });

  it('applies the collection’s own filters and tags, ANDed with the request’s', async () => {
    expect(ids(await clientOf('tiny').collection('goodNews'))).toEqual(['102', '100']);
    const narrowed = await inEveryForm((client) => client.collection('goodNews', { filters: new Filter().where('rating', 'equal', 5) }));
    expect(ids(narrowed)).toEqual(['100']);
  });

  it('answers an unknown collection with a NotFoundError', async () => {
    const error = await clientOf('tiny').collection('nothing').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, method: 'GET', url: `${server.url}/tiny/collections/nothing` });
  });
});

describe('the document, alias and asset endpoints', () => {
  it('answers one document bare, with its repository filled in', async () => {
    const document = await clientOf('tiny').document('100');
    expect(document.meta).toMatchObject({ id: '100', contentType: 'news', repository: '900000000000000000', tags: ['featured', 'include'] });
    expect(document.fields.title).toBe('Apple harvest');
    expect(document).not.toHaveProperty('includes');
  });

  it('answers an alias with the document it points to', async () => {
    const client = clientOf('tiny');
    expect(await client.alias('home', { locale: 'de_DE' })).toEqual(await client.document('100', { locale: 'de_DE' }));
  });

  it('answers an asset with its file URL made absolute on the server', async () => {
    const asset = await clientOf('tiny').asset('300');
    expect(asset.meta.contentType).toBe('_asset');
    expect(asset.fields.file).toMatchObject({ url: `${server.origin}/files/tiny/images/apples.svg`, fileName: 'apples.svg', width: 100 });
  });

  it('keeps an asset’s fields in the order the server sent them, as in a document that embeds it', async () => {
    const tiny = JSON.parse(await readFile(fixture('tiny.json'), 'utf8'));
    for (const asset of tiny.assets) asset.fields = { file: asset.fields.file, description: asset.fields.description, title: asset.fields.title };
    const reordered = await startServer({ snapshots: [tiny], watch: false });
    try {
      const client = createClient({ baseUrl: reordered.url, repository: 'tiny', apiKey: tinyKey });
      const asset = await client.asset('300', { locale: 'all' });
      expect(Object.keys(asset.fields)).toEqual(['file', 'description', 'title']);
      const embedding = (await client.documents({ locale: 'all', embedAssets: true, limit: 1000 })).data.find((d) => JSON.stringify(d.fields).includes('apples.svg'))!;
      const embedded = Object.values(embedding.fields).flat().find((value) => (value as ApiRecord | null)?.meta?.id === '300') as ApiRecord;
      expect(Object.keys(embedded.fields)).toEqual(Object.keys(asset.fields));
    } finally {
      await reordered.close();
    }
  });

  it('answers a missing document, alias or asset, and a document asked for as an asset, with a NotFoundError', async () => {
    const client = clientOf('tiny');
    for (const call of [() => client.document('999'), () => client.alias('nowhere'), () => client.asset('999'), () => client.asset('100')]) {
      await expect(call()).rejects.toBeInstanceOf(NotFoundError);
    }
  });

  it('reads the demo repository’s aliases and assets too', async () => {
    const client = clientOf('demo');
    const home = await client.alias('home', { locale: 'all' });
    expect(home.meta.id).toBe('100000000000000401');
    expect(home.fields.slug).toBe('home');
    const asset = await client.asset('100000000000000501', { locale: 'de_DE' });
    expect(asset.fields.title).toBe('Morgendämmerung am Fjord');
  });
});

describe('locale', () => {
  it('reads localized fields in the given locale, along its fallback chain', async () => {
    const answer = await inEveryForm((client) => client.documents({ locale: 'de_CH', ...byId, filters: new Filter().where('news.meta.id', 'lessThan', 103) }));
    expect(answer.data.map((d) => d.fields.title)).toEqual(['Apfelernte', 'Bananenschiffe', 'cherry season']);
  });

  it('reads every locale at once with `all`, leaving fields that are not localized plain', async () => {
    const answer = await inEveryForm((client) => client.documents({ locale: 'all', ...byId, limit: 1 }));
    expect(answer.data[0]!.fields.title).toEqual({ en_US: 'Apple harvest', de_DE: 'Apfelernte' });
    expect(answer.data[0]!.fields.rating).toBe(5);
    const document = await inEveryForm((client) => client.document('101', { locale: 'all' }), ['brackets', 'json']);
    expect(document.fields.title).toEqual({ en_US: 'Banana boats', de_DE: 'Bananenboote', de_CH: 'Bananenschiffe' });
  });

  it('refuses an unknown locale with a BadRequestError whose server message lists the locales', async () => {
    const error = await clientOf('tiny').documents({ locale: 'fr_FR' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).serverMessage).toMatch(/en_US, de_DE, de_CH/);
  });
});

describe('includes', () => {
  it('includes by level: level 1 is what the answered documents reference, grouped by field name', async () => {
    const document = await inEveryForm((client) => client.document('100', { includes: 1 }), ['brackets', 'json']);
    expect(includedIds(document.includes)).toEqual({ author: ['200'], relatedNews: ['101'], images: ['300'] });
    const list = await inEveryForm((client) => client.documents({ includes: 1, filters: new Filter().where('meta.id', 'equal', 100) }));
    expect(includedIds(list.includes)).toEqual({ author: ['200'], relatedNews: ['101'], images: ['300'] });
  });

  it('includes by level: level 2 follows the references of the included records', async () => {
    const document = await clientOf('tiny').document('100', { includes: 2 });
    expect(includedIds(document.includes)).toEqual({
      author: ['200', '201'],
      relatedNews: ['101', '102'],
      images: ['300'],
      avatar: ['301'],
      favourite: ['100'],
    });
  });

  it('includes by field map built with Includes, nesting through a callback', async () => {
    const includes = new Includes().add('relatedNews', (related) => related.add('author'));
    expect(includes.toJSON()).toEqual({ '*.fields.relatedNews': { '*.fields.author': 1 } });
    const document = await inEveryForm((client) => client.document('100', { includes }), ['brackets', 'json']);
    expect(includedIds(document.includes)).toEqual({ relatedNews: ['101'], author: ['201'] });
    const list = await inEveryForm((client) => client.documents({ includes, filters: new Filter().where('meta.id', 'equal', 100) }));
    expect(includedIds(list.includes)).toEqual({ relatedNews: ['101'], author: ['201'] });
  });

  it('takes a plain field map as well as the builder, with the same answer', async () => {
    const plain = await inEveryForm((client) => client.documents({ includes: { '*.fields.relatedNews': { '*.fields.author': 1 } }, ...byId }));
    const built = await clientOf('tiny').documents({ includes: new Includes().add('relatedNews', (r) => r.add('author')), ...byId });
    expect(plain).toEqual(built);
    const scoped = await clientOf('tiny').documents({ includes: { 'author.fields.favourite': 1 }, ...byId });
    expect(includedIds(scoped.includes)).toEqual({ favourite: ['100', '101'] });
  });

  it('leaves includes out at level 0', async () => {
    expect(await clientOf('tiny').document('100', { includes: 0 })).not.toHaveProperty('includes');
  });
});

describe('embedAssets', () => {
  it('replaces asset references in place, in answered and included records, and lists no assets in includes', async () => {
    const document = await inEveryForm((client) => client.document('100', { includes: 1, embedAssets: true }), ['brackets', 'json']);
    expect(document.fields.images).toMatchObject([{ fields: { title: 'Apples', file: { fileName: 'apples.svg' } }, meta: { id: '300' } }]);
    expect(Object.keys(document.includes!)).toEqual(['author', 'relatedNews']);
    expect(document.includes!.author![0]!.fields.avatar).toMatchObject([{ fields: { title: 'Ada' }, meta: { id: '301' } }]);
    const list = await inEveryForm((client) => client.documents({ embedAssets: true, filters: new Filter().where('meta.id', 'equal', 100) }));
    expect(list.data[0]!.fields.images).toEqual(document.fields.images);
  });
});

describe('fields mask', () => {
  it('keeps only what the mask names, and the masked answers validate', async () => {
    const list = await inEveryForm((client) => client.documents({ fields: 'fields(title),meta(id)', ...byId, limit: 2 }));
    expect(list.data).toEqual([
      { fields: { title: 'Apple harvest' }, meta: { id: '100' } },
      { fields: { title: 'Banana boats' }, meta: { id: '101' } },
    ]);
    expect(list.meta.total).toBe(6); // the envelope is never masked
    const idsOnly = await clientOf('tiny').documents({ fields: 'meta(id)', ...byId, limit: 1 });
    expect(idsOnly.data).toEqual([{ meta: { id: '100' } }]);
  });

  it('masks a document and its includes', async () => {
    const document = await inEveryForm(
      (client) => client.document('100', { includes: 1, fields: 'fields(title),includes(author(fields(name)))' }),
      ['brackets', 'json'],
    );
    expect(document).toEqual({ fields: { title: 'Apple harvest' }, includes: { author: [{ fields: { name: 'Ada' } }] } });
  });
});

describe('filters', () => {
  // Tiny, in the default locale: news 100 (rating 5), 101 (3), 102 (4.5), 103 (no rating); authors 200 Ada, 201 Bob.
  const operators: [string, Filter, string[]][] = [
    ['equal', new Filter().where('rating', 'equal', 5), ['100']],
    ['notEqual, true where the field is missing', new Filter().where('rating', 'notEqual', 5), ['101', '102', '103', '200', '201']],
    ['greaterThan', new Filter().where('rating', 'greaterThan', 4), ['100', '102']],
    ['greaterThanEqual', new Filter().where('rating', 'greaterThanEqual', 4.5), ['100', '102']],
    ['lessThan', new Filter().where('rating', 'lessThan', 4.5), ['101']],
    ['lessThanEqual', new Filter().where('rating', 'lessThanEqual', 3), ['101']],
    ['like, case-insensitive and whole-value', new Filter().where('title', 'like', 'C%'), ['102']],
    ['notLike', new Filter().where('title', 'notLike', '%a%'), ['200', '201']],
    ['empty (richtext by its plain text)', new Filter().where('text', 'empty', null), ['101', '102', '103', '200', '201']],
    ['notEmpty', new Filter().where('text', 'notEmpty', null), ['100']],
    ['in, on a multiple select', new Filter().where('labels', 'in', ['boats', 'autumn']), ['100', '101']],
    ['notIn', new Filter().where('category', 'notIn', ['food']), ['101', '102', '103', '200', '201']],
  ];

  it('covers all twelve operators', () => {
    expect(new Set(operators.map(([, filter]) => Object.keys(Object.values(filter.toJSON()[0]!)[0]!)[0]))).toEqual(
      new Set(['equal', 'notEqual', 'greaterThan', 'greaterThanEqual', 'lessThan', 'lessThanEqual', 'like', 'notLike', 'empty', 'notEmpty', 'in', 'notIn']),
    );
  });

  it.each(operators)('%s', async (_name, filters, expected) => {
    expect(ids(await inEveryForm((client) => client.documents({ filters, ...byId })))).toEqual(expected);
  });

  it('reads dates as instants and booleans as booleans', async () => {
    expect(ids(await inEveryForm((client) => client.documents({ filters: new Filter().where('date', 'greaterThan', '2024-02-01T00:00:00.000Z'), ...byId })))).toEqual(['100']);
    expect(ids(await inEveryForm((client) => client.documents({ filters: new Filter().where('published', 'equal', true), ...byId })))).toEqual(['100', '102']);
  });

  it('filters on meta paths: tags, id and createdAt', async () => {
    const client = clientOf('tiny');
    expect(ids(await client.documents({ filters: new Filter().where('meta.tags', 'equal', 'featured') }))).toEqual(['100']);
    expect(ids(await client.documents({ filters: new Filter().where('meta.id', 'greaterThan', 200) }))).toEqual(['201']);
    expect(ids(await client.documents({ filters: new Filter().where('meta.createdAt', 'lessThan', '2024-01-01T00:00:00.000Z'), ...byId }))).toEqual(['200', '201']);
  });

  it('scopes a condition to a content type with a path that names it', async () => {
    const any = await clientOf('tiny').documents({ filters: new Filter().where('*.fields.title', 'notEmpty', null), ...byId });
    expect(ids(any)).toEqual(['100', '101', '102', '103', '200']);
    const news = await inEveryForm((client) => client.documents({ filters: new Filter().where('news.fields.title', 'notEmpty', null), ...byId }));
    expect(ids(news)).toEqual(['100', '101', '102', '103']);
  });

  it('binds AND tighter than OR', async () => {
    // Ada OR (rating > 0 AND unpublished) is 101 and 200; read left to right it would be 101 alone.
    const filters = new Filter().where('name', 'equal', 'Ada').or('rating', 'greaterThan', 0).and('published', 'equal', false);
    expect(ids(await inEveryForm((client) => client.documents({ filters, ...byId })))).toEqual(['101', '200']);
  });

  it('ANDs several operators in one condition', async () => {
    const filters = new Filter().where('rating', { greaterThan: 3, lessThan: 5 });
    expect(ids(await inEveryForm((client) => client.documents({ filters, ...byId })))).toEqual(['102']);
  });

  it('takes plain JSON entries as well as the builder, with the same answer', async () => {
    const plain: FilterEntry[] = [{ '*.fields.name': { equal: 'Ada' } }, { or: { '*.fields.rating': { greaterThan: 0 } } }, { and: { '*.fields.published': { equal: false } } }];
    const built = new Filter().where('name', 'equal', 'Ada').or('rating', 'greaterThan', 0).and('published', 'equal', false);
    expect(built.toJSON()).toEqual(plain);
    expect(await inEveryForm((client) => client.documents({ filters: plain }))).toEqual(await clientOf('tiny').documents({ filters: built }));
  });

  it('sends `in` values containing a comma as query= JSON even in bracket notation', async () => {
    const events: ResponseEvent[] = [];
    const answer = await clientOf('tiny', {}, events).documents({ filters: new Filter().where('labels', 'in', ['fruit', 'x,y']) });
    expect(ids(answer)).toEqual(['100']);
    expect(events[0]!.url).toMatch(/\?query=/);
  });

  it('refuses a filter on a relation field with a BadRequestError naming the path', async () => {
    const error = await clientOf('tiny').documents({ filters: new Filter().where('author', 'equal', '200') }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, attempts: 1 });
    expect((error as BadRequestError).serverMessage).toContain('*.fields.author');
  });
});

describe('sorting', () => {
  it('sorts on several keys, the first first, documents without a value last', async () => {
    const sorting = new Sorting().desc('published').asc('rating');
    expect(ids(await inEveryForm((client) => client.documents({ sorting })))).toEqual(['102', '100', '101', '103', '200', '201']);
  });

  it('compares text with the locale’s collation', async () => {
    // "cherry" between "Banana" and "Éclairs", and "Éclairs" before "Editor".
    expect(ids(await inEveryForm((client) => client.documents({ sorting: new Sorting().asc('title') })))).toEqual(['100', '101', '102', '103', '200', '201']);
  });

  it('takes a plain map as well as the builder, with the same answer', async () => {
    const plain = await inEveryForm((client) => client.documents({ sorting: { 'fields.published': 'DESC', 'fields.rating': 'ASC' } }));
    expect(plain).toEqual(await clientOf('tiny').documents({ sorting: new Sorting().desc('published').asc('rating') }));
  });
});

describe('includeTags and excludeTags', () => {
  it('keeps documents with any of includeTags', async () => {
    expect(ids(await inEveryForm((client) => client.documents({ includeTags: ['featured', 'exclude'], ...byId })))).toEqual(['100', '101']);
  });

  it('drops documents with any of excludeTags', async () => {
    expect(ids(await inEveryForm((client) => client.documents({ excludeTags: ['exclude', 'nothing'], ...byId })))).toEqual(['100', '102', '103', '200', '201']);
  });

  it('applies both together', async () => {
    expect(ids(await inEveryForm((client) => client.documents({ includeTags: ['include', 'exclude'], excludeTags: ['exclude'] })))).toEqual(['100']);
  });
});

describe('search', () => {
  it('requires every term, case-insensitively, in the request’s locale', async () => {
    expect(ids(await inEveryForm((client) => client.documents({ search: 'CRISP harvest' })))).toEqual(['100']);
    expect(ids(await inEveryForm((client) => client.documents({ search: 'apple boats' })))).toEqual([]);
    expect(ids(await inEveryForm((client) => client.documents({ search: 'schiffe', locale: 'de_CH' })))).toEqual(['101']);
  });
});

describe('limit and offset', () => {
  it('answers the asked window, and the envelope says so', async () => {
    const answer = await inEveryForm((client) => client.documents({ limit: 2, offset: 1, ...byId }));
    expect(answer.meta).toEqual({ count: 2, limit: 2, offset: 1, total: 6 });
    expect(ids(answer)).toEqual(['101', '102']);
  });

  it('clamps a limit above 1000 and answers an offset past the end with no documents', async () => {
    expect((await clientOf('tiny').documents({ limit: 5000 })).meta).toEqual({ count: 6, limit: 1000, offset: 0, total: 6 });
    const past = await inEveryForm((client) => client.documents({ offset: 10 }));
    expect(past.meta).toMatchObject({ count: 0, total: 6 });
    expect(past.data).toEqual([]);
  });
});

describe('every option at once', () => {
  it('gets the same answer in brackets, query= JSON and a POST body', async () => {
    const options: ListOptions = {
      locale: 'de_DE',
      includes: new Includes().add('author'),
      embedAssets: true,
      fields: 'fields(title,images,author),meta(id,tags),includes',
      filters: new Filter().where('news.fields.rating', 'greaterThan', 1).or('news.meta.tags', 'equal', 'featured'),
      excludeTags: ['nothing'],
      sorting: new Sorting().asc('title'),
      search: 'a',
      limit: 2,
      offset: 1,
    };
    const answer = await inEveryForm((client) => client.documents(options));
    // Rated news or featured news: 100, 101, 102, all with an "a"; sorted by German title, the second and third.
    expect(answer.meta).toEqual({ count: 2, limit: 2, offset: 1, total: 3 });
    expect(answer.data.map((d) => [d.meta!.id, d.fields!.title])).toEqual([['101', 'Bananenboote'], ['102', 'cherry season']]);
    expect(answer.data[0]!.meta).toEqual({ id: '101', tags: ['exclude'] });
    expect(includedIds(answer.includes)).toEqual({ author: ['201', '200'] });
  });
});

describe('the wire form of list requests', () => {
  it('sends a filter list too long for a URL as a POST body with the default maxUrlLength', async () => {
    const events: ResponseEvent[] = [];
    let filters = new Filter().where('meta.id', 'equal', 100);
    for (let id = 1000; id < 1400; id++) filters = filters.or('meta.id', 'equal', id);
    filters.or('meta.id', 'equal', 201);
    const answer = await clientOf('tiny', {}, events).documents({ filters, ...byId });
    expect(ids(answer)).toEqual(['100', '201']);
    expect(events.map((e) => e.method)).toEqual(['POST']);
    expect(events[0]!.url).toBe(`${server.url}/tiny/documents`);
  });

  it('keeps a URL within maxUrlLength a GET', async () => {
    const events: ResponseEvent[] = [];
    await clientOf('tiny', {}, events).documents({ filters: new Filter().where('meta.id', 'equal', 100) });
    expect(events.map((e) => e.method)).toEqual(['GET']);
  });

  it('with keyInUrl, sends the key as ?key= on GET and in the header on POST, showing it in neither event', async () => {
    const events: ResponseEvent[] = [];
    const inUrl = clientOf('tiny', { keyInUrl: true }, events);
    expect((await inUrl.repository()).meta.apiId).toBe('tiny');
    const post = clientOf('tiny', { keyInUrl: true, maxUrlLength: 1 }, events);
    expect(ids(await post.documents({ ...byId, limit: 1 }))).toEqual(['100']);
    expect(events.map((e) => [e.method, e.status])).toEqual([['GET', 200], ['POST', 200]]);
    for (const event of events) expect(event.url).not.toContain(tinyKey);
  });
});

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
    const answer = await fetch(`${server.origin}${request.url}`, {
      method: request.method!,
      headers: { authorization: request.headers.authorization!, ...(body ? { 'content-type': 'application/json' } : {}) },
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
    expect(everything.meta.total).toBe(41);
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
      expect(pages.every((page) => page.meta.total === 41)).toBe(true);
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
    expect(pages.map((page) => page.data.length)).toEqual([7, 7, 7, 7, 7, 6]);
    expect(events.map((e) => new URL(e.url).searchParams.get('limit'))).toEqual(Array(6).fill('7'));
    expect(pages.flatMap(ids)).toEqual(ids(everything));
    await expect(collect(client.pages('documents', { pageSize: 0 }))).rejects.toBeInstanceOf(RangeError);
    await expect(collect(client.pages('documents', { pageSize: 1001 }))).rejects.toBeInstanceOf(RangeError);
  });

  it('starts at the given offset', async () => {
    const events: ResponseEvent[] = [];
    const documents = await collect(clientOf('demo', {}, events).all('documents', { offset: 5, pageSize: 10, locale: 'all', includes: 1 }));
    expect(documents).toEqual(everything.data.slice(5));
    expect(events.map((e) => Number(new URL(e.url).searchParams.get('offset'))).sort((a, b) => a - b)).toEqual([5, 15, 25, 35]);
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
    expect(authors.map((a) => a.fields.name)).toEqual((await client.collection('authors')).data.map((a) => a.fields.name));
    expect(authors).toHaveLength(5);
    const exact = await collect(client.pages('documents', { pageSize: 41, locale: 'all', includes: 1 }));
    expect(exact).toHaveLength(1);
    expect(exact[0]!.data).toEqual(everything.data);
    expect(events).toHaveLength(3);
  });

  it('reads a collection with its options on every page, in the collection’s order', async () => {
    const events: ResponseEvent[] = [];
    const client = clientOf('demo', {}, events);
    const whole = await client.collection('posts', { limit: 1000, locale: 'de_DE', filters: new Filter().where('featured', 'equal', false) });
    events.length = 0;
    const posts: ApiRecord[] = await collect(client.all({ collection: 'posts' }, { pageSize: 4, locale: 'de_DE', filters: new Filter().where('featured', 'equal', false) }));
    expect(posts).toEqual(whole.data);
    expect(events.length).toBe(Math.ceil(whole.meta.total / 4));
    for (const event of events) expect(new URL(event.url).searchParams.get('locale')).toBe('de_DE');
  });
});
