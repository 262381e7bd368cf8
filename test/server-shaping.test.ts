import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { applyMask, parseMask } from '../src/server/mask.ts';
import { doc, everyWay, nordic, type Options, refusedEveryWay, repository } from './helpers/forms.ts';
import { fixture, getJson } from './helpers/server.ts';

/**
 * Spec §5 (sorting), §6 (includes and embedded assets) and the `fields` mask of §8, over HTTP
 * against the real server. Options are sent as bracketed parameters and as `query=` JSON, and
 * on the list routes also as a POST body; every form must get the same answer. Besides the
 * shared `tiny` fixture, two small repositories are built below: `store`, with one value of
 * each sortable type per item, and `nordic`, with a Swedish locale whose collation puts Ä after Z.
 */


/** Items 9, 10 and 11 hold one value of each type; item 12 holds none. Ids 9 < 10 < 11 only as numbers. */
const store = {
  repository: repository('store'),
  contentTypes: [
    {
      apiId: 'item',
      fields: [
        { apiId: 'body', type: 'richtext' },
        { apiId: 'price', type: 'number' },
        { apiId: 'day', type: 'date' },
        { apiId: 'done', type: 'boolean' },
        { apiId: 'spot', type: 'location' },
        { apiId: 'kind', type: 'select' },
        { apiId: 'multi', type: 'select' },
        { apiId: 'shade', type: 'color' },
        { apiId: 'link', type: 'relation' },
        { apiId: 'pics', type: 'asset' },
        { apiId: 'extra', type: 'json' },
      ],
    },
  ],
  documents: [
    doc(
      '9',
      'item',
      {
        body: { html: '<p>beta</p>', plain: 'beta' },
        price: 10,
        day: '2024-05-01',
        done: true,
        spot: { lat: 10, lng: 5 },
        kind: 'a',
        multi: ['a', 'c'],
        shade: '#00ff00',
      },
      { revision: 3, createdAt: '2024-01-03T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' },
    ),
    doc(
      '10',
      'item',
      {
        body: { html: '<p>alpha</p>', plain: 'alpha' },
        price: 2,
        day: '2024-05-01T12:00:00.000Z',
        done: false,
        spot: { lat: 10, lng: 1 },
        kind: 'c',
        multi: ['a', 'b'],
        shade: '#0000ff',
      },
      { revision: 1, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-03-01T00:00:00.000Z' },
    ),
    doc(
      '11',
      'item',
      {
        body: { html: '<p>Gamma</p>', plain: 'Gamma' },
        price: 9,
        day: '2023-01-01',
        done: true,
        spot: { lat: -5, lng: 100 },
        kind: 'b',
        multi: ['a'],
        shade: '#ff0000',
      },
      { revision: 2, createdAt: '2024-01-02T00:00:00.000Z', updatedAt: '2024-01-02T00:00:00.000Z' },
    ),
    doc('12', 'item', {}, { revision: 10, createdAt: '2023-12-31T00:00:00.000Z', updatedAt: '2024-01-05T00:00:00.000Z' }),
  ],
};


let server: ReadApiServer;
beforeAll(async () => {
  server = await startServer({ paths: [fixture('tiny.json')], snapshots: [store, nordic], watch: false });
});
afterAll(() => server.close());

/** Asks in every form; all must answer the same 200. */
async function ask(path: string, options: Options): Promise<any> {
  const [first, ...others] = await everyWay(server, path, options);
  expect(first!.status, JSON.stringify(first!.body)).toBe(200);
  for (const other of others) expect(other.body).toEqual(first!.body);
  return first!.body;
}

/** Asks in every form; all must be refused with a 400. Returns the first message. */
function refused(path: string, options: Options): Promise<string> {
  return refusedEveryWay(server, path, options);
}

/** A query string as written, sent as it is. */
async function raw(path: string, query: string): Promise<any> {
  const { status, body } = await getJson(server, `${path}?${query}`);
  expect(status, JSON.stringify(body)).toBe(200);
  return body;
}

const idsOf = (records: any[]) => records.map((r) => r.meta.id);
const order = async (path: string, options: Options) => idsOf((await ask(path, options)).data);
const sorted = (sorting: Record<string, unknown>, path = '/store/documents', extra: Options = {}) => order(path, { sorting, ...extra });
/** The ids in each include group. */
const groups = (body: any): Record<string, string[]> =>
  Object.fromEntries(Object.entries(body.includes ?? {}).map(([name, records]) => [name, idsOf(records as any[])]));

describe('sorting takes fields.<name> or meta.<name> keys in bracket and JSON form', () => {
  it('sorts by one key', async () => {
    expect(await sorted({ 'fields.price': 'ASC' })).toEqual(['10', '11', '9', '12']);
    expect((await raw('/store/documents', 'sorting[fields.price]=ASC')).data.map((d: any) => d.meta.id)).toEqual(['10', '11', '9', '12']);
  });

  it('sorts by the first key, then the next', async () => {
    expect(await sorted({ 'fields.published': 'DESC', 'fields.rating': 'ASC' }, '/tiny/documents')).toEqual(['102', '100', '101', '103', '200', '201']);
    expect(await sorted({ 'fields.rating': 'ASC', 'fields.published': 'DESC' }, '/tiny/documents')).toEqual(['101', '102', '100', '103', '200', '201']);
  });

  it('refuses a key that is not fields.<name> or meta.<name>', async () => {
    expect(await refused('/tiny/documents', { sorting: { title: 'ASC' } })).toMatch(/title/);
    expect(await refused('/tiny/documents', { sorting: { 'meta.title': 'ASC' } })).toMatch(/title/);
  });
});

describe('directions are ASC, asc, 1 or DESC, desc, -1; anything else is a 400', () => {
  it.each(['ASC', 'asc', '1', 1])('%j sorts ascending', async (direction) => {
    expect(await sorted({ 'fields.price': direction })).toEqual(['10', '11', '9', '12']);
  });

  it.each(['DESC', 'desc', '-1', -1])('%j sorts descending', async (direction) => {
    expect(await sorted({ 'fields.price': direction })).toEqual(['9', '11', '10', '12']);
  });

  it.each(['up', 'ascending', '', 2, 0])('%j is refused', async (direction) => {
    expect(await refused('/store/documents', { sorting: { 'fields.price': direction } })).toMatch(/direction/i);
  });
});

describe('every sortable type sorts by its own order', () => {
  it.each([
    ['richtext by its plain text', 'body', ['10', '9', '11', '12']],
    ['numbers numerically', 'price', ['10', '11', '9', '12']],
    ['dates as instants, date-only at midnight UTC', 'day', ['11', '9', '10', '12']],
    ['booleans false first', 'done', ['10', '9', '11', '12']],
    ['locations by lat, then lng', 'spot', ['11', '10', '9', '12']],
    ['a select by its value', 'kind', ['9', '11', '10', '12']],
    ['a multiple select by its values joined with ","', 'multi', ['11', '10', '9', '12']],
    ['colours', 'shade', ['10', '9', '11', '12']],
  ])('sorts %s', async (_, field, expected) => {
    expect(await sorted({ [`fields.${field}`]: 'ASC' })).toEqual(expected);
  });

  it('sorts text by collation, not by code point', async () => {
    // By code point: Apple, Banana, Editor, cherry, Éclairs.
    expect(await sorted({ 'fields.title': 'asc' }, '/tiny/documents')).toEqual(['100', '101', '102', '103', '200', '201']);
  });

  it.each([
    ['id', ['9', '10', '11', '12']],
    ['revision', ['10', '11', '9', '12']],
    ['createdAt', ['12', '10', '11', '9']],
    ['updatedAt', ['11', '12', '9', '10']],
  ])('sorts meta.%s', async (name, expected) => {
    expect(await sorted({ [`meta.${name}`]: 'ASC' })).toEqual(expected);
  });

  it('sorts meta.contentType', async () => {
    expect(await sorted({ 'meta.contentType': 'ASC' }, '/tiny/documents')).toEqual(['200', '201', '100', '101', '102', '103']);
  });
});

describe('sorting on a relation, asset or json field or on meta.tags is a 400', () => {
  it.each(['fields.link', 'fields.pics', 'fields.extra', 'meta.tags'])('refuses %s', async (key) => {
    expect(await refused('/store/documents', { sorting: { [key]: 'ASC' } })).toMatch(key.split('.')[1]!);
  });

  it('refuses a relation field of the tiny fixture', async () => {
    expect(await refused('/tiny/collections/news', { sorting: { 'fields.author': 'DESC' } })).toMatch(/author/);
  });
});

describe('text compares with Intl.Collator of the request locale', () => {
  it('uses the request locale, and the default locale for locale=all', async () => {
    expect(await sorted({ 'fields.w': 'ASC' }, '/nordic/documents')).toEqual(['3', '2', '1']);
    expect(await sorted({ 'fields.w': 'ASC' }, '/nordic/documents', { locale: 'sv_SE' })).toEqual(['3', '1', '2']);
    expect(await sorted({ 'fields.w': 'ASC' }, '/nordic/documents', { locale: 'all' })).toEqual(['3', '2', '1']);
  });

  it('sorts a localized field by its value in the request locale', async () => {
    // de_DE: Apfelernte, Bananenboote, cherry season (fallback), Éclairs…, Redakteurin; 201 has none.
    expect(await sorted({ 'fields.title': 'ASC' }, '/tiny/documents', { locale: 'de_DE' })).toEqual(['100', '101', '102', '103', '200', '201']);
    expect(await sorted({ 'fields.title': 'DESC' }, '/tiny/documents', { locale: 'de_DE' })).toEqual(['200', '103', '102', '101', '100', '201']);
  });
});

describe('documents without a value come last, whatever the direction', () => {
  it('puts them last ascending and descending', async () => {
    expect(await sorted({ 'fields.rating': 'ASC' }, '/tiny/documents')).toEqual(['101', '102', '100', '103', '200', '201']);
    expect(await sorted({ 'fields.rating': 'DESC' }, '/tiny/documents')).toEqual(['100', '102', '101', '103', '200', '201']);
    expect(await sorted({ 'fields.day': 'DESC' })).toEqual(['10', '9', '11', '12']);
  });
});

describe('ties, and the end of every order, break on meta.id ascending', () => {
  it('orders equal values by id, as numbers', async () => {
    expect(await sorted({ 'fields.done': 'DESC' })).toEqual(['9', '11', '10', '12']);
    expect(await sorted({ 'fields.published': 'ASC' }, '/tiny/documents')).toEqual(['101', '100', '102', '103', '200', '201']);
  });

  it('orders by id the documents without a value', async () => {
    const ids = await sorted({ 'fields.name': 'DESC' }, '/tiny/documents');
    expect(ids).toEqual(['201', '200', '100', '101', '102', '103']);
  });
});

describe("with no sorting: the collection's own sorting, else createdAt descending with ties on meta.id descending", () => {
  it('lists documents newest first, ties by id descending', async () => {
    // 102 and 103 were created at the same moment.
    expect(await order('/tiny/documents', {})).toEqual(['103', '102', '101', '100', '201', '200']);
    expect(await order('/store/documents', {})).toEqual(['9', '11', '10', '12']);
  });

  it("uses the collection's own sorting", async () => {
    expect(await order('/tiny/collections/news', {})).toEqual(['100', '102', '101', '103']);
  });

  it('falls back to createdAt for a collection without sorting', async () => {
    expect(await order('/tiny/collections/goodNews', {})).toEqual(['102', '100']);
  });

  it("lets a request's sorting replace the collection's", async () => {
    expect(await sorted({ 'meta.id': 'ASC' }, '/tiny/collections/news')).toEqual(['100', '101', '102', '103']);
  });
});

describe('includes=<n> includes what the answered documents reference, n levels deep', () => {
  it('includes nothing at level 0', async () => {
    const body = await ask('/tiny/documents/100', { includes: 0 });
    expect(body.includes ?? {}).toEqual({});
  });

  it('includes the records referenced by relation and asset fields at level 1', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: 1 }))).toEqual({ author: ['200'], relatedNews: ['101'], images: ['300'] });
  });

  it('reaches relations of relations at level 2', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: 2 }))).toEqual({
      author: ['200', '201'],
      relatedNews: ['101', '102'],
      images: ['300'],
      avatar: ['301'],
      favourite: ['100'],
    });
  });

  it('goes one level further each step, up to 5', async () => {
    const three = { author: ['200', '201'], relatedNews: ['101', '102', '100'], images: ['300'], avatar: ['301'], favourite: ['100', '101'] };
    expect(groups(await ask('/tiny/documents/100', { includes: 3 }))).toEqual(three);
    expect(groups(await ask('/tiny/documents/100', { includes: 5 }))).toEqual(three);
  });

  it.each([6, -1, 1.5, 'two'])('refuses the level %j', async (level) => {
    expect(await refused('/tiny/documents', { includes: level })).toMatch(/includes/);
    expect(await refused('/tiny/documents/100', { includes: level })).toMatch(/includes/);
  });
});

