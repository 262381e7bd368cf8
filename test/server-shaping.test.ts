import { describe, expect, it } from 'vitest';
import { asks, idsOf, type Options } from './helpers/forms.ts';
import { startShapingServer } from './helpers/server-shaping.ts';
import { servedForFile } from './helpers/server.ts';

/**
 * Spec §5 (sorting), over HTTP against the real server. Options are sent as bracketed parameters
 * and as `query=` JSON, and on the list routes also as a POST body; every form must get the same
 * answer. Besides the shared `tiny` fixture, the server holds the two small repositories of
 * test/helpers/server-shaping.ts: `store`, with one value of each sortable type per item, and
 * `nordic`, with a Swedish locale whose collation puts Ä after Z.
 */

const server = servedForFile(startShapingServer);
const { ask, refused, raw } = asks(server);

const order = async (path: string, options: Options) => idsOf((await ask(path, options)).data);
const sorted = (sorting: Record<string, unknown>, path = '/store/documents', extra: Options = {}) =>
  order(path, { sorting, ...extra });

describe('sorting takes fields.<name> or meta.<name> keys in bracket and JSON form', () => {
  it('sorts by one key', async () => {
    expect(await sorted({ 'fields.price': 'ASC' })).toEqual(['10', '11', '9', '12']);
    expect((await raw('/store/documents', 'sorting[fields.price]=ASC')).data.map((d: any) => d.meta.id)).toEqual([
      '10',
      '11',
      '9',
      '12',
    ]);
  });

  it('sorts by the first key, then the next', async () => {
    expect(await sorted({ 'fields.published': 'DESC', 'fields.rating': 'ASC' }, '/tiny/documents')).toEqual([
      '102',
      '100',
      '101',
      '103',
      '200',
      '201',
    ]);
    expect(await sorted({ 'fields.rating': 'ASC', 'fields.published': 'DESC' }, '/tiny/documents')).toEqual([
      '101',
      '102',
      '100',
      '103',
      '200',
      '201',
    ]);
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
    expect(await sorted({ 'fields.title': 'asc' }, '/tiny/documents')).toEqual([
      '100',
      '101',
      '102',
      '103',
      '200',
      '201',
    ]);
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
    expect(await sorted({ 'meta.contentType': 'ASC' }, '/tiny/documents')).toEqual([
      '200',
      '201',
      '100',
      '101',
      '102',
      '103',
    ]);
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
    expect(await sorted({ 'fields.title': 'ASC' }, '/tiny/documents', { locale: 'de_DE' })).toEqual([
      '100',
      '101',
      '102',
      '103',
      '200',
      '201',
    ]);
    expect(await sorted({ 'fields.title': 'DESC' }, '/tiny/documents', { locale: 'de_DE' })).toEqual([
      '200',
      '103',
      '102',
      '101',
      '100',
      '201',
    ]);
  });
});

describe('documents without a value come last, whatever the direction', () => {
  it('puts them last ascending and descending', async () => {
    expect(await sorted({ 'fields.rating': 'ASC' }, '/tiny/documents')).toEqual([
      '101',
      '102',
      '100',
      '103',
      '200',
      '201',
    ]);
    expect(await sorted({ 'fields.rating': 'DESC' }, '/tiny/documents')).toEqual([
      '100',
      '102',
      '101',
      '103',
      '200',
      '201',
    ]);
    expect(await sorted({ 'fields.day': 'DESC' })).toEqual(['10', '9', '11', '12']);
  });
});

describe('ties, and the end of every order, break on meta.id ascending', () => {
  it('orders equal values by id, as numbers', async () => {
    expect(await sorted({ 'fields.done': 'DESC' })).toEqual(['9', '11', '10', '12']);
    expect(await sorted({ 'fields.published': 'ASC' }, '/tiny/documents')).toEqual([
      '101',
      '100',
      '102',
      '103',
      '200',
      '201',
    ]);
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
