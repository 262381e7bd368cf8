import { describe, expect, it } from 'vitest';
import { applyMask, parseMask } from '../src/server/mask.ts';
import { asks, idsOf, includedIds as groups } from './helpers/forms.ts';
import { startShapingServer } from './helpers/server-shaping.ts';
import { servedForFile } from './helpers/server.ts';

/**
 * Spec §6 (includes and embedded assets) and the `fields` mask of §8, over HTTP against the real
 * server. Options are sent as bracketed parameters and as `query=` JSON, and on the list routes
 * also as a POST body; every form must get the same answer. The answers are those of the shared
 * `tiny` fixture, served as in test/helpers/server-shaping.ts.
 */

const server = servedForFile(startShapingServer);
const { ask, refused, raw } = asks(server);

describe('includes=<n> includes what the answered documents reference, n levels deep', () => {
  it('includes nothing at level 0', async () => {
    const body = await ask('/tiny/documents/100', { includes: 0 });
    expect(body.includes ?? {}).toEqual({});
  });

  it('includes the records referenced by relation and asset fields at level 1', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: 1 }))).toEqual({
      author: ['200'],
      relatedNews: ['101'],
      images: ['300'],
    });
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
    const three = {
      author: ['200', '201'],
      relatedNews: ['101', '102', '100'],
      images: ['300'],
      avatar: ['301'],
      favourite: ['100', '101'],
    };
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
    expect(groups(await ask('/tiny/documents/100', { includes: { '*.fields.relatedNews': 1 } }))).toEqual({
      relatedNews: ['101'],
    });
  });

  it('goes deeper through nested fields', async () => {
    const body = await ask('/tiny/documents/100', { includes: { '*.fields.relatedNews': { '*.fields.author': 1 } } });
    // The author of 100 itself (200) is not asked for.
    expect(groups(body)).toEqual({ relatedNews: ['101'], author: ['201'] });
    expect(groups(await raw('/tiny/documents/100', 'includes[*.fields.relatedNews][*.fields.author]=1'))).toEqual(
      groups(body),
    );
  });

  it('works on list answers', async () => {
    const page = await ask('/tiny/collections/news', {
      sorting: { 'meta.id': 'ASC' },
      includes: { '*.fields.relatedNews': { '*.fields.author': 1 } },
    });
    expect(groups(page)).toEqual({ relatedNews: ['101', '102', '100'], author: ['201', '200'] });
  });

  it('applies a content-type prefix only to records of that type', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: { 'author.fields.favourite': 1 } }))).toEqual({});
    expect(
      groups(
        await ask('/tiny/documents/100', { includes: { 'news.fields.author': { 'author.fields.favourite': 1 } } }),
      ),
    ).toEqual({
      author: ['200'],
      favourite: ['100'],
    });
    expect(
      groups(await ask('/tiny/documents/100', { includes: { 'news.fields.author': { 'news.fields.favourite': 1 } } })),
    ).toEqual({
      author: ['200'],
    });
  });

  const chain = (depth: number): object => ({ '*.fields.relatedNews': depth === 1 ? 1 : chain(depth - 1) });

  it('accepts nesting 5 deep and refuses nesting deeper', async () => {
    expect(groups(await ask('/tiny/documents/100', { includes: chain(5) }))).toEqual({
      relatedNews: ['101', '102', '100'],
    });
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
    expect(body.data.find((d: any) => d.meta.id === '100').fields.relatedNews).toContainEqual({
      meta: { id: '999', contentType: 'news' },
    });
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
    expect(body.includes.relatedNews[0].fields.title).toEqual({
      en_US: 'Banana boats',
      de_DE: 'Bananenboote',
      de_CH: 'Bananenschiffe',
    });
  });

  it('keeps a relation a reference in data and in included records', async () => {
    const body = await ask('/tiny/documents/100', { includes: 2 });
    expect(body.fields.author).toEqual({ meta: { id: '200', contentType: 'author' } });
    expect(body.fields.images).toEqual([{ meta: { id: '300', contentType: '_asset' } }]);
    expect(body.includes.author[0].fields.favourite).toEqual({ meta: { id: '100', contentType: 'news' } });
  });

  it("applies the mask's includes scope to them", async () => {
    const body = await ask('/tiny/documents/100', {
      includes: 1,
      fields: 'fields(title),includes(author(fields(name)))',
    });
    expect(body).toEqual({ fields: { title: 'Apple harvest' }, includes: { author: [{ fields: { name: 'Ada' } }] } });
    const page = await ask('/tiny/collections/news', { limit: 1, includes: 1, fields: 'meta/id,includes/*/meta/id' });
    expect(page.data).toEqual([{ meta: { id: '100' } }]);
    expect(page.includes).toEqual({
      author: [{ meta: { id: '200' } }],
      relatedNews: [{ meta: { id: '101' } }],
      images: [{ meta: { id: '300' } }],
    });
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
    expect(apple.fields.images[0].fields.file.url).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/files\/tiny\/images\/apples\.svg$/,
    );
    expect(banana.fields.images).toEqual([]);
    // Relations stay references.
    expect(apple.fields.author).toEqual({ meta: { id: '200', contentType: 'author' } });
  });

  it('accepts true, false, 1 and 0', async () => {
    for (const value of [true, 1, 'true', '1'])
      expect((await ask('/tiny/documents/100', { embedAssets: value })).fields.images[0].fields).toBeDefined();
    for (const value of [false, 0, 'false', '0'])
      expect((await ask('/tiny/documents/100', { embedAssets: value })).fields.images[0].fields).toBeUndefined();
    expect(await refused('/tiny/documents/100', { embedAssets: 'yes' })).toMatch(/embedAssets/);
  });

  it('embeds assets in included records and lists no asset groups', async () => {
    const body = await ask('/tiny/documents/100', { embedAssets: true, includes: 2 });
    expect(Object.keys(body.includes).sort()).toEqual(['author', 'favourite', 'relatedNews']);
    expect(body.includes.author[0].fields.avatar[0].fields.title).toBe('Ada');
    expect(groups(await ask('/tiny/documents/100', { embedAssets: true, includes: { '*.fields.images': 1 } }))).toEqual(
      {},
    );
  });

  it('renders embedded assets in the request locale, under the mask', async () => {
    const body = await ask('/tiny/documents/100', {
      embedAssets: true,
      locale: 'de_DE',
      fields: 'fields(images(fields(title)))',
    });
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
    expect(await ask('/tiny/documents/100', { fields: 'fields/place/lat' })).toEqual({
      fields: { place: { lat: 47.37 } },
    });
  });

  it('keeps sub-keys with a(b,c)', async () => {
    expect(await ask('/tiny/documents/100', { fields: 'fields(title,rating),meta(id,revision)' })).toEqual({
      fields: { title: 'Apple harvest', rating: 5 },
      meta: { id: '100', revision: 1 },
    });
  });

  it('matches any key with *', async () => {
    expect(await ask('/tiny/documents/100', { fields: '*', includes: 1 })).toEqual(
      await ask('/tiny/documents/100', { includes: 1 }),
    );
    expect(await ask('/tiny/documents/100', { fields: 'fields/place/*' })).toEqual({
      fields: { place: { lat: 47.37, lng: 8.54 } },
    });
  });

  it('leaves out a scope it does not name', async () => {
    expect(await ask('/tiny/documents/100', { fields: 'fields(title)', includes: 1 })).toEqual({
      fields: { title: 'Apple harvest' },
    });
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

  it.each(['fields(title', 'fields()', 'fields,,meta', ')', 'fields)title', 'fields/'])(
    'refuses the malformed mask %j',
    async (mask) => {
      expect(await refused('/tiny/documents', { fields: mask })).toMatch(/fields/);
      expect(await refused('/tiny/documents/100', { fields: mask })).toMatch(/fields/);
    },
  );
});