describe('includes as a field map includes only what the named fields reference', () => {
  it('includes one field', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: { '*.fields.relatedNews': 1 } }))).toEqual({ relatedNews: ['101'] });
  });

  it('goes deeper through nested fields', async () => {
    const body = await ask('/tiny/documents/100', { includes: { '*.fields.relatedNews': { '*.fields.author': 1 } } });
    // The author of 100 itself (200) is not asked for.
    expect(groups(body)).toEqual({ relatedNews: ['101'], author: ['201'] });
    expect(groups(await raw('/tiny/documents/100', 'includes[*.fields.relatedNews][*.fields.author]=1'))).toEqual(groups(body));
  });

  it('works on list answers', async () => {
    const page = await ask('/tiny/collections/news', { sorting: { 'meta.id': 'ASC' }, includes: { '*.fields.relatedNews': { '*.fields.author': 1 } } });
    expect(groups(page)).toEqual({ relatedNews: ['101', '102', '100'], author: ['201', '200'] });
  });

  it('applies a content-type prefix only to records of that type', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: { 'author.fields.favourite': 1 } }))).toEqual({});
    expect(groups(await ask('/tiny/documents/100', { includes: { 'news.fields.author': { 'author.fields.favourite': 1 } } }))).toEqual({
      author: ['200'],
      favourite: ['100'],
    });
    expect(groups(await ask('/tiny/documents/100', { includes: { 'news.fields.author': { 'news.fields.favourite': 1 } } }))).toEqual({
      author: ['200'],
    });
  });

  const chain = (depth: number): object => ({ '*.fields.relatedNews': depth === 1 ? 1 : chain(depth - 1) });

  it('accepts nesting 5 deep and refuses nesting deeper', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: chain(5) }))).toEqual({ relatedNews: ['101', '102', '100'] });
    expect(await refused('/tiny/documents/100', { includes: chain(6) })).toMatch(/includes/);
    expect(await refused('/tiny/documents', { includes: chain(6) })).toMatch(/includes/);
  });

  it('refuses a malformed field path', async () => {
    expect(await refused('/tiny/documents/100', { includes: { author: 1 } })).toMatch(/author/);
  });
});

