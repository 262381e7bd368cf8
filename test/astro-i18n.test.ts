import { describe, expect, it } from 'vitest';
import { type AstroI18n, alternates, astroSideOf, LocaleMap, langOf } from '../src/astro/i18n.ts';
import type { Locales } from '../src/model/locales.ts';

/**
 * The rule that maps a repository's locales onto Astro's `i18n.locales` (src/astro/i18n.ts), without
 * Astro: the kitchen site (test/kitchen-i18n.test.ts) builds it end to end.
 */

const i18n = (locales: AstroI18n['locales']): AstroI18n =>
  ({ locales, defaultLocale: typeof locales[0] === 'string' ? locales[0] : locales[0]!.path }) as AstroI18n;
/** A repository's locales, the first the default; `[key, fallback]` for one with a fallback. */
const repo = (...keys: (string | [string, string])[]): Locales => ({
  defaultLocale: [keys[0]!].flat()[0]!,
  locales: keys.map((key) => (typeof key === 'string' ? { key } : { key: key[0], fallback: key[1] })),
  source: 'repository',
});
const quiet = () => {};
/** The map a loader gets; `asked` is its locales option. */
const resolve = (map: LocaleMap, repository: string[] | Locales, asked?: string[], warn: (m: string) => void = quiet) =>
  Object.fromEntries(map.resolve(Array.isArray(repository) ? repo(...repository) : repository, asked, 'posts', warn));

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
    expect(resolve(new LocaleMap(i18n(['de-CH'])), ['de_DE'])).toEqual({});
  });

  it('an exact match is kept from a language match: it_CH goes to it-CH, it_IT to it', () => {
    const map = new LocaleMap(i18n(['it', 'it-CH']));
    expect(resolve(map, ['it_IT', 'it_CH'])).toEqual({ it_IT: 'it', it_CH: 'it-CH' });
  });

  it('of two locales of one language, the one the other falls back to takes it: it_IT is it beside it_CH', () => {
    const map = new LocaleMap(i18n(['en', 'it']));
    const swiss = repo('en_GB', ['it_IT', 'en_GB'], ['it_CH', 'it_IT']);
    expect(resolve(map, swiss)).toEqual({ en_GB: 'en', it_IT: 'it' });
    // Through the chain too, and the default locale is on every chain: en_GB is en beside en_US.
    expect(resolve(map, repo('en_GB', ['en_US', 'en_GB'], ['it_CH', 'en_GB']))).toEqual({ en_GB: 'en', it_CH: 'it' });
    // Neither falls back to the other: no language match.
    expect(resolve(map, repo('en_GB', ['it_IT', 'en_GB'], ['it_CH', 'en_GB']))).toEqual({ en_GB: 'en' });
  });
});

describe('the astroLocales option', () => {
  it('maps a locale the codes do not match, and false leaves one out', () => {
    const map = new LocaleMap(i18n(['en', 'fr']), { en_GB: 'en', fr_CA: false });
    expect(resolve(map, ['en_GB', 'fr_FR', 'fr_CA'])).toEqual({ en_GB: 'en', fr_FR: 'fr', fr_CA: false });
  });

  it('naming no Astro locale is refused, naming the option, the locales there are and the nearest', () => {
    expect(() => new LocaleMap(i18n(['en', 'fr']), { en_GB: 'english' })).toThrow(
      'Invalid option astroLocales.en_GB of comfortable(): "english" is not a locale of i18n.locales in astro.config (en, fr): did you mean "en"?',
    );
  });
});

describe("a filter's locale", () => {
  it('finds its repository locale: itself, or by the name, a code or the path of its Astro locale', () => {
    const map = new LocaleMap(i18n(['en', { path: 'suisse', codes: ['de-CH'] }]), { fr_FR: false });
    const known = map.mapOf(repo('en_US', 'de_CH', 'fr_FR', 'it_IT'));
    const cms = (given: string) => map.cmsLocaleOf(known, given);
    // A repository locale, even one left out or mapped to nothing, stands for itself.
    expect(['en_US', 'fr_FR', 'it_IT'].map(cms)).toEqual(['en_US', 'fr_FR', 'it_IT']);
    expect(['en', 'EN', 'de-CH', 'de_ch', 'suisse'].map(cms)).toEqual(['en_US', 'en_US', 'de_CH', 'de_CH', 'de_CH']);
    // Neither: the locale as given, which then names none.
    expect(['fr', 'es_ES'].map(cms)).toEqual(['fr', 'es_ES']);
  });
});

