import { type ApiRecord, isApiReference, isObject } from '../wire/schemas.ts';
import {
  type FieldKind,
  isEmptyObject,
  isLocaleMap,
  isStoredReference,
  kindOfValue,
  type LocaleKeys,
  mergeKinds,
} from './shapes.ts';
import { isSection, sectionByField } from './sections.ts';

/** A reference of a record: the field, the target's id, and whether the target is an asset. */
export interface Reference {
  field: string;
  id: string;
  asset: boolean;
}

/**
 * Normalised records: one per document or asset, deduplicated by id, with references reduced
 * to `{ id, contentType }` and embedded records (assets under embedAssets) split out. A
 * localized field keeps only the document's own values, keyed by locale; fallback is applied
 * when an entry is read (see `locales.ts`).
 */

export interface StoredRecord {
  id: string;
  contentType: string;
  revision: number;
  tags: string[];
  createdAt: string;
  updatedAt: string;
  /**
   * Field name → value; a localized field holds `{ [locale]: value }` of its own values; a section,
   * its fields so.
   */
  fields: Record<string, unknown>;
  /** Paths of the localized fields (`title`, `seo.title` inside the section `seo`), in field order. */
  localized: string[];
}

/** What the data shows of one field: its kind (a section's: the fields in it), whether localized, whether a list. */
export interface FieldModel {
  kind?: FieldKind | 'section';
  localized: boolean;
  multiple?: boolean;
  /** The fields of a section, by their own API ids. */
  fields?: Record<string, FieldModel>;
}

/** What the data shows of one content type's fields, by API id (a section's fields under it). */
export type TypeModel = Record<string, FieldModel>;

/** What the data shows of each content type's fields. */
export type Model = Record<string, TypeModel>;

/** What the model knows of the field at a path (`seo.title`), or undefined. */
export function fieldAt(fields: TypeModel | undefined, path: string): FieldModel | undefined {
  let field: FieldModel | undefined;
  for (const name of path.split('.')) {
    field = fields?.[name];
    fields = field?.fields;
  }
  return field;
}

/**
 * Normalises a document or asset as answered with `locale=all`. Embedded records found in its
 * fields are handed to `embedded` and replaced by references. A section is normalised field by
 * field (its localized fields by locale, its references reduced), whichever shape of
 * `locale=all` it came in (see `sections.ts`): what is stored depends on the values alone.
 */
export function normalizeRecord(
  answer: ApiRecord,
  locales: LocaleKeys,
  model: Model,
  embedded: (record: ApiRecord) => void,
): StoredRecord {
  const { id, contentType } = answer.meta;
  const localized: string[] = [];
  const normalizeValue = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(normalizeValue);
    if (isApiReference(value)) {
      if (value.fields) embedded(value as ApiRecord);
      return { id: value.meta.id, contentType: value.meta.contentType };
    }
    return value;
  };
  const normalizeFields = (
    values: Record<string, unknown>,
    fieldModels: TypeModel,
    prefix: string,
  ): Record<string, unknown> => {
    const fields: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(values)) {
      const field = (fieldModels[name] ??= { localized: false });
      const section = sectionByField(value, locales) ?? (isSection(value, locales) ? value : undefined);
      if (section) {
        seeSection(field);
        // A field the data shows otherwise too is json in the model; its values are still read as a section's.
        fields[name] = normalizeFields(
          section,
          field.kind === 'section' ? (field.fields ??= {}) : {},
          `${prefix}${name}.`,
        );
        continue;
      }
      // An empty `{}` is a localized field without any value when the field is known to be localized.
      const isLocalized = isLocaleMap(value, locales) || (field.localized && isEmptyObject(value));
      if (isLocalized) {
        field.localized = true;
        localized.push(prefix + name);
        const own: Record<string, unknown> = {};
        for (const [locale, v] of Object.entries(value as Record<string, unknown>)) {
          if (v === null || v === undefined) continue;
          see(field, kindOfValue(v));
          if (Array.isArray(v) && field.kind === 'select') field.multiple = true;
          own[locale] = normalizeValue(v);
        }
        fields[name] = own;
      } else {
        // A section without any field ({}) is still a section.
        if (!(field.kind === 'section' && isEmptyObject(value))) see(field, kindOfValue(value));
        if (Array.isArray(value) && field.kind === 'select') field.multiple = true;
        if (field.kind === 'relation' && Array.isArray(value)) field.multiple = true;
        fields[name] = normalizeValue(value ?? null);
      }
    }
    return fields;
  };
  const fields = normalizeFields(answer.fields, (model[contentType] ??= {}), '');
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

