import { describe, expect, it } from 'vitest';
import { NetworkError } from '../../src/api/errors.ts';
import { openCache } from '../../src/cache/index.ts';
import type { Changeset } from '../../src/sync/changeset.ts';
import type { SyncConfigInput } from '../../src/sync/config.ts';
import { sync, SyncError } from '../../src/sync/engine.ts';
import {
  allRecordIds,
  configFor,
  contentOf,
  docOf,
  type Magazine,
  meta,
  none,
  recorder,
  recordsOf,
  ref,
  serve,
  sorted,
  tempDir,
  tidy,
  tidySources,
  touch,
} from '../helpers/magazine.ts';

/**
 * Syncs after the first: a changed source option refetches only that source, the modes (fresh
 * and offline), the onSync hook after the commit, a warm sync with no change that downloads no
 * document, and edits on the server (deletions, filters, aliases, translations, included
 * records) that show up exactly in the changeset, with the same records as a fresh sync.
 */

describe('a changed source option', () => {
  it('refetches only that source; the others stay incremental', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(
      configFor(served.server.url, dir, {
        collections: { articles: {}, authors: { includes: 0 } },
        aliases: [],
        queries: {},
      }),
      recorder(),
    );
    served.requests.length = 0;
    const result = await sync(
      configFor(served.server.url, dir, {
        collections: { articles: {}, authors: { includes: 1 } },
        aliases: [],
        queries: {},
      }),
      recorder(),
    );

    const listing = /fields=meta\(id,updatedAt,revision\)/;
    const toAuthors = served.requests.filter((r) => r.includes('/collections/authors'));
    const toArticles = served.requests.filter((r) => r.includes('/collections/articles'));
    expect(toAuthors.some((r) => !listing.test(r) && /locale=all/.test(r))).toBe(true); // fetched in full (what it includes: below)
    expect(toArticles.length).toBeGreaterThan(0);
    expect(toArticles.every((r) => listing.test(r))).toBe(true); // only its member listing
    // Everything the authors now include is already cached: nothing to write.
    expect(result.stats.written).toBe(0);
    expect(result.changeset.sources['collection:articles']).toEqual(none);
    expect(tidy(result.changeset.sources['collection:authors']!)).toEqual({
      added: [],
      updated: ['2001', '2002'],
      removed: [],
    });
    const closure = [
      ...result.cache.members('collection:authors').map((m) => m.id),
      ...result.cache.included('collection:authors'),
    ];
    expect(closure).toEqual(expect.arrayContaining(['1001', '1003']));
  });

  it('is no change when the same options are written with their keys in another order', async () => {
    const served = await serve();
    const dir = await tempDir();
    const filters = [{ 'article.fields.rating': { greaterThan: 1, lessThan: 9 }, '*.meta.tags': { notEqual: 'x' } }];
    const options = {
      includes: { 'article.fields.author': 1, 'article.fields.related': 1 },
      filters,
      sorting: { 'fields.rating': 'DESC', 'meta.id': 'ASC' },
      embedAssets: true,
    } as const;
    const reordered = {
      embedAssets: true,
      sorting: { 'fields.rating': 'DESC', 'meta.id': 'ASC' }, // a sort's keys keep their order: it is the sort's
      filters: [{ '*.meta.tags': { notEqual: 'x' }, 'article.fields.rating': { lessThan: 9, greaterThan: 1 } }],
      includes: { 'article.fields.related': 1, 'article.fields.author': 1 },
    } as const;
    const only = (articles: object) =>
      configFor(served.server.url, dir, { collections: { articles }, aliases: [], queries: {} });
    await sync(only(options), recorder());
    served.requests.length = 0;
    const second = await sync(only(reordered), recorder());
    // Member listings, and the look for the target of the dangling reference that every sync makes.
    const documents = served.requests.filter((r) => /\/(collections|documents)/.test(r));
    expect(documents.length).toBeGreaterThan(0);
    for (const line of documents)
      expect(line).toMatch(/fields=meta\(id,updatedAt,revision\)|\[\*\.meta\.id\]\[in\]=1999&/);
    expect(second.stats.written).toBe(0);
    expect(second.changeset.empty).toBe(true);

    // The order of a sort is an option: another order fetches the source in full.
    served.requests.length = 0;
    await sync(only({ ...reordered, sorting: { 'meta.id': 'ASC', 'fields.rating': 'DESC' } }), recorder());
    expect(
      served.requests.some(
        (r) => r.includes('/collections/articles?') && !r.includes('fields=meta(id,updatedAt,revision)'),
      ),
    ).toBe(true);
  });

  it('writes only the records the new option brings in', async () => {
    const served = await serve();
    const dir = await tempDir();
    const first = await sync(
      configFor(served.server.url, dir, { collections: { authors: { includes: 0 } }, aliases: [], queries: {} }),
      recorder(),
    );
    expect(sorted(recordsOf(first).keys())).toEqual(['2001', '2002', '3002']);
    const second = await sync(
      configFor(served.server.url, dir, {
        collections: { authors: { includes: 1, embedAssets: true } },
        aliases: [],
        queries: {},
      }),
      recorder(),
    );
    // The favourites 1001 and 1003 and the asset 3001 of 1001 join; the authors are not written again.
    expect(tidy(second.changeset.records)).toEqual({ added: ['1001', '1003', '3001'], updated: [], removed: [] });
    expect(second.stats.written).toBe(3);
  });
});