describe('includes are grouped by the name of the referencing field', () => {
  it('puts a record reached through two fields in both groups, and lists records that are also in data', async () => {
    const body = await ask('/tiny/documents', { filters: [{ '*.meta.id': { in: ['102', '200'] } }], includes: 1 });
    expect(idsOf(body.data)).toEqual(['102', '200']);
    expect(groups(body)).toEqual({ author: ['200'], relatedNews: ['100'], avatar: ['301'], favourite: ['100'] });
  });

  it('lists each record once per group, in the order first reached', async () => {
    const ascending = await ask('/tiny/collections/news', { sorting: { 'meta.id': 'ASC' }, includes: 1 });
    expect(groups(ascending)).toEqual({ author: ['200', '201'], relatedNews: ['101', '102', '100'], images: ['300'] });
    const descending = await ask('/tiny/collections/news', { sorting: { 'meta.id': 'DESC' }, includes: 1 });
    expect(groups(descending).relatedNews).toEqual(['100', '102', '101']);
  });

  it('skips dangling references', async () => {
    const body = await ask('/tiny/documents', { includes: 5 });
    expect(Object.values(groups(body)).flat()).not.toContain('999');
    expect(body.data.find((d: any) => d.meta.id === '100').fields.relatedNews).toContainEqual({ meta: { id: '999', contentType: 'news' } });
  });

  it('includes on an alias answer as on the document', async () => {
    const byAlias = await ask('/tiny/alias/home', { includes: 2 });
    expect(byAlias).toEqual(await ask('/tiny/documents/100', { includes: 2 }));
    expect(groups(byAlias).favourite).toEqual(['100']);
  });
});

