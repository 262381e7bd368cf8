import { isApiReference, isObject } from '../wire/schemas.ts';
import { colorPattern, type FieldType, isoDatePattern } from '../wire/snapshot-format.ts';

/**
 * What a value of the Read API shows by its shape alone: a reference, a map of locales, the
 * kind of a field value. The sync (`records.ts`, `sections.ts`) and `pull` read values by these.
 */

/** A reference as a stored record (and so an entry) holds it: `{ id, contentType }`, nothing else. */
export interface StoredReference {
  id: string;
  contentType: string;
}

export const isStoredReference = (value: unknown): value is StoredReference =>
  isObject(value) &&
  typeof value.id === 'string' &&
  typeof value.contentType === 'string' &&
  Object.keys(value).length === 2;

/**
 * A field type of the API (`fieldTypes` in src/wire/snapshot-format.ts), as a value shows it: a
 * Markdown value is a string like a text's, so no value shows `markdown` (a site names such fields).
 */
export type FieldKind = Exclude<FieldType, 'markdown'>;

/** The kind a value shows; `undefined` for null and empty values, which show nothing. */
export function kindOfValue(value: unknown): FieldKind | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string')
    return isoDatePattern.test(value) ? 'date' : colorPattern.test(value) ? 'color' : 'text';
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    if (value.every(isApiReference)) return value.every((v) => v.meta.contentType === '_asset') ? 'asset' : 'relation';
    if (value.every((v) => typeof v === 'string')) return 'select';
    return 'json';
  }
  if (isApiReference(value)) return value.meta.contentType === '_asset' ? 'asset' : 'relation';
  if (!isObject(value)) return 'json';
  if (typeof value.html === 'string' && typeof value.plain === 'string' && Object.keys(value).length === 2)
    return 'richtext';
  if (typeof value.lat === 'number' && typeof value.lng === 'number' && Object.keys(value).length === 2)
    return 'location';
  return 'json';
}

/** Two sightings of a field's kind → the kind that covers both. */
export function mergeKinds(a: FieldKind | undefined, b: FieldKind | undefined): FieldKind | undefined {
  if (!a || a === b) return b ?? a;
  if (!b) return a;
  const strings = new Set<FieldKind>(['text', 'date', 'color']);
  if (strings.has(a) && strings.has(b)) return 'text';
  if ((a === 'select' && strings.has(b)) || (b === 'select' && strings.has(a))) return 'select';
  return 'json';
}

/** `{}`: no fields, values or locales. */
export const isEmptyObject = (value: unknown): boolean => isObject(value) && Object.keys(value).length === 0;

/** A value that holds nothing: `null`, absent, or `{}`. */
export const isEmpty = (value: unknown): boolean => value === null || value === undefined || isEmptyObject(value);

/** Which keys are locale keys: the repository's, or (while it lists none) those of their form (`localeShaped`). */
export type LocaleKeys = { has(key: string): boolean };

/** A localized value under `locale=all`: an object whose keys are all locale keys of the repository. */
export function isLocaleMap(value: unknown, locales: LocaleKeys): value is Record<string, unknown> {
  // A location's `lat` and `lng` look like locale keys when the locales are guessed from the data.
  if (!isObject(value) || isApiReference(value) || kindOfValue(value) === 'location') return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => locales.has(key));
}