describe('the map depends on the locales only, not on who asked before', () => {
  it('a failed check, another loaded list, another repository: each map is what a fresh one makes', () => {
    const config = i18n(['en', 'it', 'it-CH']);
    const asked = new LocaleMap(config);
    expect(() => resolve(asked, ['en_GB', 'de_DE'], ['de_DE'])).toThrow(/de_DE/);
    resolve(asked, ['en_GB', 'it_IT', 'it_CH'], ['it_CH']);
    for (const repository of [['en_GB', 'it_IT', 'it_CH'], ['it_IT'], ['en_GB', 'de_DE']])
      expect(Object.fromEntries(asked.mapOf(repo(...repository)))).toEqual(
        Object.fromEntries(new LocaleMap(config).mapOf(repo(...repository))),
      );
    expect(asked.mapOf(repo('it_CH')).get('it_CH')).toBe('it-CH');
    expect(asked.mapOf(repo('en_GB', 'it_IT', 'it_CH')).get('it_IT')).toBe('it');
  });
});

describe('a locale that maps to nothing', () => {
  it('is left out, with one warning that names it and the three ways in', () => {
    const map = new LocaleMap(i18n(['en', 'fr']));
    const warned: string[] = [];
    const warn = (message: string) => warned.push(message);
    expect(resolve(map, ['en_GB', 'de_DE'], undefined, warn)).toEqual({ en_GB: 'en' });
    expect(warned).toEqual([
      "The repository's locale de_DE matches no locale of i18n.locales in astro.config (en, fr), so it is left out of every collection: add it there, map it with the astroLocales option of comfortable() (astroLocales: { de_DE: '…' }), or leave it out without this warning (astroLocales: { de_DE: false })",
    ]);
    // Once per map, whichever collection asks next; a loader that does not load it says nothing.
    resolve(map, ['en_GB', 'de_DE'], undefined, warn);
    expect(resolve(map, ['en_GB', 'de_DE', 'es_ES'], ['en_GB'], warn)).toEqual({ en_GB: 'en' });
    expect(warned).toHaveLength(1);
    resolve(map, ['en_GB', 'de_DE', 'es_ES'], undefined, warn);
    expect(warned[1]).toMatch(
      /^The repository's locales de_DE and es_ES match no locale .* so they are left out of every collection: add them there, .*\(astroLocales: \{ de_DE: '…', es_ES: '…' \}\), or leave them out without this warning \(astroLocales: \{ de_DE: false, es_ES: false \}\)$/,
    );
    expect(new LocaleMap(i18n(['en']), { de_DE: false }).mapOf(repo('en_GB', 'de_DE')).get('de_DE')).toBe(false);
  });

  it('says what took its language: another locale it falls back to, or rivals neither of which does', () => {
    const map = new LocaleMap(i18n(['en', 'it']));
    const warned: string[] = [];
    resolve(map, repo('en_GB', ['it_IT', 'en_GB'], ['it_CH', 'it_IT']), undefined, (m) => warned.push(m));
    resolve(map, repo('en_GB', ['it_IT', 'en_GB'], ['it_CH', 'en_GB']), undefined, (m) => warned.push(m));
    expect(warned[0]).toContain(
      `locale it_CH matches no locale of i18n.locales in astro.config (en, it): "it" is it_IT's, so it is left out`,
    );
    expect(warned[1]).toContain(
      'locales it_IT and it_CH match no locale of i18n.locales in astro.config (en, it): it_IT and it_CH have the language of "it", and none is the one the others fall back to, so they are left out',
    );
  });

  it("fails when the loader's locales option names it: the site's own options ask for it", () => {
    const map = new LocaleMap(i18n(['en', 'fr']));
    expect(() => resolve(map, ['en_GB', 'de_DE'], ['en_GB', 'de_DE'])).toThrow(
      `The locale de_DE, which the locales option of the collection "posts" names, matches no locale of i18n.locales in astro.config (en, fr): add it there, map it with the astroLocales option of comfortable() (astroLocales: { de_DE: '…' }), or take it out of that locales option`,
    );
  });
});

describe('entries in both locales', () => {
  it('langOf gives the BCP 47 tag', () => {
    expect([langOf('fr_FR'), langOf('de'), langOf('zh_Hant_TW')]).toEqual(['fr-FR', 'de', 'zh-Hant-TW']);
  });

  it("an entry's side in Astro: its locale, its tag, and fallbacks null where there is no value or no Astro locale", () => {
    const map = new Map<string, string | false>([
      ['it_CH', 'it-CH'],
      ['it_IT', false],
      ['en_GB', 'en'],
    ]);
    expect(astroSideOf('it_CH', { title: 'en_GB', summary: 'it_IT', body: null }, map)).toEqual({
      astroLocale: 'it-CH',
      lang: 'it-CH',
      astroFallbacks: { title: 'en', summary: null, body: null },
    });
    expect(astroSideOf('it_IT', {}, map).astroLocale).toBeUndefined();
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
