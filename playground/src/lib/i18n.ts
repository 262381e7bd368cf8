/**
 * The site's locales and interface strings. Content comes in the repository's locales; these are
 * only the words around it.
 */

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
  localeNames: { en_US: 'English', de_DE: 'German', de_CH: 'Swiss German' } as Record<string, string>,
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
  localeNames: { en_US: 'Englisch', de_DE: 'Hochdeutsch', de_CH: 'Schweizerdeutsch' },
  shownIn: (name) => `auf ${name} angezeigt`,
  footer: 'Beim Build aus der Comfortable Read API erzeugt.',
};

export const ui: Record<string, Strings> = {
  en_US: en,
  de_DE: de,
  de_CH: {
    ...de,
    lang: 'de-CH',
    label: 'Deutsch (Schweiz)',
    basedNear: 'Wohnt in der Nähe von',
    tagged: (tag) => `Geschichten mit dem Schlagwort «${tag}»`,
  },
};

export const locales = Object.keys(ui);
export const defaultLocale = 'en_US';

/** The strings of a locale (the default locale's for any other). */
export const t = (locale: string): Strings => ui[locale] ?? en;

/** `getStaticPaths` for pages that exist once per locale. */

export function formatDate(value: string | null | undefined, locale: string): string {
  if (!value) return '';
  return new Intl.DateTimeFormat(t(locale).lang, { dateStyle: 'long', timeZone: 'UTC' }).format(new Date(value));
}
