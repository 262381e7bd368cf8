import type { AstroConfig } from 'astro';
import { z } from 'zod';
import { ConfigError } from '../sync/config.ts';

/**
 * Astro's `i18n` config, understood: each locale of the repository (`fr_FR`, `de`) is mapped to
 * a locale of `i18n.locales` (`'fr'`, or `{ path: 'it-ch', codes: ['it-CH'] }`), so entries carry
 * the locale Astro speaks (`Astro.currentLocale`, `getRelativeLocaleUrl`) beside the CMS's.
 *
 * The rule, for each CMS locale: the `astroLocales` option when it names it (`false` leaves the
 * locale out); else the Astro locale one of whose codes or whose path is the same code
 * (`fr_FR` ↔ `fr-FR`, case aside); else the one whose code is the same language (`fr_FR` ↔ `fr`,
 * `de` ↔ `de-DE`), when no other CMS locale claims it. An Astro locale given as
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

/** What the loaders need of Astro's i18n: each CMS locale's Astro locale, or false when it is left out. */
export class LocaleMap {
  readonly #astro: { name: string; codes: string[] }[];
  readonly #explicit: Record<string, string | false>;
  /** The last map `resolve` made: the repository's locales do not change within a sync. */
  #resolved = new Map<string, string | false>();

  constructor(i18n: AstroI18n, explicit: Record<string, string | false> = {}) {
    this.#astro = i18n.locales.map((locale) =>
      typeof locale === 'string'
        ? { name: locale, codes: [locale] }
        : { name: locale.codes[0] ?? locale.path, codes: [...locale.codes, locale.path] },
    );
    this.#explicit = explicit;
    for (const [cms, astro] of Object.entries(explicit)) {
      if (astro !== false && !this.#astro.some((a) => a.codes.some((code) => normal(code) === normal(astro))))
        throw new ConfigError(
          `astroLocales.${cms}`,
          `Invalid option astroLocales.${cms} of comfortable(): "${astro}" is not a locale of i18n.locales ` +
            `in astro.config (${this.names()})`,
        );
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
   * claimed once), or false for one left out; throws a ConfigError naming a locale that maps to
   * nothing when `loaded` holds it.
   */
  resolve(repository: readonly string[], loaded: readonly string[], collection: string): Map<string, string | false> {
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
      const candidates = this.#astro.filter(
        (a) => !claimed.has(a.name) && a.codes.some((code) => language(code) === language(cms)),
      );
      const rivals = repository.filter((other) => !map.has(other) && language(other) === language(cms));
      if (candidates.length === 1 && rivals.length === 1) map.set(cms, candidates[0]!.name);
    }
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
          `map it with the astroLocales option of comfortable() (astroLocales: { ${cms}: '…' }), or leave it out ` +
          `(astroLocales: { ${cms}: false })`,
      );
    }
    this.#resolved = map;
    return map;
  }

  /** The Astro locale of a CMS locale, from the last `resolve`; undefined for one left out or unknown. */
  of(locale: string): string | undefined {
    return this.#resolved.get(locale) || undefined;
  }
}

/** What `alternates` reads of an entry. */
interface LocalizedEntry {
  data: { id: string; locale: string };
}

/**
 * The same document in the other locales of `entries` (a collection, from `getCollection`): for
 * `hreflang` links and language switchers.
 * @example
 * alternates(recipe, await getCollection('recipes')).map((other) =>
 *   <link rel="alternate" hreflang={other.data.lang} href={getRelativeLocaleUrl(other.data.astroLocale, …)} />)
 */
export function alternates<E extends LocalizedEntry>(entry: E, entries: readonly E[]): E[] {
  return entries.filter((other) => other.data.id === entry.data.id && other.data.locale !== entry.data.locale);
}
