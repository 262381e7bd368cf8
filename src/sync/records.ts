import { digestOfJson, type Reference } from '../cache/records.ts';
import type { ApiRecord } from '../wire/schemas.ts';

/**
 * Normalised records: one per document or asset, deduplicated by id, with references reduced
 * to `{ id, contentType }` and embedded records (assets under embedAssets) split out. A
 * localized field keeps only the document's own values, keyed by locale; fallback is applied
 * when an entry is read (see `locales.ts`).
 */

export interface Ref {
  id: string;
  contentType: string;
}

export interface StoredRecord {
  id: string;
  contentType: string;
  revision: number;
  tags: string[];
  createdAt: string;
  updatedAt: string;
  /** Field name → value; a localized field holds `{ [locale]: value }` of its own values. */
  fields: Record<string, unknown>;
  /** Names of the localized fields, in field order. */
  localized: string[];
}

export type FieldKind =
  | 'text' | 'richtext' | 'number' | 'date' | 'boolean' | 'location' | 'select' | 'color' | 'relation' | 'asset' | 'json';

/** What the data shows of a content type's fields: kind, and whether localized. */
export type Model = Record<string, Record<string, { kind?: FieldKind; localized: boolean; multiple?: boolean }>>;

export const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** `{ meta: { id, contentType } }`, optionally with `fields` (an embedded record). */
export function isApiReference(value: unknown): value is { meta: Ref; fields?: Record<string, unknown> } {
  return isObject(value) && isObject(value.meta) && typeof value.meta.id === 'string' && typeof value.meta.contentType === 'string';
}

const isoDate = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The kind a value shows; `undefined` for null and empty values, which show nothing. */
export function kindOfValue(value: unknown): FieldKind | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'string') return isoDate.test(value) ? 'date' : /^#[0-9a-fA-F]{6}$/.test(value) ? 'color' : 'text';
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    if (value.every(isApiReference)) return value.every((v) => v.meta.contentType === '_asset') ? 'asset' : 'relation';
    if (value.every((v) => typeof v === 'string')) return 'select';
    return 'json';
  }
  if (isApiReference(value)) return value.meta.contentType === '_asset' ? 'asset' : 'relation';
  if (!isObject(value)) return 'json';
  if (typeof value.html === 'string' && typeof value.plain === 'string' && Object.keys(value).length === 2) return 'richtext';
  if (typeof value.lat === 'number' && typeof value.lng === 'number' && Object.keys(value).length === 2) return 'location';
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

/** A localized value under `locale=all`: an object whose keys are all locale keys of the repository. */
export function isLocaleMap(value: unknown, locales: { has(key: string): boolean }): value is Record<string, unknown> {
  // A location's `lat` and `lng` look like locale keys when the locales are guessed from the data.
  if (!isObject(value) || isApiReference(value) || kindOfValue(value) === 'location') return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => locales.has(key));
}

/**
 * Normalises a document or asset as answered with `locale=all`. Embedded records found in its
 * fields are handed to `embedded` and replaced by references.
 */
export function normalizeRecord(
  answer: ApiRecord,
  locales: { has(key: string): boolean },
  model: Model,
  embedded: (record: ApiRecord) => void,
): StoredRecord {
  const { id, contentType } = answer.meta;
  const typeModel = (model[contentType] ??= {});
  const fields: Record<string, unknown> = {};
  const localized: string[] = [];
  const normalizeValue = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(normalizeValue);
    if (isApiReference(value)) {
      if (value.fields) embedded(value as ApiRecord);
      return { id: value.meta.id, contentType: value.meta.contentType };
    }
    return value;
  };
  for (const [name, value] of Object.entries(answer.fields)) {
    const field = (typeModel[name] ??= { localized: false });
    // An empty `{}` is a localized field without any value when the field is known to be localized.
    const isLocalized = isLocaleMap(value, locales) || (field.localized && isObject(value) && Object.keys(value).length === 0);
    if (isLocalized) {
      field.localized = true;
      localized.push(name);
      const own: Record<string, unknown> = {};
      for (const [locale, v] of Object.entries(value as Record<string, unknown>)) {
        if (v === null || v === undefined) continue;
        field.kind = mergeKinds(field.kind, kindOfValue(v));
        if (Array.isArray(v) && field.kind === 'select') field.multiple = true;
        own[locale] = normalizeValue(v);
      }
      fields[name] = own;
    } else {
      field.kind = mergeKinds(field.kind, kindOfValue(value));
      if (Array.isArray(value) && field.kind === 'select') field.multiple = true;
      if (field.kind === 'relation' && Array.isArray(value)) field.multiple = true;
      fields[name] = normalizeValue(value ?? null);
    }
  }
  return {
    id,
    contentType,
    revision: answer.meta.revision ?? 0,
    tags: answer.meta.tags ?? [],
    createdAt: answer.meta.createdAt ?? '',
    updatedAt: answer.meta.updatedAt ?? '',
    fields,
    localized,
  };
}

/** The records embedded in an answered record's fields (assets under embedAssets), where `normalizeRecord` finds them. */
export function embeddedIn(answer: ApiRecord, locales: { has(key: string): boolean }): ApiRecord[] {
  const found: ApiRecord[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (isApiReference(value) && value.fields) found.push(value as ApiRecord);
  };
  for (const value of Object.values(answer.fields)) {
    if (isLocaleMap(value, locales)) Object.values(value).forEach(visit);
    else visit(value);
  }
  return found;
}

/** A record's references, by field name (every locale's, in order, each id once). */
export function referencesOf(record: StoredRecord): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const ref of referenceList(record)) (out[ref.field] ??= []).push(ref.id);
  return out;
}

/**
 * A record's references in field order (every locale's, each id once per field), each marked
 * as an asset or not by the content type the reference names.
 */
export function referenceList(record: StoredRecord): Reference[] {
  const out: Reference[] = [];
  let field = '';
  let first = 0; // where this field's references begin in `out`, to keep each id once per field
  const collect = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const v of value) collect(v);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const ref = value as { id?: unknown; contentType?: unknown };
    if (typeof ref.id !== 'string' || typeof ref.contentType !== 'string' || Object.keys(value).length !== 2) return;
    for (let i = first; i < out.length; i++) if (out[i]!.id === ref.id) return;
    out.push({ field, id: ref.id, asset: ref.contentType === '_asset' });
  };
  for (const name in record.fields) {
    const value = record.fields[name];
    if (value === null || typeof value !== 'object') continue;
    field = name;
    first = out.length;
    if (record.localized.includes(name)) for (const v of Object.values(value as Record<string, unknown>)) collect(v);
    else collect(value);
  }
  return out;
}

/** A digest of a record's content: equal digests mean equal records. `json` is the record's JSON when the caller has it. */
export function digestOf(record: StoredRecord, json = JSON.stringify(record)): string {
  return digestOfJson(json);
}

/** Merges a masked answer into the previous version of a record: fields the mask left out are kept. */
export function mergePartial(previous: StoredRecord | undefined, next: StoredRecord): StoredRecord {
  if (!previous) return next;
  const fields = { ...previous.fields, ...next.fields };
  const localized = Object.keys(fields).filter((name) => (name in next.fields ? next.localized : previous.localized).includes(name));
  return { ...next, fields, localized };
}