/** A sighting of a field's kind: a section and any other kind make json (and no section). */
function see(field: FieldModel, kind: FieldKind | undefined): void {
  if (kind === undefined) return;
  if (field.kind === 'section') {
    field.kind = 'json';
    delete field.fields;
  } else field.kind = mergeKinds(field.kind, kind);
}

function seeSection(field: FieldModel): void {
  if (field.kind === undefined) field.kind = 'section';
  else if (field.kind !== 'section') see(field, 'json');
}

/**
 * The records embedded in an answered record's fields (assets under embedAssets), where `normalizeRecord` finds them.
 */
export function embeddedIn(answer: ApiRecord, locales: LocaleKeys): ApiRecord[] {
  const found: ApiRecord[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (isApiReference(value) && value.fields) found.push(value as ApiRecord);
  };
  const visitFields = (fields: Record<string, unknown>): void => {
    for (const value of Object.values(fields)) {
      const section = sectionByField(value, locales) ?? (isSection(value, locales) ? value : undefined);
      if (section) visitFields(section);
      else if (isLocaleMap(value, locales)) Object.values(value).forEach(visit);
      else visit(value);
    }
  };
  visitFields(answer.fields);
  return found;
}

/**
 * A record's references in field order (every locale's, each id once per field), each marked
 * as an asset or not by the content type the reference names. A reference inside a section
 * names its field by path (`seo.image`).
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
    if (!isStoredReference(value)) return;
    for (let i = first; i < out.length; i++) if (out[i]!.id === value.id) return;
    out.push({ field, id: value.id, asset: value.contentType === '_asset' });
  };
  const { localized } = record;
  const walk = (fields: Record<string, unknown>, prefix: string): void => {
    for (const name in fields) {
      const value = fields[name];
      if (value === null || typeof value !== 'object') continue;
      const path = prefix === '' ? name : prefix + name;
      if (!localized.includes(path) && !Array.isArray(value) && !isStoredReference(value)) {
        // a section (or an object value, whose references are read as a section's)
        walk(value as Record<string, unknown>, `${path}.`);
        continue;
      }
      field = path;
      first = out.length;
      if (localized.includes(path)) for (const v of Object.values(value as Record<string, unknown>)) collect(v);
      else collect(value);
    }
  };
  walk(record.fields, '');
  return out;
}

/**
 * Merges a masked answer into the previous version of a record: fields the mask left out are
 * kept, inside sections too (`fields(seo(title))` leaves the other fields of `seo`).
 */
export function mergePartial(previous: StoredRecord | undefined, next: StoredRecord): StoredRecord {
  if (!previous) return next;
  const localized: string[] = [];
  // The localized paths at or under `path`, of the version its value came from, in that version's order.
  const take = (from: StoredRecord, path: string) => {
    for (const p of from.localized) if (p === path || p.startsWith(`${path}.`)) localized.push(p);
  };
  const isSectionIn = (record: StoredRecord, value: unknown, path: string) =>
    isObject(value) && !isStoredReference(value) && !record.localized.includes(path);
  const merge = (
    before: Record<string, unknown>,
    after: Record<string, unknown>,
    prefix: string,
  ): Record<string, unknown> => {
    const fields = { ...before, ...after };
    for (const name of Object.keys(fields)) {
      const path = prefix + name;
      const inNext = Object.hasOwn(after, name);
      if (
        inNext &&
        Object.hasOwn(before, name) &&
        isSectionIn(previous, before[name], path) &&
        isSectionIn(next, after[name], path)
      ) {
        fields[name] = merge(
          before[name] as Record<string, unknown>,
          after[name] as Record<string, unknown>,
          `${path}.`,
        );
      } else take(inNext ? next : previous, path);
    }
    return fields;
  };
  const fields = merge(previous.fields, next.fields, '');
  return { ...next, fields, localized };
}

/** A record's stamps, as an answer or a listing gives them. */
export interface Stamp {
  id: string;
  updatedAt?: string | undefined;
  revision?: number | undefined;
}