describe('modes', () => {
  it('fresh downloads everything again, ignoring the cache, and still reports changes against it', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir), recorder());
    served.snapshot.documents = served.snapshot.documents.filter((d) => d.meta.id !== '1002');
    await served.publish();
    served.requests.length = 0;
    const result = await sync({ ...configFor(served.server.url, dir), mode: 'fresh' }, recorder());
    expect(result.stats.written).toBe(allRecordIds.length - 1);
    expect(served.requests.some((r) => /fields=meta\(id,updatedAt,revision\)/.test(r))).toBe(false);
    expect(served.requests.every((r) => !r.endsWith(' 304'))).toBe(true);
    expect(result.changeset.records).toEqual({ added: [], updated: [], removed: ['1002'] });
    expect(tidy(result.changeset.sources['collection:articles']!)).toEqual({
      added: [],
      updated: ['1001'],
      removed: ['1002'],
    }); // 1001 included 1002
  });

  it('offline reads only the cache, without a single request', async () => {
    const served = await serve();
    const dir = await tempDir();
    const online = await sync(configFor(served.server.url, dir), recorder());
    const onlineContent = contentOf(online.cache);
    const onlineRecords = recordsOf(online);
    await served.server.close();
    const onSync: Changeset[] = [];
    const offline = await sync(
      { ...configFor(served.server.url, dir), mode: 'offline', onSync: (c) => void onSync.push(c) },
      recorder(),
    );
    expect(offline.stats.requests).toBe(0);
    expect(offline.changeset.empty).toBe(true);
    expect(contentOf(offline.cache)).toEqual(onlineContent);
    expect(recordsOf(offline)).toEqual(onlineRecords);
    expect(onSync).toEqual([]);
  });

  it('offline without a cache fails clearly', async () => {
    const dir = await tempDir();
    const error = await sync({ ...configFor('http://127.0.0.1:9/v1', dir), mode: 'offline' }, recorder()).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SyncError);
    expect(error).toMatchObject({ code: 'offline_without_cache' });
    expect((error as Error).message).toContain(dir);
    expect((error as Error).message).toMatch(/run a sync online first/);
  });
});

describe('onSync', () => {
  it('is called after the commit, with the changeset of the sync', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const seen: { changeset: Changeset; committed: string[] }[] = [];
    const result = await sync(
      {
        ...configFor(server.url, dir),
        onSync: (changeset) => {
          const cache = openCache(dir);
          seen.push({ changeset, committed: cache ? sorted(recordsOf({ cache }).keys()) : [] });
        },
      },
      recorder(),
    );
    expect(seen).toHaveLength(1);
    expect(seen[0]!.changeset).toEqual(result.changeset);
    expect(seen[0]!.committed).toEqual(allRecordIds);
    expect(sorted(seen[0]!.changeset.records.added)).toEqual(allRecordIds);
  });

  it('that fails, fails the sync with its own error, after the commit, even with onError use-cache', async () => {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir), recorder());
    touch(docOf(served.snapshot, '1001'));
    await served.publish();
    const failure = new NetworkError('the CDN did not answer', {
      method: 'POST',
      url: 'https://cdn.example/purge',
      attempts: 1,
    });
    const onSync = () => Promise.reject(failure);
    await expect(sync({ ...configFor(served.server.url, dir), onError: 'use-cache', onSync }, recorder())).rejects.toBe(
      failure,
    );
    const committed = openCache(dir)!;
    expect(committed.record('1001')!.revision).toBe(docOf(served.snapshot, '1001').meta.revision);
  });

  it('is not called when nothing changed', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const calls: Changeset[] = [];
    await sync({ ...configFor(server.url, dir), onSync: (c) => void calls.push(c) }, recorder());
    expect(calls).toEqual([]);
  });
});

