import { z } from 'zod';
import { localeKeyPattern } from './locales.ts';
import { isObject, nonEmpty, stringList, wholeNumber } from './schemas.ts';

/**
 * The repository snapshot format of `spec/read-api.md` §1, as zod schemas.
 * Structure is checked by `snapshotSchema`; field values are checked per content type by
 * `recordFieldsSchema`, and the cross-references (ids, locales, aliases) by `parseSnapshot`
 * (snapshot.ts). The server serves this format and `pull` writes it.
 */

/** The field types of the Read API: a snapshot's content types declare them, the sync reads them from values. */

export const fieldTypes = [
  'text',
  'richtext',
  'markdown',
  'number',
  'date',
  'boolean',
  'location',
  'select',
  'color',
  'relation',
  'asset',
  'json',
] as const;
export type FieldType = (typeof fieldTypes)[number];
/** The field types whose values may be localized. */
export const localizableTypes: ReadonlySet<FieldType> = new Set([
  'text',
  'richtext',
  'markdown',
  'number',
  'select',
  'asset',
]);
/** An API id (of a content type, a field, a section, a collection…). */
export const apiIdPattern = /^[A-Za-z0-9_-]{1,100}$/;
/**
 * What reads as a date: an ISO 8601 date, or date and time with an optional offset, to the
 * nanosecond (`2024-01-31`, `2024-01-31T12:00`, `2024-01-31T12:00:00.123+02:00`). The model
 * reads a value of this form as a date, and the server takes it as a date filter's value.
 */
export const isoDatePattern = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
/** A colour field's value: `#rrggbb`. The model reads a string of this form as a colour. */
export const colorPattern = /^#[0-9a-fA-F]{6}$/;
/** A record's `createdAt` and `updatedAt` (spec §1): UTC, with seconds and at most milliseconds. */
export const timestampPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
/** A date field's value in a snapshot: a date, or a date and time in UTC (`Z`, no other offset). */
export const isUtcDate = (value: string): boolean =>
  isoDatePattern.test(value) && (value.length === 10 || value.endsWith('Z'));

const apiId = z.string().regex(apiIdPattern, 'must be 1-100 letters, digits, "_" or "-"');
const documentId = z.string().regex(/^\d{1,20}$/, 'must be a string of 1-20 digits');
const localeKey = z
  .string()
  .regex(new RegExp(localeKeyPattern.source, 'i'), 'must be a language key such as en_US or de');
/** A date or timestamp of the right form that is also a real date (not February 30th). */
const realDate = (form: z.ZodString) => form.refine((value) => !Number.isNaN(Date.parse(value)), 'is not a real date');
const timestamp = realDate(
  z.string().regex(timestampPattern, 'must be an ISO 8601 UTC timestamp such as 2024-01-31T12:00:00.000Z'),
);
const date = realDate(z.string().refine(isUtcDate, 'must be an ISO 8601 UTC date or timestamp'));

const fieldSchema = z.strictObject({
  apiId,
  type: z.enum(fieldTypes),
  localized: z.boolean().optional(),
  /** The API id of the section the field stands in: documents hold it under `fields.<section>.<apiId>`. */
  section: apiId.optional(),
});

const contentTypeSchema = z.strictObject({
  apiId,
  name: z.string().optional(),
  fields: z.array(fieldSchema),
});

const metaSchema = z.strictObject({
  id: documentId,
  contentType: nonEmpty,
  repository: z.string().optional(),
  revision: wholeNumber,
  tags: stringList,
  createdAt: timestamp,
  updatedAt: timestamp,
});

/**
 * A plain object; its values are checked per content type by `recordFieldsSchema` (a record schema
 * here would cost a copy of every record).
 */
const fieldsObject = z.custom<Record<string, unknown>>(isObject, 'expected an object of fields');

const recordSchema = z.strictObject({
  fields: fieldsObject,
  meta: metaSchema,
});

/** An asset's `file`: the keys the format knows of it. */
export const fileSchema = z.strictObject({
  url: nonEmpty,
  fileName: nonEmpty,
  mimeType: nonEmpty,
  size: wholeNumber,
  width: z.number().int().positive().optional(),
  height: z.number().int().positive().optional(),
});

const collectionSchema = z.strictObject({
  apiId,
  name: z.string().optional(),
  contentType: apiId.optional(),
  filters: z.array(z.record(z.string(), z.unknown())).optional(),
  includeTags: stringList.optional(),
  excludeTags: stringList.optional(),
  sorting: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
  /** The collection's documents by id, in their order; ids of no document in the snapshot are no members. */
  members: z.array(documentId).optional(),
});

