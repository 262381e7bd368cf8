import type { AstroConfig } from 'astro';
import { z } from 'zod';
import { nonEmpty } from '../wire/schemas.ts';
import type { Locales } from '../model/locales.ts';
import { fallbackChains } from '../wire/locales.ts';
import { ConfigError, didYouMean } from '../sync/config.ts';

/**
 * Astro's `i18n` config, understood: each locale of the repository (`fr_FR`, `de`) is mapped to
 * a locale of `i18n.locales` (`'fr'`, or `{ path: 'it-ch', codes: ['it-CH'] }`), so entries carry
 * the locale Astro speaks (`Astro.currentLocale`, `getRelativeLocaleUrl`) beside the CMS's.
 *
 * The rule, for each CMS locale: the `astroLocales` option when it names it (`false` leaves the
 * locale out); else the Astro locale one of whose codes or whose path is the same code
 * (`fr_FR` ↔ `fr-FR`, case aside); else the one whose code is the same language (`fr_FR` ↔ `fr`,
 * `de` ↔ `de-DE`, never `de_DE` ↔ `de-CH`), when no other CMS locale claims it or when the others
 * of that language fall back to it (`it_IT` ↔ `it` beside `it_CH`). An Astro locale given as
 * `{ path, codes }` is named by its first code, as `Astro.currentLocale` names it. A locale that
 * maps to nothing is left out with a warning, unless the site's own options ask for it.
 */

export type AstroI18n = NonNullable<AstroConfig['i18n']>;

/** Each of the repository's locales → its Astro locale, or false for one the `astroLocales` option leaves out. */
export type AstroLocaleMap = ReadonlyMap<string, string | false>;

/** The `astroLocales` option: CMS locale → Astro locale, or false to leave that locale out. */
export const astroLocalesSchema = z.record(nonEmpty, z.union([nonEmpty, z.literal(false)]), {
  error: "expected a map from the CMS's locales to Astro's, such as { en_GB: 'en', de_CH: false }",
});

/** A locale key as BCP 47 has it, for `lang` and `hreflang`: `fr_FR` → `fr-FR`. */
export const langOf = (locale: string): string => locale.replace(/_/g, '-');

/** A locale code as compared: `fr_FR` and `fr-fr` are `fr-fr`. */
export const normal = (code: string) => langOf(code).toLowerCase();
/** A locale code's language: `fr_FR` → `fr`. */
export const language = (code: string) => normal(code).split('-')[0]!;
/** Same language, and one of the two is the language alone: `fr` and `fr_FR`, not `de-CH` and `de_DE`. */
const akin = (astro: string, cms: string) =>
  language(astro) === language(cms) && (normal(astro) === language(astro) || normal(cms) === language(cms));

/** What the loaders need of Astro's i18n: each CMS locale's Astro locale, or false when it is left out. */
export class LocaleMap {
  readonly #astro: { name: string; codes: string[] }[];
  readonly #explicit: Record<string, string | false>;
  /** Whose `astroLocales` option the messages name: `comfortable()` or `comfortableLiveLoader()`. */
  readonly #owner: string;
  /** The maps made, by the repository's locales and fallbacks. */
  readonly #maps = new Map<string, AstroLocaleMap>();
  /** The maps whose left-out locales were told: each once. */
  readonly #told = new Set<string>();

