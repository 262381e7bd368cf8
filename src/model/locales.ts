import { localeKeyPattern, localeWithValue } from '../wire/locales.ts';
import { isObject, type RepositoryAnswer } from '../wire/schemas.ts';
import type { FieldModel, StoredRecord, TypeModel } from './records.ts';
import { isSection, sectionsOf } from './sections.ts';
import { isEmpty, isLocaleMap, type LocaleKeys } from './shapes.ts';

/**
 * Locales. They come from the repository endpoint; when a server does not list them, from the
 * locale keys seen in the data (no fallbacks, the most common key as default). Their fallback
 * chains are the server's too: `fallbackChains` in wire/locales.ts.
 */

export interface Locales {
  defaultLocale: string;
  locales: { key: string; fallback?: string }[];
  /** Where they came from. */
  source: 'repository' | 'data' | 'config';
}

/**
 * The locales a repository lists (`meta.locales`, `meta.defaultLocale` of its answer); undefined when it lists none.
 */
export function repositoryLocales(
  meta: Pick<RepositoryAnswer['meta'], 'defaultLocale' | 'locales'>,
): Locales | undefined {
  if (!meta.defaultLocale || !meta.locales?.length) return undefined;
  return {
    defaultLocale: meta.defaultLocale,
    locales: meta.locales.map((l) => (l.fallback ? { key: l.key, fallback: l.fallback } : { key: l.key })),
    source: 'repository',
  };
}

/** A key of the form of a locale key (`localeKeyPattern`): what is taken for one while a server lists none. */
export const localeShaped: LocaleKeys = { has: (key) => localeKeyPattern.test(key) };

/**
 * Counts the keys of each map of locales in a record's fields, inside sections too: the locales
 * of a repository whose server lists none, read from a record before it is normalised.
 */
export function countLocales(fields: Record<string, unknown>, counts: Map<string, number>): void {
  for (const value of Object.values(fields)) {
    if (isLocaleMap(value, localeShaped))
      for (const key of Object.keys(value)) counts.set(key, (counts.get(key) ?? 0) + 1);
    else if (isSection(value, localeShaped)) countLocales(value, counts);
  }
}

/**
 * Locales from the keys `countLocales` saw, the most often seen first (after any `known`), and
 * no fallbacks. The default is the known one, else the first key; it is always one of the
 * locales, so that every document has an entry even when no value was localized.
 */
export function guessLocales(
  counts: ReadonlyMap<string, number>,
  known: { defaultLocale?: string | undefined; keys?: readonly string[] | undefined } = {},
): Locales {
  const seen = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([key]) => key);
  const keys = [...(known.keys ?? []), ...seen];
  const defaultLocale = known.defaultLocale ?? keys[0] ?? 'en_US';
  return { defaultLocale, locales: [...new Set([defaultLocale, ...keys])].map((key) => ({ key })), source: 'data' };
}

/** The warning of a guess, `doing` saying what is done with the keys. */
export const guessedLocalesWarning = (locales: Locales, doing: string): string =>
  `The server did not list the repository's locales; ${doing} the locale keys seen in the data ` +
  `(${locales.locales.map((l) => l.key).join(', ')}), default ${locales.defaultLocale}, without fallbacks`;

export interface LocalizedFields {
  /** Field values in the locale, fallback applied (`null` where no locale of the chain has one). */
  fields: Record<string, unknown>;
  /**
   * Localized fields whose value is not the record's own in this locale → the locale it came
   * from, or null when none has one (a localized field of the model the record lacks included).
   * A field inside a section is named by its path: `fallbacks['seo.title']`.
   */
  fallbacks: Record<string, string | null>;
}

/**
 * A record's fields as seen in one locale. `fields` is what the model knows of the record's
 * content type: with it, a localized field that no locale of the record has (absent, `null` or
 * `{}` on the wire) is marked `null` in `fallbacks` too; without it, only the fields the record
 * holds are. Sections are seen field by field: a section is a new object only where it holds a
 * localized field (or the model knows it as a section), else the record's own.
 */
export function localizeRecord(record: StoredRecord, chain: readonly string[], fields?: TypeModel): LocalizedFields {
  const fallbacks: Record<string, string | null> = {};
  const { localized } = record;
  // The sections (by path) that hold a localized field: only these are made again per locale.
  const holders = localized.some((path) => path.includes('.')) ? sectionsOf(localized) : undefined;
  const absent = (field: FieldModel, path: string): void => {
    if (field.localized) fallbacks[path] = null;
    else if (field.kind === 'section')
      for (const [name, inner] of Object.entries(field.fields ?? {})) absent(inner, `${path}.${name}`);
  };
  const see = (
    values: Record<string, unknown>,
    models: TypeModel | undefined,
    prefix: string,
  ): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(values)) {
      const path = prefix === '' ? name : prefix + name;
      const model = models?.[name];
      if (localized.includes(path)) {
        const own = value as Record<string, unknown>;
        const from = localeWithValue(own, chain);
        out[name] = from === undefined ? null : own[from];
        if (from !== chain[0]) fallbacks[path] = from ?? null;
      } else if (model?.localized && isEmpty(value)) {
        // A localized field answered `null`, or `{}` before the model knew it was localized.
        out[name] = null;
        fallbacks[path] = null;
      } else if (model?.kind === 'section' || holders?.has(path)) {
        if (isObject(value)) out[name] = see(value, model?.fields, `${path}.`);
        else {
          out[name] = value;
          if (model) absent(model, path);
        }
      } else {
        out[name] = value;
      }
    }
    for (const [name, field] of Object.entries(models ?? {})) {
      if (!(name in values)) absent(field, prefix + name);
    }
    return out;
  };
  return { fields: see(record.fields, fields, ''), fallbacks };
}
