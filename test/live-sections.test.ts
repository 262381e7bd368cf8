import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ComfortableLiveLoaderOptions, comfortableLiveLoader } from '../src/astro/index.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { sync } from '../src/sync/engine.ts';
import { entryOf, mapRelations } from '../src/entries/entries.ts';
import { startProxy, tempDir } from './helpers/magazine.ts';
import { lessonsConfig, lessonsSnapshot, sectionLevelLocales } from './helpers/sections.ts';
import { fixture, tinyKey } from './helpers/server.ts';

/**
 * The live loader on content types with sections (the lessons fixture): its entries are the
 * build-time loader's, relations inside sections become references to live entries, a lookup by
 * a field inside a section names the field by its own API id, the rendered field may stand in a
 * section, and a server answering sections as maps of locales gives the same entries.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let server: ReadApiServer;
const contentTypes = { lesson: 'lessons', teacher: 'teachers' };

beforeAll(async () => {
  server = await startServer({ paths: [fixture('sections.json')], watch: false });
});
afterAll(async () => {
  await server?.close();
});

const loader = (options: Partial<ComfortableLiveLoaderOptions> = {}, baseUrl = server.url) =>
  comfortableLiveLoader({
    baseUrl,
    repository: 'lessons',
    apiKey: tinyKey,
    contentType: 'lesson',
    contentTypes,
    ...options,
  } as ComfortableLiveLoaderOptions);
const entry = (filter: Json, options: Partial<ComfortableLiveLoaderOptions> = {}, baseUrl?: string): Promise<Json> =>
  loader(options, baseUrl).loadEntry({ filter, collection: 'lessons' });

describe('live entries of content types with sections', () => {
  it('are the build-time entries, relations inside sections made references to live entries in the entry locale', async () => {
    const { cache } = await sync(lessonsConfig(server.url, await tempDir()), { info: () => {}, warn: () => {} });
    const { entries } = (await loader().loadCollection({ filter: undefined, collection: 'lessons' })) as Json;
    expect(entries).toHaveLength(3 * 3);
    for (const live of entries) {
      const built = entryOf(
        cache.record(live.data.id)!,
        live.data.locale,
        cache.head.locales,
        (id) => cache.record(id),
        cache.head.model,
      );
      const fields = mapRelations(built.fields, cache.head.model[built.contentType], (ref) => ({
        collection: contentTypes[ref.contentType as keyof typeof contentTypes],
        id: `${built.locale}/${ref.id}`,
      }));
      expect({ fields: live.data.fields, fallbacks: live.data.fallbacks }).toEqual({
        fields,
        fallbacks: built.fallbacks,
      });
    }
    const knots = entries.find((e: Json) => e.id === 'fr_FR/101');
    expect(knots.data.fields.content.teacher).toEqual({ collection: 'teachers', id: 'fr_FR/201' });
    expect(knots.data.fields.info.title).toBe('Nœuds');
    expect(knots.data.fallbacks).toEqual({ 'content.introduction': 'en_GB' });
  });

  it('finds a document by the value of a field inside a section, named by its own API id', async () => {
    expect((await entry({ field: 'title', value: 'Voiles', locale: 'fr_FR' })).id).toBe('fr_FR/102');
    // Among a few aliases, the values are compared here, inside the sections too.
    expect(
      (
        await entry(
          { field: 'title', value: 'Knoten', locale: 'de' },
          { contentType: undefined, aliases: ['first-lesson'] },
        )
      ).id,
    ).toBe('de/101');
  });

  it('renders the first richtext field, inside a section, and one named by its path', async () => {
    expect((await entry({ id: 'fr_FR/101' })).rendered.html).toBe('<p>Les nouer vite</p>');
    expect((await entry({ id: 'en_GB/101' }, { render: 'info.description' })).rendered.html).toBe(
      '<p>Tie them fast</p>',
    );
  });

  it('are the same from a server that answers a section as a map of locales', async () => {
    const proxy = await startProxy(server, sectionLevelLocales(lessonsSnapshot()));
    for (const id of ['fr_FR/101', 'de/102', 'en_GB/103']) {
      const direct = await entry({ id });
      const rewritten = await entry({ id }, {}, proxy.url);
      expect({ fields: rewritten.data.fields, fallbacks: rewritten.data.fallbacks }).toEqual({
        fields: direct.data.fields,
        fallbacks: direct.data.fallbacks,
      });
    }
  });
});