describe('included records are rendered like the answered ones', () => {
  it('uses the request locale', async () => {
    const body = await ask('/tiny/documents/100', { locale: 'de_CH', includes: 1 });
    expect(body.fields.title).toBe('Apfelernte');
    expect(body.includes.relatedNews[0].fields.title).toBe('Bananenschiffe');
    expect(body.includes.author[0].fields.title).toBe('Redakteurin');
    expect(body.includes.images[0].fields.title).toBe('Äpfel');
  });

  it('shows every locale for locale=all', async () => {
    const body = await ask('/tiny/documents/100', { locale: 'all', includes: 1 });
    expect(body.includes.relatedNews[0].fields.title).toEqual({ en_US: 'Banana boats', de_DE: 'Bananenboote', de_CH: 'Bananenschiffe' });
  });

  it('keeps a relation a reference in data and in included records', async () => {
    const body = await ask('/tiny/documents/100', { includes: 2 });
    expect(body.fields.author).toEqual({ meta: { id: '200', contentType: 'author' } });
    expect(body.fields.images).toEqual([{ meta: { id: '300', contentType: '_asset' } }]);
    expect(body.includes.author[0].fields.favourite).toEqual({ meta: { id: '100', contentType: 'news' } });
  });

  it("applies the mask's includes scope to them", async () => {
    const body = await ask('/tiny/documents/100', { includes: 1, fields: 'fields(title),includes(author(fields(name)))' });
    expect(body).toEqual({ fields: { title: 'Apple harvest' }, includes: { author: [{ fields: { name: 'Ada' } }] } });
    const page = await ask('/tiny/collections/news', { limit: 1, includes: 1, fields: 'meta/id,includes/*/meta/id' });
    expect(page.data).toEqual([{ meta: { id: '100' } }]);
    expect(page.includes).toEqual({ author: [{ meta: { id: '200' } }], relatedNews: [{ meta: { id: '101' } }], images: [{ meta: { id: '300' } }] });
  });
});

