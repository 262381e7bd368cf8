import { describe, expect, it } from 'vitest';
import { type AstroI18n, alternates, astroFallbacksOf, LocaleMap, langOf } from '../src/astro/i18n.ts';

/**
 * The rule that maps a repository's locales onto Astro's `i18n.locales` (src/astro/i18n.ts), without
 * Astro: the kitchen site (test/kitchen-i18n.test.ts) builds it end to end.
 */

const i18n = (locales: AstroI18n['locales']): AstroI18n =>
  ({ locales, defaultLocale: typeof locales[0] === 'string' ? locales[0] : locales[0]!.path }) as AstroI18n;
const resolve = (map: LocaleMap, repository: string[], loaded = repository) =>
  Object.fromEntries(map.resolve(repository, loaded, 'posts'));

describe('a repository locale finds its Astro locale by code', () => {
  it('fr_FR finds fr-FR, case and separator aside; a plain de finds de', () => {
    const map = new LocaleMap(i18n(['en-gb', 'FR-fr', 'de']));
    expect(resolve(map, ['en_GB', 'fr_FR', 'de'])).toEqual({ en_GB: 'en-gb', fr_FR: 'FR-fr', de: 'de' });
  });

  it('a { path, codes } locale is found by a code or by its path, and named by its first code', () => {
    const map = new LocaleMap(
      i18n(['en', { path: 'suisse', codes: ['fr-CH', 'fr'] }, { path: 'it-ch', codes: ['it-CH-x'] }]),
    );
    expect(resolve(map, ['en_GB', 'fr', 'it_CH'])).toEqual({ en_GB: 'en', fr: 'fr-CH', it_CH: 'it-CH-x' });
  });

  it('by language when only one repository locale speaks it: fr_FR finds fr, de finds de-DE', () => {
    const map = new LocaleMap(i18n(['fr', 'de-DE']));
    expect(resolve(map, ['fr_FR', 'de'])).toEqual({ fr_FR: 'fr', de: 'de-DE' });
  });

  it('not from one region to another: de_DE finds de, never de-CH, even with de_CH left out', () => {
    const map = new LocaleMap(i18n(['en', 'de', 'de-CH']), { de_CH: false });
    expect(resolve(map, ['en_US', 'de_DE', 'de_CH'])).toEqual({ en_US: 'en', de_DE: 'de', de_CH: false });
    expect(resolve(new LocaleMap(i18n(['de-CH'])), ['de_DE', 'de_CH'], ['de_CH'])).toEqual({ de_CH: 'de-CH' });
    expect(() => new LocaleMap(i18n(['de-CH'])).resolve(['de_DE'], ['de_DE'], 'posts')).toThrow(/de_DE/);
  });

  it('an exact match is kept from a language match: it_CH goes to it-CH, it_IT to it', () => {
    const map = new LocaleMap(i18n(['it', 'it-CH']));
    expect(resolve(map, ['it_IT', 'it_CH'])).toEqual({ it_IT: 'it', it_CH: 'it-CH' });
  });
});

describe('the astroLocales option', () => {
  it('maps a locale the codes do not match, and false leaves one out', () => {
    const map = new LocaleMap(i18n(['en', 'fr']), { en_GB: 'en', fr_CA: false });
    expect(resolve(map, ['en_GB', 'fr_FR', 'fr_CA'])).toEqual({ en_GB: 'en', fr_FR: 'fr', fr_CA: false });
  });

  it('naming no Astro locale is refused, naming the option and the locales there are', () => {
    expect(() => new LocaleMap(i18n(['en', 'fr']), { en_GB: 'english' })).toThrow(
      'Invalid option astroLocales.en_GB of comfortable(): "english" is not a locale of i18n.locales in astro.config (en, fr)',
    );
  });
});

describe('the map depends on the locales only, not on who asked before', () => {
  it('a failed check, another loaded list, another repository: each map is what a fresh one makes', () => {
    const config = i18n(['en', 'it', 'it-CH']);
    const asked = new LocaleMap(config);
    expect(() => asked.resolve(['en_GB', 'de_DE'], ['de_DE'], 'posts')).toThrow(/de_DE/);
    resolve(asked, ['en_GB', 'it_IT', 'it_CH'], ['it_CH']);
    for (const repository of [['en_GB', 'it_IT', 'it_CH'], ['it_IT'], ['en_GB', 'de_DE']])
      expect(Object.fromEntries(asked.mapOf(repository))).toEqual(
        Object.fromEntries(new LocaleMap(config).mapOf(repository)),
      );
    expect(asked.mapOf(['it_CH']).get('it_CH')).toBe('it-CH');
    expect(asked.mapOf(['en_GB', 'it_IT', 'it_CH']).get('it_IT')).toBe('it');
  });
});

describe('a loaded locale that maps to nothing fails, naming it and the fix', () => {
  it('no locale of its language', () => {
    const map = new LocaleMap(i18n(['en', 'fr']));
    expect(() => map.resolve(['en_GB', 'de_DE'], ['en_GB', 'de_DE'], 'posts')).toThrow(
      /The locale de_DE of the repository, which the collection "posts" loads, matches no locale of i18n.locales in astro.config \(en, fr\): add it there, map it with the astroLocales option of comfortable\(\) \(astroLocales: \{ de_DE: '…' \}\), or leave it out \(astroLocales: \{ de_DE: false \}\)/,
    );
  });

  it('two locales of one language and one Astro locale: both are named', () => {
    const map = new LocaleMap(i18n(['it']));
    expect(() => map.resolve(['it_IT', 'it_CH'], ['it_CH'], 'recipes')).toThrow(
      /it_CH .*by its code, and it_IT and it_CH both have the language of "it"/,
    );
  });

  it('one the loaders do not load is not an error', () => {
    const map = new LocaleMap(i18n(['en']));
    expect(resolve(map, ['en_GB', 'de_DE'], ['en_GB'])).toEqual({ en_GB: 'en' });
  });
});

describe('entries in both locales', () => {
  it('langOf gives the BCP 47 tag', () => {
    expect([langOf('fr_FR'), langOf('de'), langOf('zh_Hant_TW')]).toEqual(['fr-FR', 'de', 'zh-Hant-TW']);
  });

  it("fallbacks in Astro's locales: null where there is no value, or no Astro locale", () => {
    const map = new Map<string, string | false>([
      ['it_CH', 'it-CH'],
      ['it_IT', false],
      ['en_GB', 'en'],
    ]);
    expect(astroFallbacksOf({ title: 'en_GB', summary: 'it_IT', body: null }, map)).toEqual({
      title: 'en',
      summary: null,
      body: null,
    });
  });

  const entry = (id: string, locale: string, lang?: string) => ({ id: `${locale}/${id}`, data: { id, locale, lang } });
  const entries = [entry('a', 'en_GB', 'en-GB'), entry('a', 'fr_FR', 'fr-FR'), entry('b', 'fr_FR'), entry('a', 'de')];

  it('alternates: the same document in the other locales', () => {
    expect(alternates(entries[0]!, entries).map((e) => e.id)).toEqual(['fr_FR/a', 'de/a']);
  });

  it("alternates with the site's URL rule: each with its lang and href", () => {
    const found = alternates(entries[1]!, entries, (other) => `/${other.data.locale}/a/`);
    expect(found.map(({ entry, ...rest }) => ({ id: entry.id, ...rest }))).toEqual([
      { id: 'en_GB/a', lang: 'en-GB', href: '/en_GB/a/' },
      { id: 'de/a', lang: 'de', href: '/de/a/' },
    ]);
  });
});