  constructor(i18n: AstroI18n, explicit: Record<string, string | false> = {}, owner = 'comfortable()') {
    this.#astro = i18n.locales.map((locale) =>
      typeof locale === 'string'
        ? { name: locale, codes: [locale] }
        : { name: locale.codes[0] ?? locale.path, codes: [...locale.codes, locale.path] },
    );
    this.#explicit = explicit;
    this.#owner = owner;
    for (const [cms, astro] of Object.entries(explicit)) {
      if (astro !== false && !this.#exact(astro)) {
        const names = this.#astro.map((a) => a.name);
        throw new ConfigError(
          `astroLocales.${cms}`,
          `Invalid option astroLocales.${cms} of ${owner}: "${astro}" is not a locale of i18n.locales ` +
            `in astro.config${didYouMean(astro, names)}`,
        );
      }
    }
  }

  /** The Astro locales, as listed in the error messages. */
  names(): string {
    return this.#astro.map((a) => a.name).join(', ');
  }

  /** For a fingerprint: what decides the entries' Astro locales. */
  signature(): unknown {
    return { astro: this.#astro, explicit: Object.entries(this.#explicit).sort() };
  }

  /**
   * The Astro locale of each of the repository's locales (all of them, so a language match is
   * claimed once), or false for one `astroLocales` leaves out; a locale that maps to nothing is
   * not in it. The same for the same locales, whoever asks.
   */
  mapOf(repository: Locales): AstroLocaleMap {
    const key = JSON.stringify(repository.locales);
    let map = this.#maps.get(key);
    if (!map) this.#maps.set(key, (map = this.#map(repository)));
    return map;
  }

  /**
   * `mapOf(repository)` for a loader. A locale its `locales` option names (`asked`) must map to
   * an Astro locale: one that maps to nothing is a ConfigError naming it and the ways out. Without
   * the option, a locale that maps to nothing (one the CMS added, say) is left out, and `warn` is
   * told so once per map: a change in the CMS alone never fails a build.
   */
  resolve(
    repository: Locales,
    asked: readonly string[] | undefined,
    collection: string,
    warn: (message: string) => void,
  ): AstroLocaleMap {
    const map = this.mapOf(repository);
    const unmapped = repository.locales.map((l) => l.key).filter((cms) => !map.has(cms));
    const refused = asked?.find((cms) => unmapped.includes(cms));
    if (refused !== undefined) {
      throw new ConfigError(
        'locales',
        `The locale ${refused}, which the locales option of the collection "${collection}" names, ` +
          `${this.#why([refused], repository)}: add it there, map it with the astroLocales option of ` +
          `${this.#owner} (astroLocales: { ${refused}: '…' }), or take it out of that locales option`,
      );
    }
    const key = JSON.stringify(repository.locales);
    if (asked === undefined && unmapped.length > 0 && !this.#told.has(key)) {
      this.#told.add(key);
      const [they, are, them] = unmapped.length === 1 ? ['it', 'is', 'it'] : ['they', 'are', 'them'];
      const each = (value: string) => unmapped.map((cms) => `${cms}: ${value}`).join(', ');
      // The integration's map serves every loader; a live loader has one of its own.
      const scope = this.#owner === 'comfortable()' ? 'every collection' : `the collection "${collection}"`;
      warn(
        `The repository's locale${unmapped.length === 1 ? '' : 's'} ${listed(unmapped)} ` +
          `${this.#why(unmapped, repository)}, so ${they} ${are} left out of ${scope}: add ${them} there, map ` +
          `${them} with the astroLocales option of ${this.#owner} (astroLocales: { ${each("'…'")} }), or leave ` +
          `${them} out without this warning (astroLocales: { ${each('false')} })`,
      );
    }
    return map;
  }

  /**
   * The repository locale a filter's `given` locale stands for: itself, or the one whose Astro
   * locale it names (by its name, one of its codes or its path, as `Astro.currentLocale` or a
   * `[locale]` route's param say it); else `given`, which then names none.
   */
  cmsLocaleOf(map: AstroLocaleMap, given: string): string {
    // A repository locale that maps to nothing has no Astro locale of its code (else it would map
    // to it): the search below gives it back as it is.
    if (map.has(given)) return given;
    const astro = this.#exact(given);
    for (const [cms, name] of map) if (astro && name === astro.name) return cms;
    return given;
  }

  /** The Astro locale one of whose codes (its path among them) is this code, case and `_` aside. */
  #exact(code: string): { name: string } | undefined {
    return this.#astro.find((a) => a.codes.some((own) => normal(own) === normal(code)));
  }

  #map(repository: Locales): AstroLocaleMap {
    const keys = repository.locales.map((l) => l.key);
    const map = new Map<string, string | false>();
    for (const cms of keys) {
      const given = this.#explicit[cms];
      if (given !== undefined) {
        const astro = given === false ? undefined : this.#exact(given);
        map.set(cms, astro ? astro.name : false);
      } else {
        const astro = this.#exact(cms);
        if (astro) map.set(cms, astro.name);
      }
    }
    // By language: the one locale of that language left, or the one the others of it fall back
    // to (it_CH → it_IT: it_IT is "it"), so a regional variant added in the CMS leaves the
    // locale it varies where it was.
    const chains = fallbackChains(repository);
    const claimed = new Set([...map.values()]);
    for (const cms of keys) {
      if (map.has(cms)) continue;
      const rivals = keys.filter((other) => other !== cms && !map.has(other) && language(other) === language(cms));
      if (!rivals.every((other) => chains.get(other)?.includes(cms))) continue;
      const candidates = this.#astro.filter((a) => !claimed.has(a.name) && a.codes.some((code) => akin(code, cms)));
      if (candidates.length !== 1) continue;
      map.set(cms, candidates[0]!.name);
      claimed.add(candidates[0]!.name);
    }
    return map;
  }

  /** Why these locales map to nothing: the Astro locales there are, and what took their language's. */
  #why(unmapped: readonly string[], repository: Locales): string {
    const map = this.mapOf(repository);
    const notes = unmapped.flatMap((cms) => {
      const same = this.#astro.filter((a) => a.codes.some((code) => akin(code, cms)));
      if (same.length > 1) return [`${cms} has the language of ${listed(same.map((a) => `"${a.name}"`))}`];
      if (same.length === 0) return [];
      const holder = [...map].find(([, name]) => name === same[0]!.name)?.[0];
      if (holder) return [`"${same[0]!.name}" is ${holder}'s`];
      const rivals = unmapped.filter((other) => language(other) === language(cms));
      return rivals[0] === cms && rivals.length > 1
        ? [`${listed(rivals)} have the language of "${same[0]!.name}", and none is the one the others fall back to`]
        : [];
    });
    const verb = unmapped.length === 1 ? 'matches' : 'match';
    return `${verb} no locale of i18n.locales in astro.config (${this.names()})${notes.length > 0 ? `: ${notes.join('; ')}` : ''}`;
  }
}