export const snapshotSchema = z.strictObject({
  repository: z.strictObject({
    id: documentId,
    apiId,
    name: z.string(),
    defaultLocale: localeKey,
    locales: z.array(z.strictObject({ key: localeKey, fallback: localeKey.optional() })).min(1),
    apiKeys: z.array(nonEmpty).min(1),
  }),
  contentTypes: z.array(contentTypeSchema),
  documents: z.array(recordSchema),
  assets: z.array(recordSchema).default([]),
  collections: z.array(collectionSchema).default([]),
  aliases: z.array(z.strictObject({ apiId, document: documentId })).default([]),
});

export type Snapshot = z.infer<typeof snapshotSchema>;
export type SnapshotRecord = z.infer<typeof recordSchema>;
export type ContentTypeDefinition = z.infer<typeof contentTypeSchema>;
export type FieldDefinition = z.infer<typeof fieldSchema>;
export type CollectionDefinition = z.infer<typeof collectionSchema>;

const reference = (contentType?: string) =>
  z.strictObject({
    meta: z.strictObject({ id: documentId, contentType: contentType ? z.literal(contentType) : nonEmpty }),
  });

const valueSchemas: Record<FieldType, z.ZodType> = {
  text: z.string(),
  markdown: z.string(),
  color: z.string().regex(colorPattern, 'must be a colour such as #1a2b3c'),
  richtext: z.strictObject({ html: z.string(), plain: z.string() }),
  number: z.number(),
  date,
  boolean: z.boolean(),
  location: z.strictObject({ lat: z.number().min(-90).max(90), lng: z.number().min(-180).max(180) }),
  select: z.union([z.string(), stringList]),
  relation: z.union([reference(), z.array(reference())]),
  asset: z.array(reference('_asset')),
  json: z.unknown(),
};

/**
 * Where a content type's fields stand in a document: a field at the top of `fields`, or a
 * section (its API id) holding its fields, each in the order it first appears in the definition.
 */
type Slot = { field: FieldDefinition; section?: undefined } | { section: string; fields: FieldDefinition[] };

export function slotsOf(type: ContentTypeDefinition): Slot[] {
  const slots: Slot[] = [];
  const sections = new Map<string, FieldDefinition[]>();
  for (const field of type.fields) {
    if (field.section === undefined) {
      slots.push({ field });
      continue;
    }
    let fields = sections.get(field.section);
    if (!fields) {
      sections.set(field.section, (fields = []));
      slots.push({ section: field.section, fields });
    }
    fields.push(field);
  }
  return slots;
}

/**
 * A field's value in a record's fields (or a view of them, as the server answers them): under its
 * section's key when it stands in one; own keys only.
 */
export function valueIn(fields: Record<string, unknown>, field: FieldDefinition): unknown {
  const holder =
    field.section === undefined ? fields : Object.hasOwn(fields, field.section) ? fields[field.section] : undefined;
  // Own keys only: a field named constructor is not Object's.
  return isObject(holder) && Object.hasOwn(holder, field.apiId) ? holder[field.apiId] : undefined;
}

/** The asset record's fields, as if `_asset` were a content type. */
export const assetContentType: ContentTypeDefinition = {
  apiId: '_asset',
  fields: [
    { apiId: 'title', type: 'text', localized: true },
    { apiId: 'description', type: 'text', localized: true },
    { apiId: 'file', type: 'json' },
  ],
};

export function recordFieldsSchema(type: ContentTypeDefinition, locales: string[]): z.ZodType {
  const schemaOf = (field: FieldDefinition) => {
    const value = type.apiId === '_asset' && field.apiId === 'file' ? fileSchema : valueSchemas[field.type];
    // A localized value: an object of the repository's locales (an object schema checks one several times faster than a
    // record of an enum).
    const byLocale = () =>
      z.strictObject(Object.fromEntries(locales.map((locale) => [locale, value.nullable().optional()])));
    return (field.localized ? byLocale() : value).nullable().optional();
  };
  const shape: Record<string, z.ZodType> = {};
  for (const slot of slotsOf(type)) {
    if (slot.section === undefined) shape[slot.field.apiId] = schemaOf(slot.field);
    else
      shape[slot.section] = z
        .strictObject(Object.fromEntries(slot.fields.map((field) => [field.apiId, schemaOf(field)])))
        .nullable()
        .optional();
  }
  return z.strictObject(shape);
}
