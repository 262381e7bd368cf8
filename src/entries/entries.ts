import { z } from 'zod';
import type { CacheReader } from '../cache/index.ts';
import { type Locales, localizeRecord } from '../model/locales.ts';
import { type Model, referenceList, type StoredRecord, type TypeModel } from '../model/records.ts';
import { isStoredReference } from '../model/shapes.ts';
import { fallbackChains } from '../wire/locales.ts';
import { isObject, stringList } from '../wire/schemas.ts';

/**
 * Entries: a record as pages use it, in one locale. Fallback is applied and marked, relations
 * are references `{ id, contentType }`, and assets are image objects. The zod schemas are
 * exported so users get the types with `z.infer`.
 */

const entryReferenceSchema = z.object({ id: z.string(), contentType: z.string() });
export type EntryReference = z.infer<typeof entryReferenceSchema>;

const richtextSchema = z.object({ html: z.string(), plain: z.string() });
const locationSchema = z.object({ lat: z.number(), lng: z.number() });

/**
 * An asset whose file has a width and a height: what `astro:assets` `<Image>` needs for a remote
 * `src`. Assets are told apart by `kind`: `image`, `file` (no size known: a PDF, an SVG without
 * one) or `unresolved` (the asset was not synced: dangling, or beyond the includes).
 */
const imageSchema = z.object({
  kind: z.literal('image'),
  id: z.string(),
  src: z.string(),
  width: z.number(),
  height: z.number(),
  alt: z.string(),
  mimeType: z.string().optional(),
  fileName: z.string().optional(),
});
export type Image = z.infer<typeof imageSchema>;

/** An asset whose file has no known size. */
const assetFileSchema = imageSchema.omit({ width: true, height: true }).extend({ kind: z.literal('file') });
export type AssetFile = z.infer<typeof assetFileSchema>;

/** An asset that was not synced: its id, as the document refers to it. */
const unresolvedAssetSchema = z.object({
  kind: z.literal('unresolved'),
  id: z.string(),
  contentType: z.string(),
});
export type UnresolvedAsset = z.infer<typeof unresolvedAssetSchema>;

/** A value of an asset field: narrow it on `kind` (`images.find((asset) => asset.kind === 'image')`). */
export const assetSchema = z.discriminatedUnion('kind', [imageSchema, assetFileSchema, unresolvedAssetSchema]);
export type Asset = z.infer<typeof assetSchema>;

/**
 * The zod schemas of an entry's field values, for `z.infer` or your own schemas:
 * `fieldSchemas.image`, `.asset` (an image, a file or an unresolved asset), `.assetFile`,
 * `.unresolvedAsset`, `.reference`, `.richtext` and `.location`.
 */
export const fieldSchemas = {
  image: imageSchema,
  asset: assetSchema,
  assetFile: assetFileSchema,
  unresolvedAsset: unresolvedAssetSchema,
  reference: entryReferenceSchema,
  richtext: richtextSchema,
  location: locationSchema,
};

/** Schemas of the field values of each kind but relations and sections, for building entry schemas. */
const valueSchemas: Record<string, z.ZodType> = {
  text: z.string(),
  color: z.string(),
  date: z.string(),
  richtext: richtextSchema,
  number: z.number(),
  boolean: z.boolean(),
  location: locationSchema,
  asset: z.array(assetSchema),
};

/**
 * How a relation field is typed, by its path (`seo.author` inside a section): an entry's `{ id,
 * contentType }` by default.
 */
export type RelationSchema = (path: string) => z.ZodType;

/** Section schemas, so the `types` command prints them one field a line. */
export const sectionSchemas = new WeakSet<z.ZodType>();

/**
 * The fields of one content type, from what the data shows of them; every field may be null or
 * missing, so an emptied field never breaks a build. A section is an object of its fields, typed
 * alike; a relation is typed by `relation`.
 */
export function fieldsSchema(
  model: Model,
  contentType: string,
  relation: RelationSchema = () => entryReferenceSchema,
): z.ZodObject {
  const sectionOf = (fields: TypeModel, prefix: string): z.ZodObject => {
    const shape: Record<string, z.ZodType> = {};
    for (const [name, field] of Object.entries(fields)) {
      const path = prefix + name;
      let schema: z.ZodType;
      if (field.kind === 'section') sectionSchemas.add((schema = sectionOf(field.fields ?? {}, `${path}.`)));
      else if (field.kind === 'select' || field.kind === 'relation') {
        const one = field.kind === 'select' ? z.string() : relation(path);
        schema = field.multiple ? z.array(one) : one;
      } else schema = valueSchemas[field.kind ?? 'json'] ?? z.unknown();
      shape[name] = schema.nullable().optional();
    }
    return z.object(shape);
  };
  return sectionOf(model[contentType] ?? {}, '');
}