describe('a warm sync with no change', () => {
  it('downloads no document: only member listings and 304s', async () => {
    const served = await serve();
    const dir = await tempDir();
    const cold = await sync(configFor(served.server.url, dir), recorder());
    const coldRecords = recordsOf(cold);
    served.requests.length = 0;
    const warm = await sync(configFor(served.server.url, dir), recorder());
    expect(warm.stats.written).toBe(0);
    expect(warm.changeset.empty).toBe(true);
    expect(warm.stats.notModified).toBe(2); // the repository and the alias
    const answered = served.requests.filter((r) => r.endsWith(' 200'));
    expect(answered.length).toBeGreaterThan(0);
    // Member listings, and one look for the target of the dangling reference (it may exist by now).
    for (const line of answered)
      expect(line).toMatch(/fields=meta\(id,updatedAt,revision\)|\[\*\.meta\.id\]\[in\]=1999&/);
    expect(served.requests.filter((r) => r.endsWith(' 304'))).toHaveLength(2);
    expect(warm.stats.bytes).toBeLessThan(cold.stats.bytes / 3);
    expect(recordsOf(warm)).toEqual(coldRecords);
  });

  it('downloads no document when a masked source includes records its mask leaves partial', async () => {
    const served = await serve();
    const dir = await tempDir();
    const options = { collections: { articles: { fields: 'fields(title,author)' } }, aliases: [], queries: {} };
    const cold = await sync(configFor(served.server.url, dir, options), recorder());
    expect(Object.keys(cold.cache.record('2001')!.fields)).toEqual([]); // an author, as the mask left it
    served.requests.length = 0;
    const warm = await sync(configFor(served.server.url, dir, options), recorder());
    expect(warm.stats.written).toBe(0);
    expect(warm.changeset.empty).toBe(true);
    for (const line of served.requests.filter((r) => r.endsWith(' 200')))
      expect(line).toMatch(/fields=meta\(id,updatedAt,revision\)|\[\*\.meta\.id\]\[in\]=1999&/);
    expect(recordsOf(warm)).toEqual(recordsOf(cold));
  });
});

