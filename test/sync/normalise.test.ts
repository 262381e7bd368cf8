import { beforeEach, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../../src/server/index.ts';
import { sync, type SyncResult } from '../../src/sync/engine.ts';
import { entryOf, entrySchemaFor, entriesOf } from '../../src/entries/entries.ts';
import type { StoredRecord } from '../../src/model/records.ts';
import {
  allRecordIds,
  configFor,
  docOf,
  recorder,
  recordsOf,
  serve,
  sorted,
  startProxy,
  tempDir,
  touch,
} from '../helpers/magazine.ts';

/**
 * What a sync makes of the answers of the real local server: one record per document or asset,
 * the own values of every locale, entries with fallbacks, references, images and the model,
 * each source's members and what its includes reach; a field mask on a source that never strips
 * what another source needs; and the locales, from the repository or guessed from the data.
 */

describe('normalisation into records', () => {
  let server: ReadApiServer;
  let result: SyncResult;
  let records: Map<string, StoredRecord>;
  let log: ReturnType<typeof recorder>;

  beforeEach(async () => {
    ({ server } = await serve());
    log = recorder();
    result = await sync(configFor(server.url, await tempDir()), log);
    records = recordsOf(result);
  });

  const entry = (id: string, locale: string) =>
    entryOf(records.get(id)!, locale, result.cache.head.locales, (assetId) => records.get(assetId));

  it('keeps one record per document or asset, however many sources and includes reach it', () => {
    expect(sorted(records.keys())).toEqual(allRecordIds);
    expect(result.cache.recordCount()).toBe(allRecordIds.length);
    expect(result.stats.written).toBe(allRecordIds.length);
    expect(result.cache.recordCount()).toBe(allRecordIds.length);
  });

  it("keeps each source's members in its order and what its includes reach", () => {
    const cache = result.cache;
    expect(cache.head).toMatchObject({
      repository: 'mag',
      baseUrl: server.url,
      lastSync: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(sorted(cache.sources().map((source) => source.key))).toEqual([
      'alias:home',
      'collection:articles',
      'collection:featured',
      'query:authors',
    ]);
    const members = (key: string) => cache.members(key).map((m) => m.id);
    expect(members('collection:articles')).toEqual(['1001', '1003', '1002']); // the collection's sorting
    expect(members('collection:featured')).toEqual(['1003', '1001']);
    expect(cache.sources().find((source) => source.key === 'alias:home')).toMatchObject({
      kind: 'alias',
      name: 'home',
    });
    expect(members('alias:home')).toEqual(['1001']);
    expect(sorted([...members('alias:home'), ...cache.included('alias:home')])).toEqual([
      '1001',
      '1002',
      '2001',
      '3001',
      '3002',
    ]);
    expect(sorted(members('query:authors'))).toEqual(['2001', '2002']);
    expect(cache.contentType('1001')).toBe('article');
    expect(cache.record('1001')).toMatchObject({ revision: 1, updatedAt: '2024-02-01T00:00:00.000Z' });
    expect(cache.references('1001')).toEqual([
      { field: 'author', id: '2001', asset: false },
      { field: 'related', id: '1002', asset: false },
      { field: 'cover', id: '3001', asset: true },
      { field: 'gallery', id: '3001', asset: true },
      { field: 'gallery', id: '3002', asset: true },
    ]);
    expect(cache.record('2002')!.fields.name).toBe('Bob');
  });

  it('keeps the own values of every locale of a localized field, without fallback', () => {
    expect(records.get('1001')!.fields.title).toEqual({
      en_US: 'Apple harvest',
      de_DE: 'Apfelernte',
      de_CH: 'Öpfelernte',
    });
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
    expect(result.cache.dangling()).toEqual(result.dangling);
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

  it('turns assets into image objects (kind image) with src, size and alt text in each locale', () => {
    const apples = {
      kind: 'image',
      id: '3001',
      src: 'https://images.example.com/apples.jpg',
      width: 800,
      height: 600,
      mimeType: 'image/jpeg',
      fileName: 'apples.jpg',
    };
    expect(entry('1001', 'en_US').fields.cover).toEqual([{ ...apples, alt: 'A basket of apples' }]);
    expect(entry('1001', 'de_DE').fields.cover).toEqual([{ ...apples, alt: 'Ein Korb Äpfel' }]);
    expect(entry('1001', 'de_CH').fields.cover).toEqual([{ ...apples, alt: 'Ein Korb Äpfel' }]);
    // Without a description the title is the alt text; a localized asset field follows its locale.
    const bananas = {
      kind: 'image',
      id: '3002',
      src: 'https://images.example.com/bananas.png',
      width: 400,
      height: 300,
      alt: 'Bananas',
      mimeType: 'image/png',
      fileName: 'bananas.png',
    };
    expect(entry('1001', 'de_DE').fields.gallery).toEqual([bananas]);
    expect(entry('1001', 'en_US').fields.gallery).toEqual([{ ...apples, alt: 'A basket of apples' }, bananas]);
    expect(records.get('3001')!.contentType).toBe('_asset');
  });

  it('keeps richtext as html and plain text', () => {
    expect(entry('1001', 'de_CH').fields.body).toEqual({ html: '<p>Knackige Äpfel</p>', plain: 'Knackige Äpfel' });
    expect(entry('1002', 'en_US').fields.body).toEqual({ html: '<p>Boats</p>', plain: 'Boats' });
  });

  it('maps every field type of the spec, and the entries fit the schema built from the model', () => {
    const article = result.cache.head.model.article!;
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
    // The Read API does not tell a section from a JSON field that holds an object: both are read
    // as a section, typed by what their keys hold; the value stays what it is.
    expect(article.extra).toMatchObject({
      kind: 'section',
      fields: { source: { kind: 'text', localized: false }, priority: { kind: 'number', localized: false } },
    });

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

    const entries = entriesOf(
      result.cache,
      result.cache.members('collection:articles').map((m) => m.id),
      result.cache.head.locales,
    );
    expect(entries).toHaveLength(3 * 3);
    for (const e of entries)
      expect(() => entrySchemaFor(result.cache.head.model, e.contentType).parse(e)).not.toThrow();
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
      const full = recordsOf(
        await sync(
          configFor(served.server.url, await tempDir(), { ...options, collections: { articles: {} } }),
          recorder(),
        ),
      );
      const both = recordsOf(await sync(configFor(served.server.url, dir, options), recorder()));
      expect(both.get('1001')).toEqual(full.get('1001'));
      expect(both.get('1003')).toEqual(full.get('1003'));

      (docOf(served.snapshot, '1001').fields.title as Record<string, string>).de_DE = 'Apfellese';
      docOf(served.snapshot, '1001').fields.rating = 4.5;
      touch(docOf(served.snapshot, '1001'));
      await served.publish();
      const incremental = await sync(configFor(served.server.url, dir, options), recorder());
      const fresh = await sync(
        { ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' },
        recorder(),
      );
      expect(recordsOf(incremental)).toEqual(recordsOf(fresh));
      expect(incremental.cache.record('1001')!.fields.rating).toBe(4.5);
    });
  }

  it('keeps only the masked fields of a record once no other source needs it whole, as a fresh sync does', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(
      configFor(served.server.url, dir, { collections: { featured: masked, articles: {} }, aliases: [], queries: {} }),
      recorder(),
    );
    const options = { collections: { featured: masked }, aliases: [], queries: {} };
    const incremental = await sync(configFor(served.server.url, dir, options), recorder());
    const fresh = await sync({ ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' }, recorder());
    expect(recordsOf(incremental)).toEqual(recordsOf(fresh));
    expect(Object.keys(incremental.cache.record('1001')!.fields)).toEqual(['title']);
  });

  it('fetches whole the records a masked source left partial once another source needs them, as a fresh sync does', async () => {
    const served = await serve();
    const dir = await tempDir();
    const partial = await sync(
      configFor(served.server.url, dir, { collections: { featured: masked }, aliases: [], queries: {} }),
      recorder(),
    );
    // What the masked source left: its fields only.
    for (const id of ['1001', '1003']) expect(Object.keys(partial.cache.record(id)!.fields)).toEqual(['title']);

    const options = { collections: { featured: masked, articles: {} }, aliases: [], queries: {} };
    const incremental = await sync(configFor(served.server.url, dir, options), recorder());
    const fresh = await sync({ ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' }, recorder());
    expect(recordsOf(incremental)).toEqual(recordsOf(fresh));
    expect(incremental.cache.record('1001')!.fields.rating).toBeDefined();
  });

  it('keeps only the masked fields of records no other source needs', async () => {
    const { server } = await serve();
    const result = await sync(
      configFor(server.url, await tempDir(), { collections: { featured: masked }, aliases: [], queries: {} }),
      recorder(),
    );
    const records = recordsOf(result);
    expect(sorted(records.keys())).toEqual(['1001', '1003']);
    expect(records.get('1001')!.fields).toEqual({
      title: { en_US: 'Apple harvest', de_DE: 'Apfelernte', de_CH: 'Öpfelernte' },
    });
    expect(records.get('1001')!.updatedAt).toBe('2024-02-01T00:00:00.000Z');
  });
});

describe('locales', () => {
  it('come from the repository endpoint, with their fallbacks', async () => {
    const { server } = await serve();
    const result = await sync(configFor(server.url, await tempDir()), recorder());
    expect(result.cache.head.locales).toEqual({
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
    const locales = result.cache.head.locales;
    expect(locales.source).toBe('data');
    expect(locales.defaultLocale).toBe('en_US');
    expect(sorted(locales.locales.map((l) => l.key))).toEqual(['de_CH', 'de_DE', 'en_US']);
    expect(log.warns.some((w) => /did not list the repository's locales/.test(w))).toBe(true);
    expect(result.warnings.some((w) => /did not list the repository's locales/.test(w))).toBe(true);
  });

  it('guessed from the data, do not mistake a location or other plain objects for translations', async () => {
    const { proxy } = await withoutLocales();
    const result = await sync(configFor(proxy.url, await tempDir()), recorder());
    const records = recordsOf(result);
    expect(records.get('1001')!.fields.place).toEqual({ lat: 47.37, lng: 8.54 });
    expect(records.get('1001')!.localized).toEqual(['title', 'body', 'gallery']);
    expect(records.get('1001')!.fields.title).toEqual({
      en_US: 'Apple harvest',
      de_DE: 'Apfelernte',
      de_CH: 'Öpfelernte',
    });
  });

  it('guessed from the data, stay the same on a later sync that downloads nothing', async () => {
    const { proxy } = await withoutLocales();
    const dir = await tempDir();
    const only = { collections: { articles: {} }, aliases: [], queries: {} };
    const first = await sync(configFor(proxy.url, dir, only), recorder());
    const firstLocales = structuredClone(first.cache.head.locales); // the reader shows the last commit: keep what the first one made
    const second = await sync(configFor(proxy.url, dir, only), recorder());
    expect(second.stats.written).toBe(0);
    expect(second.cache.head.locales).toEqual(firstLocales);
  });
});
