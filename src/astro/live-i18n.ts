import type { Locales } from '../model/locales.ts';
import { type AstroI18n, LocaleMap } from './i18n.ts';

/**
 * Astro's `i18n` for live collections: the loader runs in the site's server, where the
 * integration's registry is not, so it reads the config Astro serves to server code
 * (`astro:config/server`) and maps the repository's locales by the rule of i18n.ts, with its own
 * `astroLocales` option.
 */

/** The site's `i18n`, once per server; undefined without one, or outside Astro's server (a unit test). */
let siteI18n: Promise<AstroI18n | undefined> | undefined;
const readSiteI18n = () =>
  (siteI18n ??= import('astro:config/server').then(
    (config) => ((config as { i18n?: unknown }).i18n ?? undefined) as AstroI18n | undefined,
    () => undefined,
  ));

/** A live loader's locales in Astro's terms: the map of its repository's locales, and the way back. */
export interface LiveLocaleMap {
  /** Each repository locale → its Astro locale, or false for one left out. */
  map: ReadonlyMap<string, string | false>;
  /** The repository locale a filter's locale stands for: itself, or the one an Astro locale maps from. */
  cmsLocale(given: string): string;
}

/**
 * For a loader: its repository's locales mapped onto the site's `i18n`, by the rule of i18n.ts:
 * a locale its `locales` option names (`asked`) that maps to nothing is a ConfigError; any other
 * is left out, said once on the server's console, so that a locale added in the CMS never fails
 * the site's pages. Undefined without `i18n`.
 */
export function liveLocaleMap(
  astroLocales: Record<string, string | false> | undefined,
): (locales: Locales, asked: readonly string[] | undefined, collection: string) => Promise<LiveLocaleMap | undefined> {
  let made: LocaleMap | undefined;
  return async (locales, asked, collection) => {
    const i18n = await readSiteI18n();
    if (!i18n) return undefined;
    made ??= new LocaleMap(i18n, astroLocales, 'comfortableLiveLoader()');
    const keys = locales.locales.map((locale) => locale.key);
    const map = made.resolve(locales, asked, collection, (message) => console.warn(`[comfortable] ${message}`));
    return {
      map,
      cmsLocale: (given) => (keys.includes(given) ? given : (made!.cmsLocaleOf(map, given) ?? given)),
    };
  };
}
