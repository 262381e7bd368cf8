import { describe, expect, it } from 'vitest';
import { sync } from '../../src/sync/engine.ts';
import { assetStampsMask, embeddedStamps } from '../../src/sync/fetch.ts';
import {
  configFor,
  docOf,
  recorder,
  recordsOf,
  type Served,
  serve,
  startProxy,
  tempDir,
  touch,
} from '../helpers/magazine.ts';

/**
 * The API lists no assets, and an asset can be edited alone. A warm sync reads the stamps of the
 * cached assets from one listing of documents that embed them (one document per asset, asked with
 * `embedAssets` and a mask that keeps the stamps), and asks an asset alone only when that listing
 * did not carry it.
 */

const stamp = 'meta(id,updatedAt,revision)';
const mask = `${stamp},fields(cover(${stamp}),gallery(en_US(${stamp}),de_DE(${stamp}),de_CH(${stamp})),avatar(${stamp}))`;
const assetRequests = (requests: string[]) => requests.filter((r) => r.includes('/assets/')).sort();
const probes = (requests: string[]) =>
  requests.filter((r) => r.includes('/documents') && r.includes('embedAssets') && r.includes(`fields=${mask}`));

describe('the mask of an asset probe', () => {
  it('names each asset field of the model, through each locale where it is localized', () => {
    const model = {
      article: {
        title: { kind: 'text' as const, localized: true },
        cover: { kind: 'asset' as const, localized: false },
        gallery: { kind: 'asset' as const, localized: true },
      },
      author: { avatar: { kind: 'asset' as const, localized: false } },
      _asset: { file: { kind: 'json' as const, localized: false } },
    };
    expect(assetStampsMask(model, ['en_US', 'de_DE'])).toBe(
      `${stamp},fields(cover(${stamp}),gallery(en_US(${stamp}),de_DE(${stamp})),avatar(${stamp}))`,
    );
  });

  it('asks both forms of a field that is localized in one content type and not in another', () => {
    const model = {
      a: { image: { kind: 'asset' as const, localized: false } },
      b: { image: { kind: 'asset' as const, localized: true } },
    };
    expect(assetStampsMask(model, ['en_US'])).toBe(`${stamp},fields(image(${stamp},en_US(${stamp})))`);
  });

  it('names an asset field inside a section through the section, beside the section’s other forms', () => {
    const model = {
      lesson: {
        content: {
          kind: 'section' as const,
          localized: false,
          fields: {
            video: { kind: 'asset' as const, localized: false },
            title: { kind: 'text' as const, localized: true },
          },
        },
      },
      teacher: {
        profile: {
          kind: 'section' as const,
          localized: false,
          fields: { photo: { kind: 'asset' as const, localized: true } },
        },
        content: { kind: 'asset' as const, localized: false },
      },
    };
    expect(assetStampsMask(model, ['en_GB'])).toBe(
      `${stamp},fields(content(${stamp},video(${stamp})),profile(photo(en_GB(${stamp}))))`,
    );
    expect(
      assetStampsMask(
        {
          lesson: {
            quiz: { kind: 'section', localized: false, fields: { passMark: { kind: 'number', localized: false } } },
          },
        },
        ['en_GB'],
      ),
    ).toBeUndefined();
  });

  it('is none when the model has no asset field', () => {
    expect(assetStampsMask({ article: { title: { kind: 'text', localized: true } } }, ['en_US'])).toBeUndefined();
    expect(assetStampsMask({}, ['en_US'])).toBeUndefined();
  });

  it('finds the stamps embedded in plain and localized fields, and skips references left unembedded', () => {
    const record = {
      meta: { id: '1' },
      fields: {
        cover: [{ meta: { id: 'a', updatedAt: 't1', revision: 2 } }],
        gallery: {
          en_US: [{ meta: { id: 'b', revision: 1 } }, { meta: { id: 'gone', contentType: '_asset' } }],
          de_DE: [],
        },
        odd: 'text',
        none: null,
      },
    };
    expect(embeddedStamps(record)).toEqual([
      { id: 'a', updatedAt: 't1', revision: 2 },
      { id: 'b', revision: 1 },
    ]);
    expect(embeddedStamps({})).toEqual([]);
  });

  it('finds the stamps embedded inside sections, whichever shape of locale=all they came in', () => {
    const record = {
      fields: {
        content: { video: [{ meta: { id: 'a', revision: 1 } }], title: { en_GB: 'x' } },
        profile: { photo: { en_GB: [{ meta: { id: 'b', revision: 2 } }] } },
        seo: { de: { image: [{ meta: { id: 'c', revision: 3 } }] } },
      },
    };
    expect(embeddedStamps(record).map((s) => s.id)).toEqual(['a', 'b', 'c']);
  });
});

