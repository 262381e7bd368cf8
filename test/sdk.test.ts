import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../src/server/index.ts';
import { startTiny, tinyKey } from './helpers/server.ts';

// The official JavaScript SDK, pointed at the local server through its proxy option.
const Comfortable = createRequire(import.meta.url)('comfortable-javascript');

describe('the official JavaScript SDK against the local server', () => {
  let server: ReadApiServer;
  let api: any;
  beforeAll(async () => {
    server = await startTiny();
    api = Comfortable.api('tiny', tinyKey, { useProxy: true, proxy: server.url });
  });
  afterAll(() => server.close());

  it('reads the repository', async () => {
    const body = await (await api.getRepository()).json();
    expect(body.meta.apiId).toBe('tiny');
  });

  it('lists documents with limit and offset', async () => {
    const page = await api.getDocuments({ limit: 2, offset: 1 });
    expect(page.meta).toMatchObject({ count: 2, limit: 2, offset: 1, total: 6 });
    expect(page.data).toHaveLength(2);
  });

  it('sorts with the Sorting builder', async () => {
    const page = await api.getDocuments({ sorting: new Comfortable.Sorting().add('id', 'asc', 'meta') });
    const ids = page.data.map((d: any) => BigInt(d.meta.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
  });

  it('filters with the Filter builder, including a 30-digit id', async () => {
    const none = await api.getDocuments({
      filters: new Comfortable.Filter().addAnd('id', 'greaterThan', '999999999999999999999999999999', 'meta'),
    });
    expect(none.data).toEqual([]);
    const some = await api.getDocuments({
      filters: new Comfortable.Filter().addAnd('rating', 'greaterThanEqual', 4).addOr('name', 'equal', 'Bob'),
    });
    expect(some.data.map((d: any) => d.meta.id).sort()).toEqual(['100', '102', '201']);
  });

  it('includes by field with the Include builder, and by level', async () => {
    const byField = await api.getDocuments({ includes: new Comfortable.Include().add('relatedNews') });
    expect(Object.keys(byField.includes)).toEqual(['relatedNews']);
    const byLevel = await api.getDocuments({ includes: 1 });
    expect(Object.keys(byLevel.includes).length).toBeGreaterThan(0);
  });

  it('searches, reads all locales, and filters by tags', async () => {
    expect((await api.getDocuments({ search: 'apple' })).data.map((d: any) => d.meta.id)).toEqual(['100']);
    const all = await api.getDocuments({ locale: 'all', sorting: new Comfortable.Sorting().add('id', 'asc', 'meta') });
    expect(all.data[0].fields.title).toEqual({ en_US: 'Apple harvest', de_DE: 'Apfelernte' });
    const included = await api.getDocuments({ includeTags: ['include'] });
    expect(included.data.map((d: any) => d.meta.id)).toEqual(['100']);
    const excluded = await api.getDocuments({ excludeTags: ['exclude'] });
    expect(excluded.data.every((d: any) => !d.meta.tags.includes('exclude'))).toBe(true);
    expect(excluded.data).toHaveLength(5);
  });

  it('masks fields', async () => {
    const page = await api.getDocuments({ fields: 'fields(title)' });
    expect(Object.keys(page.data[0].fields)).toEqual(['title']);
  });

  it('reads a collection, a document, an alias and an asset', async () => {
    expect((await api.getCollection('news')).meta.total).toBe(4);
    const document = await api.getDocument('100', { fields: 'fields(title)' });
    expect(document).toEqual({ fields: { title: 'Apple harvest' } });
    const embedded = await api.getDocument('100', { embedAssets: true });
    expect(embedded.fields.images[0].fields).toHaveProperty('title', 'Apples');
    expect((await api.getAlias('home')).meta.id).toBe('100');
    expect((await api.getAsset('300')).fields.file.fileName).toBe('apples.svg');
  });
});
