/**
 * The site's interface strings, by Astro locale (astro.config.mjs). Content comes in the
 * repository's locales, which the integration maps to these; these are only the words around it.
 */
import { getRelativeLocaleUrl } from 'astro:i18n';
import { i18n } from 'astro:config/client';

const en = {
  lang: 'en-US',
  label: 'English',
  nav: {
    home: 'Home',
    posts: 'Stories',
    categories: 'Categories',
    authors: 'Authors',
    events: 'Events',
    about: 'About',
  },
  languages: 'Language',
  featured: 'Featured',
  latest: 'Latest stories',
  allPosts: 'All stories',
  related: 'Related stories',
  tags: 'Tags',
  topics: 'Topics',
  favourite: 'Favourite story',
  basedNear: 'Based near',
  by: 'by',
  in: 'in',
  untitled: 'Untitled',
  minutes: (n: number) => `${n} min read`,
  stories: (n: number) => (n === 1 ? '1 story' : `${n} stories`),
  tagged: (tag: string) => `Stories tagged “${tag}”`,
  postsBy: (name: string) => `Stories by ${name}`,
  categoriesIntro: 'Every story belongs to one of these.',
  eventsIntro: 'Readings and meetups with the people who write for us.',
  hostedBy: 'hosted by',
  readings: 'Readings',
  shownIn: (name: string) => `shown in ${name}`,
  footer: 'Built from the Comfortable Read API at build time.',
};

type Strings = typeof en;

const de: Strings = {
  ...en,
  lang: 'de-DE',
  label: 'Deutsch',
  nav: {
    home: 'Start',
    posts: 'Geschichten',
    categories: 'Kategorien',
    authors: 'Autorinnen und Autoren',
    events: 'Veranstaltungen',
    about: 'Über uns',
  },
  languages: 'Sprache',
  featured: 'Empfohlen',
  latest: 'Neueste Geschichten',
  allPosts: 'Alle Geschichten',
  related: 'Ähnliche Geschichten',
  tags: 'Schlagwörter',
  topics: 'Themen',
  favourite: 'Lieblingsgeschichte',
  basedNear: 'Lebt in der Nähe von',
  by: 'von',
  in: 'in',
  untitled: 'Ohne Titel',
  minutes: (n) => `${n} Min. Lesezeit`,
  stories: (n) => (n === 1 ? '1 Geschichte' : `${n} Geschichten`),
  tagged: (tag) => `Geschichten mit dem Schlagwort „${tag}“`,
  postsBy: (name) => `Geschichten von ${name}`,
  categoriesIntro: 'Jede Geschichte gehört zu einer davon.',
  eventsIntro: 'Lesungen und Treffen mit den Menschen, die für uns schreiben.',
  hostedBy: 'mit',
  readings: 'Lesungen',
  shownIn: (name) => `auf ${name} angezeigt`,
  footer: 'Beim Build aus der Comfortable Read API erzeugt.',
};

export const ui: Record<string, Strings> = {
  en,
  de,
  'de-CH': {
    ...de,
    lang: 'de-CH',
    label: 'Deutsch (Schweiz)',
    basedNear: 'Wohnt in der Nähe von',
    tagged: (tag) => `Geschichten mit dem Schlagwort «${tag}»`,
  },
};

/** Astro's locales, as `Astro.currentLocale` and `data.astroLocale` name them (`de-CH` for the path `de-ch`). */
export const locales = (i18n?.locales ?? []).map((locale) => (typeof locale === 'string' ? locale : locale.codes[0]!));
export const defaultLocale = i18n?.defaultLocale ?? 'en';

/** A page's URL in a locale, as Astro's routing makes it: `href('de-CH', 'posts/')` is `/de-ch/posts/`. */
export const href = (locale: string, path = ''): string => getRelativeLocaleUrl(locale, path);

/** The strings of a locale (the default locale's for any other). */
export const t = (locale: string | undefined): Strings => (locale && ui[locale]) || en;

export function formatDate(value: string | null | undefined, locale: string): string {
  if (!value) return '';
  return new Intl.DateTimeFormat(t(locale).lang, { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(value));
}