describe('changes show up exactly in the changeset', () => {
  async function change(edit: (snapshot: Magazine) => void, options: Partial<SyncConfigInput> = {}) {
    const served = await serve();
    const dir = await tempDir();
    await sync(configFor(served.server.url, dir, options), recorder());
    edit(served.snapshot);
    await served.publish();
    const result = await sync(configFor(served.server.url, dir, options), recorder());
    const fresh = await sync({ ...configFor(served.server.url, await tempDir(), options), mode: 'fresh' }, recorder());
    expect(recordsOf(result)).toEqual(recordsOf(fresh));
    return result;
  }

  it('a deleted document leaves its sources and the cache, and what included it is updated', async () => {
    const result = await change((s) => {
      s.documents = s.documents.filter((d) => d.meta.id !== '1003');
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: [], updated: [], removed: ['1003'] },
      'collection:featured': { added: [], updated: [], removed: ['1003'] },
      'alias:home': none,
      'query:authors': { added: [], updated: ['2001'], removed: [] }, // its favourite is gone
    });
    expect(tidy(result.changeset.records)).toEqual({ added: [], updated: [], removed: ['1003'] });
    expect(result.dangling).toContainEqual({ from: '2001', field: 'favourite', id: '1003' });
  });

  it('an unpublished document (out of a collection filter) leaves only that collection', async () => {
    const result = await change((s) => {
      docOf(s, '1003').fields.featured = false;
      touch(docOf(s, '1003'));
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: [], updated: ['1003'], removed: [] },
      'collection:featured': { added: [], updated: [], removed: ['1003'] },
      'alias:home': none,
      'query:authors': { added: [], updated: ['2001'], removed: [] },
    });
    expect(result.changeset.records).toEqual({ added: [], updated: ['1003'], removed: [] });
  });

  it('a re-pointed alias swaps its member and nothing else', async () => {
    const result = await change((s) => {
      s.aliases = [{ apiId: 'home', document: '1002' }];
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': none,
      'collection:featured': none,
      'alias:home': { added: ['1002'], updated: [], removed: ['1001'] },
      'query:authors': none,
    });
    expect(result.changeset.records).toEqual(none);
    expect(result.cache.members('alias:home').map((m) => m.id)).toEqual(['1002']);
  });

  it('a changed stored filter of a collection moves exactly the documents it selects', async () => {
    const result = await change((s) => {
      s.collections[1] = {
        apiId: 'featured',
        contentType: 'article',
        filters: [{ 'article.fields.rating': { lessThan: 4.5 } }],
      };
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': none,
      'collection:featured': { added: ['1002'], updated: [], removed: ['1001'] },
      'alias:home': none,
      'query:authors': none,
    });
    expect(result.changeset.records).toEqual(none);
    expect(result.cache.members('collection:featured').map((m) => m.id)).toEqual(['1003', '1002']);
  });

  it('a changed translation updates the document and every member that includes it', async () => {
    const result = await change((s) => {
      (docOf(s, '1001').fields.title as Record<string, string>).de_CH = 'Öpfelernt';
      touch(docOf(s, '1001'));
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: [], updated: ['1001', '1002'], removed: [] }, // 1002 includes 1001
      'collection:featured': { added: [], updated: ['1001'], removed: [] },
      'alias:home': { added: [], updated: ['1001'], removed: [] },
      'query:authors': { added: [], updated: ['2002'], removed: [] }, // Bob's favourite
    });
    expect(result.changeset.records).toEqual({ added: [], updated: ['1001'], removed: [] });
    expect(result.cache.record('1001')!.fields.title).toEqual({
      en_US: 'Apple harvest',
      de_DE: 'Apfelernte',
      de_CH: 'Öpfelernt',
    });
  });

  it('an edited included record is refetched although no member changed', async () => {
    const result = await change((s) => {
      docOf(s, '2002').fields.name = 'Robert';
      touch(docOf(s, '2002'));
    });
    expect(result.changeset.records).toEqual({ added: [], updated: ['2002'], removed: [] });
    expect(result.changeset.sources['collection:articles']).toEqual({ added: [], updated: ['1002'], removed: [] });
    expect(result.changeset.sources['query:authors']).toEqual({ added: [], updated: ['2002'], removed: [] });
  });

  it('an asset edited alone (no document that embeds it changed) is found, and what embeds it is updated', async () => {
    const result = await change((s) => {
      const asset = s.assets.find((a) => a.meta.id === '3001')!;
      (asset.fields.description as Record<string, string>).en_US = 'Apples in a wicker basket';
      touch(asset);
    });
    expect(result.changeset.records).toEqual({ added: [], updated: ['3001'], removed: [] });
    // 1001 embeds it; 1002 includes 1001 with what 1001 embeds.
    expect(tidy(result.changeset.sources['collection:articles']!)).toEqual({
      added: [],
      updated: ['1001', '1002'],
      removed: [],
    });
    expect(result.cache.record('3001')!.fields.description).toMatchObject({ en_US: 'Apples in a wicker basket' });
  });

  it('a record reached again only through a newly fetched one is checked for changes too', async () => {
    // Before: featured 1001 and 1003; 1001 → 1002 → 2002 brings Bob in at level 2.
    // After: 1001 leaves, Ada (2001, included by 1003) now favours a new 1004 written by Bob, and Bob was renamed.
    const result = await change(
      (s) => {
        docOf(s, '1001').fields.featured = false;
        touch(docOf(s, '1001'));
        docOf(s, '2001').fields.favourite = ref('1004', 'article');
        touch(docOf(s, '2001'));
        s.documents.push({
          fields: { title: { en_US: 'Date night' }, rating: 2, featured: false, author: ref('2002', 'author') },
          meta: { ...meta('1004', 'article', 9), updatedAt: new Date().toISOString() },
        });
        docOf(s, '2002').fields.name = 'Robert';
        touch(docOf(s, '2002'));
      },
      { collections: { featured: { includes: 3 } }, aliases: [], queries: {} },
    );
    expect(result.cache.record('2002')!.fields.name).toBe('Robert');
    expect(tidySources(result.changeset)).toEqual({
      'collection:featured': { added: [], updated: ['1003'], removed: ['1001'] },
    });
  });

  it('a newly added document joins its sources', async () => {
    const result = await change((s) => {
      s.documents.push({
        fields: { title: { en_US: 'Date night' }, rating: 2, featured: true, author: ref('2002', 'author') },
        meta: { ...meta('1004', 'article', 9), updatedAt: new Date().toISOString() },
      });
    });
    expect(tidySources(result.changeset)).toEqual({
      'collection:articles': { added: ['1004'], updated: [], removed: [] },
      'collection:featured': { added: ['1004'], updated: [], removed: [] },
      'alias:home': none,
      'query:authors': none,
    });
    expect(result.changeset.records).toEqual({ added: ['1004'], updated: [], removed: [] });
  });
});
