import { describe, expect, it } from 'vitest';
import { entryOf } from '../src/entries/entries.ts';
import { countLocales, guessLocales, type Locales } from '../src/model/locales.ts';
import type { StoredRecord } from '../src/model/records.ts';
import { startServer } from '../src/server/index.ts';
import { sync } from '../src/sync/engine.ts';
import { fallbackChains } from '../src/wire/locales.ts';
import { parseSnapshot } from '../src/wire/snapshot.ts';
import { asks, doc, idsOf, repository } from './helpers/forms.ts';
import { configFor, key, recorder, recordsOf, serve, startProxy, tempDir } from './helpers/magazine.ts';
import { servedForFile } from './helpers/server.ts';

/**
 * Locales, one rule each for the loader, `pull` and the server (wire/locales.ts,
 * model/locales.ts): the form of a locale key, the locales guessed from the data when a server
 * lists none, and the fallback chains.
 */

const counted = (...fieldsOfRecords: Record<string, unknown>[]) => {
  const counts = new Map<string, number>();
  for (const fields of fieldsOfRecords) countLocales(fields, counts);
  return Object.fromEntries(counts);
};

describe('locale keys guessed from the data take the form the Read API gives them', () => {
  it('counts the keys of maps of locales, at the top and inside sections', () => {
    const fields = {
      title: { en_US: 'Hello', de_DE: 'Hallo' },
      seo: { description: { en_US: 'About', fr: 'À propos' }, slug: 'about' },
      es: { es_419: 'Hola' },
    };
    expect(counted(fields, { title: { en_US: 'Hi' } })).toEqual({ en_US: 3, de_DE: 1, fr: 1, es_419: 1 });
  });

  it('counts no location, reference, richtext or object of other keys', () => {
    const fields = {
      place: { lat: 47.37, lng: 8.54 },
      author: { meta: { id: '1', contentType: 'author' } },
      body: { html: '<p>x</p>', plain: 'x' },
      data: { width: 3, height: 4 },
    };
    expect(counted(fields)).toEqual({});
  });

  // The sync took only a lower-case language, `pull` either case: the spec writes `xx_XX` and
  // `xx`, and an object keyed by currencies or country codes is a JSON value, not translations.
  it('takes the language in lower case only (pull took any case before)', () => {
    expect(counted({ prices: { USD: 3, EUR: 4 }, codes: { DE: 'Germany', AT: 'Austria' } })).toEqual({});
    expect(counted({ title: { EN_us: 'Hello' } })).toEqual({});
    expect(counted({ title: { en_us: 'Hello', zh_Hant: '你好' } })).toEqual({ en_us: 1, zh_Hant: 1 });
  });

  it('a snapshot declares its keys in either case, as before', () => {
    const snapshot = {
      repository: { ...repository('cased'), defaultLocale: 'EN_us', locales: [{ key: 'EN_us' }] },
      contentTypes: [],
      documents: [],
    };
    expect(parseSnapshot(snapshot, 'cased.json').repository.locales).toEqual([{ key: 'EN_us' }]);
  });
});

