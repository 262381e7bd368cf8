import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.ts';
import { AuthenticationError, BadRequestError, NotFoundError } from '../src/api/errors.ts';
import { Filter, type FilterEntry, Includes, Sorting } from '../src/api/query.ts';
import type { ResponseEvent } from '../src/api/transport.ts';
import { startServer } from '../src/server/index.ts';
import type { ApiRecord } from '../src/wire/schemas.ts';
import { byId, ids, includedIds, serveClients } from './helpers/client.ts';
import { demoKey, fixture, tinyKey } from './helpers/server.ts';

/**
 * The Read API client against the local server (helpers/client.ts): each endpoint, and every
 * option sent in each wire form the client knows, getting the same answer in each. All options
 * at once and the wire forms themselves: client-wire.test.ts; pages: client-pages.test.ts.
 */

const { server, clientOf, inEveryForm } = serveClients();

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
    const error = await createClient({ baseUrl: server().url, repository: 'tiny', apiKey: demoKey })
      .repository()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({
      status: 401,
      method: 'GET',
      attempts: 1,
      serverMessage: 'Invalid authentication credentials',
    });
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
    const narrowed = await inEveryForm((client) =>
      client.collection('goodNews', { filters: new Filter().where('rating', 'equal', 5) }),
    );
    expect(ids(narrowed)).toEqual(['100']);
  });

  it('answers an unknown collection with a NotFoundError', async () => {
    const error = await clientOf('tiny')
      .collection('nothing')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ status: 404, method: 'GET', url: `${server().url}/tiny/collections/nothing` });
  });
});