describe('without embedAssets, assets are included in the group of the asset field', () => {
  it('includes the asset records and leaves references in the fields', async () => {
    const body = await ask('/tiny/documents/100', { includes: { '*.fields.images': 1 } });
    expect(body.fields.images).toEqual([{ meta: { id: '300', contentType: '_asset' } }]);
    expect(body.includes.images).toHaveLength(1);
    expect(body.includes.images[0].fields.file.fileName).toBe('apples.svg');
  });
});

describe('with embedAssets, asset references are replaced in place by the asset record, and assets leave includes', () => {
  it('embeds assets in data', async () => {
    const page = await ask('/tiny/collections/news', { embedAssets: true, sorting: { 'meta.id': 'ASC' } });
    const [apple, banana] = page.data;
    expect(apple.fields.images).toHaveLength(1);
    expect(apple.fields.images[0].meta).toMatchObject({ id: '300', contentType: '_asset' });
    expect(apple.fields.images[0].fields.title).toBe('Apples');
    expect(apple.fields.images[0].fields.file.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/files\/tiny\/images\/apples\.svg$/);
    expect(banana.fields.images).toEqual([]);
    // Relations stay references.
    expect(apple.fields.author).toEqual({ meta: { id: '200', contentType: 'author' } });
  });

  it('accepts true, false, 1 and 0', async () => {
    for (const value of [true, 1, 'true', '1']) expect((await ask('/tiny/documents/100', { embedAssets: value })).fields.images[0].fields).toBeDefined();
    for (const value of [false, 0, 'false', '0']) expect((await ask('/tiny/documents/100', { embedAssets: value })).fields.images[0].fields).toBeUndefined();
    expect(await refused('/tiny/documents/100', { embedAssets: 'yes' })).toMatch(/embedAssets/);
  });

  it('embeds assets in included records and lists no asset groups', async () => {
    const body = await ask('/tiny/documents/100', { embedAssets: true, includes: 2 });
    expect(Object.keys(body.includes).sort()).toEqual(['author', 'favourite', 'relatedNews']);
    expect(body.includes.author[0].fields.avatar[0].fields.title).toBe('Ada');
    expect(groups(await ask('/tiny/documents/100', { embedAssets: true, includes: { '*.fields.images': 1 } }))).toEqual({});
  });

  it('renders embedded assets in the request locale, under the mask', async () => {
    const body = await ask('/tiny/documents/100', { embedAssets: true, locale: 'de_DE', fields: 'fields(images(fields(title)))' });
    expect(body).toEqual({ fields: { images: [{ fields: { title: 'Äpfel' } }] } });
  });
});