export const entryMetaSchema = z.object({
  revision: z.number(),
  tags: stringList,
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** An entry with loosely typed fields; `entrySchemaFor` builds a precise one from the model. */
const looseEntrySchema = z.object({
  /** The document id. */
  id: z.string(),
  locale: z.string(),
  contentType: z.string(),
  meta: entryMetaSchema,
  fields: z.record(z.string(), z.unknown()),
  /** Localized fields whose value is not this locale's own → the locale it came from (null: no locale has one). */
  fallbacks: z.record(z.string(), z.string().nullable()),
});
export type Entry = z.infer<typeof looseEntrySchema>;
/** An entry of a `virtual:comfortable/...` module: with the `cacheKey` of a page that shows it (see `pageKey`). */
export type VirtualEntry = Entry & { cacheKey: string };

/** An entry schema for one content type, from what the data shows of its fields. */
export function entrySchemaFor(model: Model, contentType: string) {
  return looseEntrySchema.extend({ contentType: z.literal(contentType), fields: fieldsSchema(model, contentType) });
}

/**
 * An entry's fields with each relation (a field the model knows as one, inside sections too)
 * replaced by what `convert` makes of each reference in it; `field` is its path (`seo.author`).
 */
export function mapRelations(
  fields: Record<string, unknown>,
  typeModel: TypeModel | undefined,
  convert: (ref: EntryReference, field: string) => unknown,
): Record<string, unknown> {
  const map = (
    values: Record<string, unknown>,
    models: TypeModel | undefined,
    prefix: string,
  ): Record<string, unknown> => {
    const out: Record<string, unknown> = { ...values };
    for (const [name, value] of Object.entries(out)) {
      const model = models?.[name];
      if (value === null || value === undefined) continue;
      if (model?.kind === 'section' && isObject(value)) out[name] = map(value, model.fields, `${prefix}${name}.`);
      if (model?.kind !== 'relation') continue;
      const each = (ref: unknown) => (isStoredReference(ref) ? convert(ref, prefix + name) : ref);
      out[name] = Array.isArray(value) ? value.map(each) : each(value);
    }
    return out;
  };
  return map(fields, typeModel, '');
}

/**
 * A value with each list of asset references in it (inside sections too) made assets; a new object only where one
 * changed.
 */
function withAssets(value: unknown, asset: (ref: EntryReference) => Asset): unknown {
  if (Array.isArray(value))
    return value.length > 0 && value.every((v) => isStoredReference(v) && v.contentType === '_asset')
      ? value.map(asset)
      : value;
  if (!isObject(value) || isStoredReference(value)) return value;
  let out: Record<string, unknown> | undefined;
  for (const [name, inner] of Object.entries(value)) {
    const made = withAssets(inner, asset);
    if (made !== inner) (out ??= { ...value })[name] = made;
  }
  return out ?? value;
}

/**
 * Turns a record's fields in one locale into entry fields: asset references become images.
 * Given the model (the cache head's), every localized field of the content type that no locale
 * of the record has is marked `null` in `fallbacks`, as `entriesOf` does.
 *
 * @example entryOf(cache.record('1001')!, 'de_CH', cache.head.locales, (id) => cache.record(id), cache.head.model)
 */
export function entryOf(
  record: StoredRecord,
  locale: string,
  locales: Locales,
  assets: (id: string) => StoredRecord | undefined,
  model?: Model,
): Entry {
  const chain = fallbackChains(locales).get(locale) ?? [locale, locales.defaultLocale];
  const { fields, fallbacks } = localizeRecord(record, chain, model?.[record.contentType]);
  const asset = (ref: EntryReference): Asset => {
    const stored = assets(ref.id);
    // dangling, or beyond the includes
    if (!stored) return { kind: 'unresolved', id: ref.id, contentType: ref.contentType };
    const { fields: assetFields } = localizeRecord(stored, chain);
    const file = (assetFields.file ?? {}) as {
      url?: string;
      width?: number;
      height?: number;
      mimeType?: string;
      fileName?: string;
    };
    const about = {
      alt: (assetFields.description || assetFields.title || '') as string,
      ...(file.mimeType ? { mimeType: file.mimeType } : {}),
      ...(file.fileName ? { fileName: file.fileName } : {}),
    };
    const { width, height } = file;
    if (typeof width === 'number' && typeof height === 'number' && width > 0 && height > 0)
      return { kind: 'image', id: stored.id, src: file.url ?? '', width, height, ...about };
    return { kind: 'file', id: stored.id, src: file.url ?? '', ...about };
  };
  for (const [name, value] of Object.entries(fields)) fields[name] = withAssets(value, asset);
  return {
    id: record.id,
    locale,
    contentType: record.contentType,
    meta: { revision: record.revision, tags: record.tags, createdAt: record.createdAt, updatedAt: record.updatedAt },
    fields,
    fallbacks,
  };
}

/**
 * The entries of some documents in every locale (or those given), read from the cache in one batch with the assets they
 * embed.
 */
export function entriesOf(
  cache: CacheReader,
  ids: Iterable<string>,
  locales: Locales,
  localeKeys = locales.locales.map((l) => l.key),
): Entry[] {
  const wanted = [...ids];
  const records = cache.records(wanted);
  const assets = cache.records(
    [...records.values()].flatMap((record) =>
      referenceList(record)
        .filter((ref) => ref.asset)
        .map((ref) => ref.id),
    ),
  );
  const { model } = cache.head;
  const out: Entry[] = [];
  for (const id of wanted) {
    const record = records.get(id);
    if (!record || record.contentType === '_asset') continue;
    for (const locale of localeKeys)
      out.push(entryOf(record, locale, locales, (assetId) => assets.get(assetId), model));
  }
  return out;
}