describe('locales guessed from the data', () => {
  const keys = (locales: Locales) => locales.locales.map((l) => l.key);

  it('are the keys seen, the most often seen first and the default, without fallbacks', () => {
    const locales = guessLocales(
      new Map([
        ['de_DE', 2],
        ['en_US', 5],
        ['fr', 2],
      ]),
    );
    expect(locales).toEqual({
      defaultLocale: 'en_US',
      locales: [{ key: 'en_US' }, { key: 'de_DE' }, { key: 'fr' }],
      source: 'data',
    });
  });

  it('keep those known (guessed before, or a default the server gives) first', () => {
    const before = guessLocales(new Map([['de_DE', 1]]), { defaultLocale: 'en_US', keys: ['en_US', 'it'] });
    expect(before.defaultLocale).toBe('en_US');
    expect(keys(before)).toEqual(['en_US', 'it', 'de_DE']);
    expect(keys(guessLocales(new Map([['de_DE', 3]]), { defaultLocale: 'fr_FR' }))).toEqual(['fr_FR', 'de_DE']);
  });

  // The sync listed no locale then, so its documents had no entry at all; `pull` kept the default.
  it('hold the default even when no value was localized', () => {
    expect(guessLocales(new Map())).toEqual({ defaultLocale: 'en_US', locales: [{ key: 'en_US' }], source: 'data' });
  });

  it('give every document an entry when the server lists none and no value is localized', async () => {
    const plain = {
      repository: { ...repository('mag'), apiKeys: [key] },
      contentTypes: [{ apiId: 'word', fields: [{ apiId: 'w', type: 'text' }] }],
      documents: [doc('1', 'word', { w: 'Zebra' }), doc('2', 'word', { w: 'Apple' })],
    };
    const { server } = await serve(plain as never);
    const proxy = await startProxy(server, (path, body) => {
      if (path === '/v1/mag') delete body.meta.locales;
      return body;
    });
    const log = recorder();
    const only = { collections: {}, aliases: [], queries: { words: { contentType: 'word' } } };
    const result = await sync(configFor(proxy.url, await tempDir(), only), log);
    expect(result.cache.head.locales).toEqual({ defaultLocale: 'en_US', locales: [{ key: 'en_US' }], source: 'data' });
    expect(log.warns).toContain(
      "The server did not list the repository's locales; using the locale keys seen in the data (en_US), " +
        'default en_US, without fallbacks',
    );
    expect([...recordsOf(result).keys()]).toEqual(['1', '2']);
  });
});

describe('fallback chains', () => {
  const locales = {
    defaultLocale: 'en_US',
    locales: [
      { key: 'en_US' },
      { key: 'de_DE', fallback: 'en_US' },
      { key: 'de_CH', fallback: 'de_DE' },
      { key: 'fr_FR' },
    ],
  };

  it('follow each fallback and end at the default locale, which is on every chain', () => {
    expect(Object.fromEntries(fallbackChains(locales))).toEqual({
      en_US: ['en_US'],
      de_DE: ['de_DE', 'en_US'],
      de_CH: ['de_CH', 'de_DE', 'en_US'],
      fr_FR: ['fr_FR', 'en_US'],
    });
  });

  it('stop at a cycle (a server may answer one; a snapshot may not hold one)', () => {
    const looped = {
      defaultLocale: 'en_US',
      locales: [{ key: 'en_US' }, { key: 'a', fallback: 'b' }, { key: 'b', fallback: 'a' }],
    };
    expect(fallbackChains(looped).get('a')).toEqual(['a', 'b', 'en_US']);
  });

  // The server used to end a chain where the fallbacks did: a locale with no fallback answered
  // null where the loader's entry showed the default locale's value, and a live collection's
  // filter in that locale missed a value its page showed.
  describe('are the same for the server and the loader, a locale without a fallback included', () => {
    const snapshot = {
      repository: repository('solo', locales.locales),
      contentTypes: [{ apiId: 'post', fields: [{ apiId: 'title', type: 'text', localized: true }] }],
      documents: [doc('1', 'post', { title: { en_US: 'Hello', de_DE: 'Hallo' } })],
    };
    const server = servedForFile(() => startServer({ snapshots: [snapshot], watch: false }));
    const { ask } = asks(server);

    it('the server answers fr_FR with the default locale value, and filters on it', async () => {
      expect((await ask('/solo/documents/1', { locale: 'fr_FR' })).fields.title).toBe('Hello');
      expect((await ask('/solo/documents/1', { locale: 'de_CH' })).fields.title).toBe('Hallo');
      const found = await ask('/solo/documents', {
        locale: 'fr_FR',
        filters: [{ '*.fields.title': { equal: 'Hello' } }],
      });
      expect(idsOf(found.data)).toEqual(['1']);
    });

    it("the loader's entry in fr_FR shows the same value, marked as the default locale's", () => {
      const record: StoredRecord = {
        id: '1',
        contentType: 'post',
        revision: 1,
        tags: [],
        createdAt: '',
        updatedAt: '',
        fields: { title: { en_US: 'Hello', de_DE: 'Hallo' } },
        localized: ['title'],
      };
      const entry = entryOf(record, 'fr_FR', { ...locales, source: 'repository' }, () => undefined);
      expect(entry.fields.title).toBe('Hello');
      expect(entry.fallbacks).toEqual({ title: 'en_US' });
    });
  });
});
