import { describe, expect, it } from 'vitest';
import { sync } from '../../src/sync/engine.ts';
import {
  configFor,
  docOf,
  magazine,
  meta,
  recorder,
  recordsOf,
  ref,
  serve,
  sorted,
  tempDir,
} from '../helpers/magazine.ts';

/**
 * A source's first sync lists its documents page by page. Whole documents with every locale are
 * heavy, and what they include (an author every article names) would come again with every
 * page that references it: the pages are asked without includes, and the records they include
 * are fetched by id once the pages are in, each once.
 */

const pages = (requests: string[]) =>
  requests.filter(
    (line) =>
      line.startsWith('GET /v1/mag/collections/articles?') && !line.includes('fields=meta(id,updatedAt,revision)'),
  );

describe("a source's first sync", () => {
  it('asks its pages without includes, and each record they include once, by id', async () => {
    const snapshot = magazine();
    // An asset only an included record shows: it comes embedded in that record.
    snapshot.assets.push({ ...structuredClone(snapshot.assets[1]!), meta: meta('3003', '_asset', 9) });
    docOf(snapshot, '2001').fields.avatar = [ref('3003', '_asset')];
    const served = await serve(snapshot);
    const result = await sync(
      configFor(served.server.url, await tempDir(), {
        collections: { articles: { includes: 1 } },
        aliases: [],
        queries: {},
        pageSize: 1,
      }),
      recorder(),
    );
    expect(pages(served.requests)).toHaveLength(3); // a page per article
    for (const line of pages(served.requests)) expect(line).not.toMatch(/includes=[1-9]/);
    // Both articles by Ada name her; she is asked once, as is Bob.
    expect(served.requests.filter((line) => /\[\*\.meta\.id\]\[in\]=2001&/.test(line))).toHaveLength(1);
    expect(served.requests.filter((line) => /\[\*\.meta\.id\]\[in\]=2002&/.test(line))).toHaveLength(1);
    const records = recordsOf(result);
    expect(sorted(records.keys())).toEqual(['1001', '1002', '1003', '2001', '2002', '3001', '3002', '3003']);
    expect(result.dangling).toEqual([{ from: '1002', field: 'related', id: '1999' }]);
    // Stored as when the authors are members of a source of their own.
    const asMembers = recordsOf(
      await sync(
        configFor(served.server.url, await tempDir(), {
          collections: { articles: { includes: 1 } },
          aliases: [],
          queries: { authors: { contentType: 'author' } },
        }),
        recorder(),
      ),
    );
    for (const id of ['2001', '2002', '3003']) expect(records.get(id)).toEqual(asMembers.get(id));
  });

  it('holds only documents of its content type when its filters begin with an or', async () => {
    const served = await serve();
    const result = await sync(
      configFor(served.server.url, await tempDir(), {
        collections: {},
        aliases: [],
        queries: {
          one: { contentType: 'author', filters: [{ or: { '*.meta.id': { equal: '2001' } } }] },
          either: {
            contentType: 'author',
            filters: [{ or: { '*.meta.id': { equal: '1001' } } }, { or: { '*.meta.id': { equal: '2002' } } }],
          },
        },
      }),
      recorder(),
    );
    const members = (name: string) => result.cache.members(`query:${name}`).map((member) => member.id);
    expect(members('one')).toEqual(['2001']);
    expect(members('either')).toEqual(['2002']);
  });

  it('keeps the includes of a source with a fields mask, which may shape what it includes', async () => {
    const served = await serve();
    await sync(
      configFor(served.server.url, await tempDir(), {
        collections: { articles: { includes: 1, fields: 'fields(title,author)' } },
        aliases: [],
        queries: {},
      }),
      recorder(),
    );
    expect(pages(served.requests).length).toBeGreaterThan(0);
    for (const line of pages(served.requests)) expect(line).toMatch(/includes=1/);
  });

  it('keeps the includes of a source that does not embed assets: its assets come with the pages, not one request each', async () => {
    const served = await serve();
    const result = await sync(
      configFor(served.server.url, await tempDir(), {
        collections: { articles: { includes: 1, embedAssets: false } },
        aliases: [],
        queries: {},
        pageSize: 1,
      }),
      recorder(),
    );
    expect(served.requests.filter((line) => line.includes('/assets/'))).toEqual([]);
    expect(sorted(recordsOf(result).keys())).toEqual(['1001', '1002', '1003', '2001', '2002', '3001', '3002']);
  });

  it('tells its progress by tenths, not page by page', async () => {
    const snapshot = magazine();
    for (let i = 0; i < 60; i++)
      snapshot.documents.push({
        fields: { title: { en_US: `Note ${i}` }, rating: 1, author: ref('2002', 'author') },
        meta: meta(String(1100 + i), 'article', 8),
      });
    const served = await serve(snapshot);
    const logger = recorder();
    await sync(
      configFor(served.server.url, await tempDir(), {
        collections: { articles: {} },
        aliases: [],
        queries: {},
        pageSize: 3,
      }),
      logger,
    );
    const progress = logger.infos.filter((line) => /^collection:articles: [\d,]+ of 63 documents$/.test(line));
    expect(pages(served.requests)).toHaveLength(21);
    // The first page, then the page that reaches each tenth.
    expect(progress.map((line) => Number(line.split(' ')[1]))).toEqual([3, 9, 15, 21, 27, 33, 39, 45, 51, 57, 63]);
  });
});