describe('a warm sync', () => {
  // Without the alias: its answer embeds both assets, so its 304 would vouch for them.
  const setUp = async () => {
    const served = await serve();
    const config = configFor(served.server.url, await tempDir(), { aliases: [] });
    const cold = await sync(config, recorder());
    return { served, config, cold };
  };
  /** Retitles an asset (in the CMS's way), serves the edit, and forgets the requests so far. */
  const retitle = async (served: Served, id: string, title: string) => {
    const asset = served.snapshot.assets.find((a) => a.meta.id === id)!;
    asset.fields.title = { en_US: title };
    touch(asset);
    await served.publish();
    served.requests.length = 0;
  };

  it('reads the stamps of every cached asset from one document that embeds them, and asks no asset alone', async () => {
    const { served, config, cold } = await setUp();
    served.requests.length = 0;
    const warm = await sync(config, recorder());
    expect(warm.changeset.empty).toBe(true);
    expect(recordsOf(warm)).toEqual(recordsOf(cold));
    expect(assetRequests(served.requests)).toEqual([]);
    // Article 1001 embeds both assets: it alone is asked.
    expect(probes(served.requests)).toHaveLength(1);
    expect(probes(served.requests)[0]).toContain('filters[0][*.meta.id][in]=1001&');
  });

  it('finds an asset edited alone, and fetches that asset alone', async () => {
    const { served, config } = await setUp();
    await retitle(served, '3002', 'Plantains');
    const result = await sync(config, recorder());
    expect(result.changeset.records).toEqual({ added: [], updated: ['3002'], removed: [] });
    expect(result.cache.record('3002')!.fields.title).toEqual({ en_US: 'Plantains' });
    expect(assetRequests(served.requests)).toEqual(['GET /v1/mag/assets/3002?locale=all 200']);
  });

  it('asks another document when the one asked before no longer embeds the asset', async () => {
    const { served, config } = await setUp();
    // 1001 drops 3002 from its gallery; 1002 and author 2001 still embed it; then 3002 is edited.
    const article = docOf(served.snapshot, '1001');
    article.fields.gallery = { en_US: [{ meta: { id: '3001', contentType: '_asset' } }] };
    touch(article);
    await retitle(served, '3002', 'Plantains');
    const result = await sync(config, recorder());
    expect(result.changeset.records.updated.sort()).toEqual(['1001', '3002']);
    expect(result.cache.record('3002')!.fields.title).toEqual({ en_US: 'Plantains' });
    expect(assetRequests(served.requests).filter((r) => r.includes('fields='))).toEqual([]);
  });

  it('behind a server whose probe answers carry no asset stamps, asks each asset alone and still finds an edit', async () => {
    const served = await serve();
    // Drops the fields of records answered through a mask (no content type in their meta), as a
    // server that ignores a nested mask might.
    const proxy = await startProxy(served.server, (_path, body) => {
      for (const record of body.data ?? []) if (!('contentType' in record.meta)) delete record.fields;
      return body;
    });
    const config = configFor(proxy.url, await tempDir(), { aliases: [] });
    await sync(config, recorder());
    await retitle(served, '3001', 'Pears');
    const result = await sync(config, recorder());
    expect(result.changeset.records).toEqual({ added: [], updated: ['3001'], removed: [] });
    expect(result.cache.record('3001')!.fields.title).toEqual({ en_US: 'Pears' });
    expect(assetRequests(served.requests)).toEqual([
      `GET /v1/mag/assets/3001?fields=${stamp} 200`,
      'GET /v1/mag/assets/3001?locale=all 200',
      `GET /v1/mag/assets/3002?fields=${stamp} 200`,
    ]);
  });

  it('drops an asset the server no longer has, asked alone after the probe missed it', async () => {
    const { served, config } = await setUp();
    served.snapshot.assets = served.snapshot.assets.filter((a) => a.meta.id !== '3001');
    await served.publish();
    served.requests.length = 0;
    const log = recorder();
    const result = await sync(config, log);
    expect(result.changeset.records.removed).toEqual(['3001']);
    expect(result.cache.record('3001')).toBeUndefined();
    // Then looked for once more as the target of a dangling reference, as every such target is.
    expect(assetRequests(served.requests)).toEqual([
      `GET /v1/mag/assets/3001?fields=${stamp} 404`,
      'GET /v1/mag/assets/3001?locale=all 404',
    ]);
    expect(log.warns.some((w) => w.includes('points to 3001'))).toBe(true);
  });
});