/** `a`, `a and b`, `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

/**
 * What an entry says of its locale in Astro's terms: the Astro locale, the BCP 47 tag, and
 * `fallbacks` in Astro's locales (for each field whose value came from another locale, that
 * locale's Astro locale; null where `fallbacks` has null, or where that locale maps to none).
 */
export function astroSideOf(locale: string, fallbacks: Record<string, string | null>, astroLocales: AstroLocaleMap) {
  return {
    astroLocale: astroLocales.get(locale) || undefined,
    lang: langOf(locale),
    astroFallbacks: Object.fromEntries(
      Object.entries(fallbacks).map(([path, from]) => [path, (from !== null && astroLocales.get(from)) || null]),
    ),
  };
}

/** What `alternates` reads of an entry. */
interface LocalizedEntry {
  data: { id: string; locale: string; lang?: string | undefined };
}

/** An alternate with its URL, for `<link rel="alternate" hreflang={lang} href={href}>`. */
export interface Alternate<E> {
  entry: E;
  /** The BCP 47 tag of its locale (`fr-FR`), for `hreflang`. */
  lang: string;
  /** Its URL, as the site's own rule made it. */
  href: string;
}

/**
 * The same document in the other locales of `entries` (a collection, from `getCollection`): for
 * `hreflang` links and language switchers. Given the site's URL rule, each comes with its `lang`
 * and `href`.
 * @example
 * const others = alternates(recipe, await getCollection('recipes'), (other) =>
 *   getRelativeLocaleUrl(other.data.astroLocale, `recipes/${other.data.fields.slug}/`));
 * others.map(({ lang, href }) => <link rel="alternate" hreflang={lang} href={href} />)
 */
export function alternates<E extends LocalizedEntry>(entry: E, entries: readonly E[]): E[];
export function alternates<E extends LocalizedEntry>(
  entry: E,
  entries: readonly E[],
  href: (other: E) => string,
): Alternate<E>[];
export function alternates<E extends LocalizedEntry>(
  entry: E,
  entries: readonly E[],
  href?: (other: E) => string,
): E[] | Alternate<E>[] {
  const others = entries.filter((other) => other.data.id === entry.data.id && other.data.locale !== entry.data.locale);
  if (!href) return others;
  return others.map((other) => ({
    entry: other,
    lang: other.data.lang ?? langOf(other.data.locale),
    href: href(other),
  }));
}