describe('the document, alias and asset endpoints', () => {
  it('answers one document bare, with its repository filled in', async () => {
    const document = await clientOf('tiny').document('100');
    expect(document.meta).toMatchObject({
      id: '100',
      contentType: 'news',
      repository: '900000000000000000',
      tags: ['featured', 'include'],
    });
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
    expect(asset.fields.file).toMatchObject({
      url: `${server().origin}/files/tiny/images/apples.svg`,
      fileName: 'apples.svg',
      width: 100,
    });
  });

  it('keeps an asset’s fields in the order the server sent them, as in a document that embeds it', async () => {
    const tiny = JSON.parse(await readFile(fixture('tiny.json'), 'utf8'));
    for (const asset of tiny.assets)
      asset.fields = { file: asset.fields.file, description: asset.fields.description, title: asset.fields.title };
    const reordered = await startServer({ snapshots: [tiny], watch: false });
    try {
      const client = createClient({ baseUrl: reordered.url, repository: 'tiny', apiKey: tinyKey });
      const asset = await client.asset('300', { locale: 'all' });
      expect(Object.keys(asset.fields)).toEqual(['file', 'description', 'title']);
      const embedding = (await client.documents({ locale: 'all', embedAssets: true, limit: 1000 })).data.find((d) =>
        JSON.stringify(d.fields).includes('apples.svg'),
      )!;
      const embedded = Object.values(embedding.fields)
        .flat()
        .find((value) => (value as ApiRecord | null)?.meta?.id === '300') as ApiRecord;
      expect(Object.keys(embedded.fields)).toEqual(Object.keys(asset.fields));
    } finally {
      await reordered.close();
    }
  });

  it('answers a missing document, alias or asset, and a document asked for as an asset, with a NotFoundError', async () => {
    const client = clientOf('tiny');
    for (const call of [
      () => client.document('999'),
      () => client.alias('nowhere'),
      () => client.asset('999'),
      () => client.asset('100'),
    ]) {
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
    const answer = await inEveryForm((client) =>
      client.documents({ locale: 'de_CH', ...byId, filters: new Filter().where('news.meta.id', 'lessThan', 103) }),
    );
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
    const error = await clientOf('tiny')
      .documents({ locale: 'fr_FR' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).serverMessage).toMatch(/en_US, de_DE, de_CH/);
  });
});

describe('includes', () => {
  it('includes by level: level 1 is what the answered documents reference, grouped by field name', async () => {
    const document = await inEveryForm((client) => client.document('100', { includes: 1 }), ['brackets', 'json']);
    expect(includedIds(document.includes)).toEqual({ author: ['200'], relatedNews: ['101'], images: ['300'] });
    const list = await inEveryForm((client) =>
      client.documents({ includes: 1, filters: new Filter().where('meta.id', 'equal', 100) }),
    );
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
    const list = await inEveryForm((client) =>
      client.documents({ includes, filters: new Filter().where('meta.id', 'equal', 100) }),
    );
    expect(includedIds(list.includes)).toEqual({ relatedNews: ['101'], author: ['201'] });
  });

  it('takes a plain field map as well as the builder, with the same answer', async () => {
    const plain = await inEveryForm((client) =>
      client.documents({ includes: { '*.fields.relatedNews': { '*.fields.author': 1 } }, ...byId }),
    );
    const built = await clientOf('tiny').documents({
      includes: new Includes().add('relatedNews', (r) => r.add('author')),
      ...byId,
    });
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
    const document = await inEveryForm(
      (client) => client.document('100', { includes: 1, embedAssets: true }),
      ['brackets', 'json'],
    );
    expect(document.fields.images).toMatchObject([
      { fields: { title: 'Apples', file: { fileName: 'apples.svg' } }, meta: { id: '300' } },
    ]);
    expect(Object.keys(document.includes!)).toEqual(['author', 'relatedNews']);
    expect(document.includes!.author![0]!.fields.avatar).toMatchObject([
      { fields: { title: 'Ada' }, meta: { id: '301' } },
    ]);
    const list = await inEveryForm((client) =>
      client.documents({ embedAssets: true, filters: new Filter().where('meta.id', 'equal', 100) }),
    );
    expect(list.data[0]!.fields.images).toEqual(document.fields.images);
  });
});

describe('fields mask', () => {
  it('keeps only what the mask names, and the masked answers validate', async () => {
    const list = await inEveryForm((client) =>
      client.documents({ fields: 'fields(title),meta(id)', ...byId, limit: 2 }),
    );
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
    expect(document).toEqual({
      fields: { title: 'Apple harvest' },
      includes: { author: [{ fields: { name: 'Ada' } }] },
    });
  });
});

describe('filters', () => {
  // Tiny, in the default locale: news 100 (rating 5), 101 (3), 102 (4.5), 103 (no rating); authors 200 Ada, 201 Bob.
  const operators: [string, Filter, string[]][] = [
    ['equal', new Filter().where('rating', 'equal', 5), ['100']],
    [
      'notEqual, true where the field is missing',
      new Filter().where('rating', 'notEqual', 5),
      ['101', '102', '103', '200', '201'],
    ],
    ['greaterThan', new Filter().where('rating', 'greaterThan', 4), ['100', '102']],
    ['greaterThanEqual', new Filter().where('rating', 'greaterThanEqual', 4.5), ['100', '102']],
    ['lessThan', new Filter().where('rating', 'lessThan', 4.5), ['101']],
    ['lessThanEqual', new Filter().where('rating', 'lessThanEqual', 3), ['101']],
    ['like, case-insensitive and whole-value', new Filter().where('title', 'like', 'C%'), ['102']],
    ['notLike', new Filter().where('title', 'notLike', '%a%'), ['200', '201']],
    [
      'empty (richtext by its plain text)',
      new Filter().where('text', 'empty', null),
      ['101', '102', '103', '200', '201'],
    ],
    ['notEmpty', new Filter().where('text', 'notEmpty', null), ['100']],
    ['in, on a multiple select', new Filter().where('labels', 'in', ['boats', 'autumn']), ['100', '101']],
    ['notIn', new Filter().where('category', 'notIn', ['food']), ['101', '102', '103', '200', '201']],
  ];

  it('covers all twelve operators', () => {
    expect(new Set(operators.map(([, filter]) => Object.keys(Object.values(filter.toJSON()[0]!)[0]!)[0]))).toEqual(
      new Set([
        'equal',
        'notEqual',
        'greaterThan',
        'greaterThanEqual',
        'lessThan',
        'lessThanEqual',
        'like',
        'notLike',
        'empty',
        'notEmpty',
        'in',
        'notIn',
      ]),
    );
  });

  it.each(operators)('%s', async (_name, filters, expected) => {
    expect(ids(await inEveryForm((client) => client.documents({ filters, ...byId })))).toEqual(expected);
  });

  it('reads dates as instants and booleans as booleans', async () => {
    expect(
      ids(
        await inEveryForm((client) =>
          client.documents({ filters: new Filter().where('date', 'greaterThan', '2024-02-01T00:00:00.000Z'), ...byId }),
        ),
      ),
    ).toEqual(['100']);
    expect(
      ids(
        await inEveryForm((client) =>
          client.documents({ filters: new Filter().where('published', 'equal', true), ...byId }),
        ),
      ),
    ).toEqual(['100', '102']);
  });

  it('filters on meta paths: tags, id and createdAt', async () => {
    const client = clientOf('tiny');
    expect(ids(await client.documents({ filters: new Filter().where('meta.tags', 'equal', 'featured') }))).toEqual([
      '100',
    ]);
    expect(ids(await client.documents({ filters: new Filter().where('meta.id', 'greaterThan', 200) }))).toEqual([
      '201',
    ]);
    expect(
      ids(
        await client.documents({
          filters: new Filter().where('meta.createdAt', 'lessThan', '2024-01-01T00:00:00.000Z'),
          ...byId,
        }),
      ),
    ).toEqual(['200', '201']);
  });

  it('scopes a condition to a content type with a path that names it', async () => {
    const any = await clientOf('tiny').documents({
      filters: new Filter().where('*.fields.title', 'notEmpty', null),
      ...byId,
    });
    expect(ids(any)).toEqual(['100', '101', '102', '103', '200']);
    const news = await inEveryForm((client) =>
      client.documents({ filters: new Filter().where('news.fields.title', 'notEmpty', null), ...byId }),
    );
    expect(ids(news)).toEqual(['100', '101', '102', '103']);
  });

  it('binds AND tighter than OR', async () => {
    // Ada OR (rating > 0 AND unpublished) is 101 and 200; read left to right it would be 101 alone.
    const filters = new Filter()
      .where('name', 'equal', 'Ada')
      .or('rating', 'greaterThan', 0)
      .and('published', 'equal', false);
    expect(ids(await inEveryForm((client) => client.documents({ filters, ...byId })))).toEqual(['101', '200']);
  });

  it('ANDs several operators in one condition', async () => {
    const filters = new Filter().where('rating', { greaterThan: 3, lessThan: 5 });
    expect(ids(await inEveryForm((client) => client.documents({ filters, ...byId })))).toEqual(['102']);
  });

  it('takes plain JSON entries as well as the builder, with the same answer', async () => {
    const plain: FilterEntry[] = [
      { '*.fields.name': { equal: 'Ada' } },
      { or: { '*.fields.rating': { greaterThan: 0 } } },
      { and: { '*.fields.published': { equal: false } } },
    ];
    const built = new Filter()
      .where('name', 'equal', 'Ada')
      .or('rating', 'greaterThan', 0)
      .and('published', 'equal', false);
    expect(built.toJSON()).toEqual(plain);
    expect(await inEveryForm((client) => client.documents({ filters: plain }))).toEqual(
      await clientOf('tiny').documents({ filters: built }),
    );
  });

  it('sends `in` values containing a comma as query= JSON even in bracket notation', async () => {
    const events: ResponseEvent[] = [];
    const answer = await clientOf('tiny', {}, events).documents({
      filters: new Filter().where('labels', 'in', ['fruit', 'x,y']),
    });
    expect(ids(answer)).toEqual(['100']);
    expect(events[0]!.url).toMatch(/\?query=/);
  });

  it('refuses a filter on a relation field with a BadRequestError naming the path', async () => {
    const error = await clientOf('tiny')
      .documents({ filters: new Filter().where('author', 'equal', '200') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error).toMatchObject({ status: 400, attempts: 1 });
    expect((error as BadRequestError).serverMessage).toContain('*.fields.author');
  });
});

describe('sorting', () => {
  it('sorts on several keys, the first first, documents without a value last', async () => {
    const sorting = new Sorting().desc('published').asc('rating');
    expect(ids(await inEveryForm((client) => client.documents({ sorting })))).toEqual([
      '102',
      '100',
      '101',
      '103',
      '200',
      '201',
    ]);
  });

  it('compares text with the locale’s collation', async () => {
    // "cherry" between "Banana" and "Éclairs", and "Éclairs" before "Editor".
    expect(ids(await inEveryForm((client) => client.documents({ sorting: new Sorting().asc('title') })))).toEqual([
      '100',
      '101',
      '102',
      '103',
      '200',
      '201',
    ]);
  });

  it('takes a plain map as well as the builder, with the same answer', async () => {
    const plain = await inEveryForm((client) =>
      client.documents({ sorting: { 'fields.published': 'DESC', 'fields.rating': 'ASC' } }),
    );
    expect(plain).toEqual(await clientOf('tiny').documents({ sorting: new Sorting().desc('published').asc('rating') }));
  });
});

describe('includeTags and excludeTags', () => {
  it('keeps documents with any of includeTags', async () => {
    expect(
      ids(await inEveryForm((client) => client.documents({ includeTags: ['featured', 'exclude'], ...byId }))),
    ).toEqual(['100', '101']);
  });

  it('drops documents with any of excludeTags', async () => {
    expect(
      ids(await inEveryForm((client) => client.documents({ excludeTags: ['exclude', 'nothing'], ...byId }))),
    ).toEqual(['100', '102', '103', '200', '201']);
  });

  it('applies both together', async () => {
    expect(
      ids(
        await inEveryForm((client) =>
          client.documents({ includeTags: ['include', 'exclude'], excludeTags: ['exclude'] }),
        ),
      ),
    ).toEqual(['100']);
  });
});

describe('search', () => {
  it('requires every term, case-insensitively, in the request’s locale', async () => {
    expect(ids(await inEveryForm((client) => client.documents({ search: 'CRISP harvest' })))).toEqual(['100']);
    expect(ids(await inEveryForm((client) => client.documents({ search: 'apple boats' })))).toEqual([]);
    expect(ids(await inEveryForm((client) => client.documents({ search: 'schiffe', locale: 'de_CH' })))).toEqual([
      '101',
    ]);
  });
});

describe('limit and offset', () => {
  it('answers the asked window, and the envelope says so', async () => {
    const answer = await inEveryForm((client) => client.documents({ limit: 2, offset: 1, ...byId }));
    expect(answer.meta).toEqual({ count: 2, limit: 2, offset: 1, total: 6 });
    expect(ids(answer)).toEqual(['101', '102']);
  });

  it('clamps a limit above 1000 and answers an offset past the end with no documents', async () => {
    expect((await clientOf('tiny').documents({ limit: 5000 })).meta).toEqual({
      count: 6,
      limit: 1000,
      offset: 0,
      total: 6,
    });
    const past = await inEveryForm((client) => client.documents({ offset: 10 }));
    expect(past.meta).toMatchObject({ count: 0, total: 6 });
    expect(past.data).toEqual([]);
  });
});
