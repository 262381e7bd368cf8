import type { AstroConfig } from 'astro';
import { z } from 'zod';
import { ConfigError, didYouMean } from '../sync/config.ts';

/**
 * Astro's `i18n` config, understood: each locale of the repository (`fr_FR`, `de`) is mapped to
 * a locale of `i18n.locales` (`'fr'`, or `{ path: 'it-ch', codes: ['it-CH'] }`), so entries carry
 * the locale Astro speaks (`Astro.currentLocale`, `getRelativeLocaleUrl`) beside the CMS's.
 *
 * The rule, for each CMS locale: the `astroLocales` option when it names it (`false` leaves the
 * locale out); else the Astro locale one of whose codes or whose path is the same code
 * (`fr_FR` ↔ `fr-FR`, case aside); else the one whose code is the same language (`fr_FR` ↔ `fr`,
 * `de` ↔ `de-DE`, never `de_DE` ↔ `de-CH`), when no other CMS locale claims it. An Astro locale given as
 * `{ path, codes }` is named by its first code, as `Astro.currentLocale` names it.
 */

export type AstroI18n = NonNullable<AstroConfig['i18n']>;

/** The `astroLocales` option: CMS locale → Astro locale, or false to leave that locale out. */
export const astroLocalesSchema = z.record(z.string().min(1), z.union([z.string().min(1), z.literal(false)]), {
  error: "expected a map from the CMS's locales to Astro's, such as { en_GB: 'en', de_CH: false }",
});

/** A locale key as BCP 47 has it, for `lang` and `hreflang`: `fr_FR` → `fr-FR`. */
export const langOf = (locale: string): string => locale.replace(/_/g, '-');

const normal = (code: string) => langOf(code).toLowerCase();
const language = (code: string) => normal(code).split('-')[0]!;
/** Same language, and one of the two is the language alone: `fr` and `fr_FR`, not `de-CH` and `de_DE`. */
const akin = (astro: string, cms: string) =>
  language(astro) === language(cms) && (normal(astro) === language(astro) || normal(cms) === language(cms));

/** What the loaders need of Astro's i18n: each CMS locale's Astro locale, or false when it is left out. */
export class LocaleMap {
  readonly #astro: { name: string; codes: string[] }[];
  readonly #explicit: Record<string, string | false>;
  /** Whose `astroLocales` option the messages name: `comfortable()` or `comfortableLiveLoader()`. */
  readonly #owner: string;
  /** The maps made, by the repository's locales. */
  readonly #maps = new Map<string, Map<string, string | false>>();

  constructor(i18n: AstroI18n, explicit: Record<string, string | false> = {}, owner = 'comfortable()') {
    this.#astro = i18n.locales.map((locale) =>
      typeof locale === 'string'
        ? { name: locale, codes: [locale] }
        : { name: locale.codes[0] ?? locale.path, codes: [...locale.codes, locale.path] },
    );
    this.#explicit = explicit;
    this.#owner = owner;
    for (const [cms, astro] of Object.entries(explicit)) {
      if (astro !== false && !this.#astro.some((a) => a.codes.some((code) => normal(code) === normal(astro)))) {
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
   * claimed once), or false for one left out; the same for the same locales, whoever asks.
   */
  mapOf(repository: readonly string[]): ReadonlyMap<string, string | false> {
    const key = repository.join(',');
    let map = this.#maps.get(key);
    if (!map) this.#maps.set(key, (map = this.#map(repository)));
    return map;
  }

  /**
   * `mapOf(repository)`, after checking that each locale of `loaded` maps to something: throws a
   * ConfigError naming one that maps to nothing, and the ways out.
   */
  resolve(
    repository: readonly string[],
    loaded: readonly string[],
    collection: string,
  ): ReadonlyMap<string, string | false> {
    const map = this.mapOf(repository);
    for (const cms of loaded) {
      if (map.has(cms)) continue;
      const rivals = repository.filter((other) => !map.has(other) && language(other) === language(cms));
      const shared = this.#astro.find((a) => a.codes.some((code) => language(code) === language(cms)));
      const why =
        shared && rivals.length > 1
          ? `matches no locale of i18n.locales in astro.config by its code, and ${rivals.join(' and ')} both ` +
            `have the language of "${shared.name}"`
          : `matches no locale of i18n.locales in astro.config (${this.names()})`;
      throw new ConfigError(
        'astroLocales',
        `The locale ${cms} of the repository, which the collection "${collection}" loads, ${why}: add it there, ` +
          `map it with the astroLocales option of ${this.#owner} (astroLocales: { ${cms}: '…' }), or leave it out ` +
          `(astroLocales: { ${cms}: false })`,
      );
    }
    return map;
  }

  /**
   * The repository locale whose Astro locale is `given`: by its name, one of its codes or its path,
   * as `Astro.currentLocale` or a `[locale]` route's param say it; undefined for none.
   */
  cmsLocaleOf(map: ReadonlyMap<string, string | false>, given: string): string | undefined {
    const astro = this.#astro.find((a) => [a.name, ...a.codes].some((code) => normal(code) === normal(given)));
    for (const [cms, name] of map) if (astro && name === astro.name) return cms;
    return undefined;
  }

  #map(repository: readonly string[]): Map<string, string | false> {
    const map = new Map<string, string | false>();
    const exact = (cms: string) => this.#astro.find((a) => a.codes.some((code) => normal(code) === normal(cms)));
    for (const cms of repository) {
      const given = this.#explicit[cms];
      if (given !== undefined) {
        const astro = given === false ? undefined : exact(given);
        map.set(cms, astro ? astro.name : false);
      } else {
        const astro = exact(cms);
        if (astro) map.set(cms, astro.name);
      }
    }
    const claimed = new Set([...map.values()]);
    for (const cms of repository) {
      if (map.has(cms)) continue;
      const candidates = this.#astro.filter((a) => !claimed.has(a.name) && a.codes.some((code) => akin(code, cms)));
      const rivals = repository.filter((other) => !map.has(other) && language(other) === language(cms));
      if (candidates.length === 1 && rivals.length === 1) map.set(cms, candidates[0]!.name);
    }
    return map;
  }
}

/**
 * `fallbacks` in Astro's locales: for each field whose value came from another locale, that
 * locale's Astro locale; null where `fallbacks` has null, or where that locale maps to none.
 */
export function astroFallbacksOf(
  fallbacks: Record<string, string | null>,
  astroLocales: ReadonlyMap<string, string | false>,
): Record<string, string | null> {
  return Object.fromEntries(
    Object.entries(fallbacks).map(([path, from]) => [path, (from !== null && astroLocales.get(from)) || null]),
  );
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