describe('the fields mask keeps only what it names', () => {
  it('keeps several keys with a,b', async () => {
    const whole = await ask('/tiny/documents/100', {});
    expect(await ask('/tiny/documents/100', { fields: 'fields,meta', includes: 1 })).toEqual(whole);
  });

  it('follows a path with a/b', async () => {
    expect(await ask('/tiny/documents/100', { fields: 'meta/id' })).toEqual({ meta: { id: '100' } });
    expect(await ask('/tiny/documents/100', { fields: 'fields/place/lat' })).toEqual({ fields: { place: { lat: 47.37 } } });
  });

  it('keeps sub-keys with a(b,c)', async () => {
    expect(await ask('/tiny/documents/100', { fields: 'fields(title,rating),meta(id,revision)' })).toEqual({
      fields: { title: 'Apple harvest', rating: 5 },
      meta: { id: '100', revision: 1 },
    });
  });

  it('matches any key with *', async () => {
    expect(await ask('/tiny/documents/100', { fields: '*', includes: 1 })).toEqual(await ask('/tiny/documents/100', { includes: 1 }));
    expect(await ask('/tiny/documents/100', { fields: 'fields/place/*' })).toEqual({ fields: { place: { lat: 47.37, lng: 8.54 } } });
  });

  it('leaves out a scope it does not name', async () => {
    expect(await ask('/tiny/documents/100', { fields: 'fields(title)', includes: 1 })).toEqual({ fields: { title: 'Apple harvest' } });
    const page = await ask('/tiny/collections/news', { fields: 'fields(title)', includes: 1 });
    expect(page.includes).toBeUndefined();
    expect(page.data).toEqual([
      { fields: { title: 'Apple harvest' } },
      { fields: { title: 'cherry season' } },
      { fields: { title: 'Banana boats' } },
      { fields: { title: 'Éclairs and more' } },
    ]);
  });

  it('keeps a key named __proto__ (in a json value) as a key, not as the prototype', () => {
    const masked = applyMask(JSON.parse('{"__proto__":{"a":1,"b":2},"c":3,"d":4}'), parseMask('__proto__(a),c'));
    expect(JSON.stringify(masked)).toBe('{"__proto__":{"a":1},"c":3}');
    expect(Object.getPrototypeOf(masked)).toBe(Object.prototype);
  });

  it('never masks the list envelope', async () => {
    const page = await ask('/tiny/documents', { fields: 'status', limit: 2 });
    expect(page.status).toBe(200);
    expect(page.meta).toEqual({ count: 2, limit: 2, offset: 0, total: 6 });
    expect(page.data).toEqual([{}, {}]);
  });

  it.each(['fields(title', 'fields()', 'fields,,meta', ')', 'fields)title', 'fields/'])('refuses the malformed mask %j', async (mask) => {
    expect(await refused('/tiny/documents', { fields: mask })).toMatch(/fields/);
    expect(await refused('/tiny/documents/100', { fields: mask })).toMatch(/fields/);
  });
});
