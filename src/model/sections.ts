import { isApiReference, isObject } from '../wire/schemas.ts';
import { isEmpty, isLocaleMap, kindOfValue, type LocaleKeys } from './shapes.ts';

/**
 * Sections on the wire. A content type may group fields into sections, which the Read API nests
 * under the section's API id (`fields.seo.title`); it does not say which fields are sections, so
 * they are told by their values: an object of fields, which no field value is (not a reference,
 * richtext, a location, nor a map of locales). A JSON field that holds such an object is read
 * the same way: its values stay what they are.
 *
 * Under `locale=all` a localized field inside a section is a map of locales at the field
 * (`fields.seo.title.de_DE`, as the local server answers). A map of locales at the section
 * (`fields.seo.de_DE.title`), which the real service might answer instead, is read too: it is
 * turned field by field into the first shape (see `sectionByField`).
 *
 * Paths name a field inside a section from the top of `fields`, joined with dots (`seo.title`):
 * the stored record's `localized`, an entry's `fallbacks` and a reference's field use them.
 */

/** A section as the Read API answers it: an object of fields, each holding its own value. */
export function isSection(value: unknown, locales: LocaleKeys): value is Record<string, unknown> {
  if (!isObject(value) || isApiReference(value) || isLocaleMap(value, locales)) return false;
  const fields = value as Record<string, unknown>;
  // Richtext or a location with more than its keys is still one, not a section of fields named so
  // (whose map of locales would else be turned into a section).
  if (
    (typeof fields.html === 'string' && typeof fields.plain === 'string') ||
    (typeof fields.lat === 'number' && typeof fields.lng === 'number')
  )
    return false;
  return kindOfValue(fields) === 'json' && Object.keys(fields).length > 0;
}

/**
 * A section answered as a map of locales (`{ de_DE: { title: 'Hallo' }, en_US: { title: 'Hello' } }`)
 * turned into a section of localized fields (`{ title: { de_DE: 'Hallo', en_US: 'Hello' } }`), or
 * undefined when the value is not one: a map of locales whose values are sections (or empty).
 * A field that every locale of the map (two or more) holds with the same value is taken as one
 * that is not localized, which such a map would repeat in each locale: it keeps its plain value.
 * Field values keep the order of their locales; fields, the order they first appear in.
 */
export function sectionByField(value: unknown, locales: LocaleKeys): Record<string, unknown> | undefined {
  if (!isLocaleMap(value, locales)) return undefined;
  let sections = 0;
  for (const inLocale of Object.values(value)) {
    if (isEmpty(inLocale)) continue;
    if (!isSection(inLocale, locales)) return undefined;
    sections++;
  }
  if (sections === 0) return undefined;
  const byField: Record<string, Record<string, unknown>> = {};
  let held = 0;
  for (const [locale, inLocale] of Object.entries(value)) {
    if (!isObject(inLocale)) continue;
    held++;
    for (const [name, fieldValue] of Object.entries(inLocale)) (byField[name] ??= {})[locale] = fieldValue;
  }
  const section: Record<string, unknown> = {};
  for (const [name, byLocale] of Object.entries(byField)) {
    const values = Object.values(byLocale);
    const first = JSON.stringify(values[0]);
    section[name] =
      held > 1 && values.length === held && values.every((v) => JSON.stringify(v) === first) ? values[0] : byLocale;
  }
  return section;
}

/** `seo.title` → `title`: the API id filters, sorting and includes name a field by. */
export const ownName = (path: string): string => path.slice(path.lastIndexOf('.') + 1);

/** The sections that hold the given paths (`seo` for `seo.title`, `a` and `a.b` for `a.b.c`). */
export function sectionsOf(paths: readonly string[]): Set<string> {
  const sections = new Set<string>();
  for (const path of paths) {
    for (let dot = path.indexOf('.'); dot !== -1; dot = path.indexOf('.', dot + 1)) sections.add(path.slice(0, dot));
  }
  return sections;
}

/** The value at a path of fields (`seo.title`), or undefined. */
export function valueAt(fields: Record<string, unknown>, path: string): unknown {
  let value: unknown = fields;
  for (const name of path.split('.')) {
    if (!isObject(value) || !Object.hasOwn(value, name)) return undefined;
    value = value[name];
  }
  return value;
}

/**
 * A field's value in an entry's fields by its own API id, as filters name it: at the top, else in
 * the first section that holds it.
 */
export function valueNamed(fields: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(fields, name)) return fields[name];
  for (const value of Object.values(fields)) if (isObject(value) && Object.hasOwn(value, name)) return value[name];
  return undefined;
}
