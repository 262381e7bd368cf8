import { z } from 'zod';
import { stringList } from '../wire/schemas.ts';
import type { CacheReader } from '../cache/index.ts';
import { entryMetaSchema, fieldsSchema as entryFieldsSchema } from '../entries/entries.ts';
import type { Model } from '../model/records.ts';
import { toTypeScript } from '../entries/typescript.ts';

/**
 * Schemas for entries, built from what the data shows of each content type, and the same as
 * TypeScript source (an `Entry` type) for Astro's `createSchema()`.
 */

export const astroReferenceSchema = z.object({ collection: z.string(), id: z.string() });
/**
 * A relation whose target no collection holds (not synced, a content type `contentTypes` does not
 * map, a collection that holds only some of the type): `collection` is null, so a page narrows
 * on it (`author?.collection === 'authors' ? await getEntry('authors', author.id) : undefined`).
 */
export const unresolvedSchema = astroReferenceSchema.extend({ collection: z.null(), contentType: z.string() });
/**
 * A relation whose targets no collection is known to hold (their content types unmapped, or no
 * reference stored yet): `collection` is any string, which `getEntry(reference)` does not take, so
 * a page names the collection it reads (`getEntry('authors', author.id)`), which checks whatever
 * the field's type. Not null alone: `author?.collection === 'authors'` would then not check, and a
 * schema the `types` command wrote must still take the reference a later `contentTypes` makes.
 */
export const relationSchema = z.union([astroReferenceSchema, unresolvedSchema]);

/** How a resolved reference to a collection is written: Astro's own shape by default. */
type ReferenceTo = (collection: string) => z.ZodType;
const referenceObject: ReferenceTo = (collection) => astroReferenceSchema.extend({ collection: z.literal(collection) });

/** A relation to one of some collections: typed with their names, so `getEntry(reference)` knows the entry type. */
function relationTo(collections: string[] | undefined, reference: ReferenceTo): z.ZodType {
  if (!collections?.length) return relationSchema;
  return z.union([...collections.map(reference), unresolvedSchema]);
}

/**
 * The fields of one content type (see `fieldsSchema` of entries): `targets` (relation field, by
 * path inside a section such as `content.teacher` → collections) types relations as references to
 * them, each written by `reference` (the `types` command writes Astro's `reference('<collection>')`).
 */
export function fieldsSchema(
  model: Model,
  contentType: string,
  targets: Record<string, string[]> = {},
  reference: ReferenceTo = referenceObject,
) {
  return entryFieldsSchema(model, contentType, (path) => relationTo(targets[path], reference));
}

/**
 * Relation field (by path inside a section) → the collections its stored references point to, through `collectionOf`
 * (the contentTypes option).
 */
export function referenceTargets(
  cache: CacheReader,
  contentType: string,
  collectionOf: (contentType: string) => string | undefined,
): Record<string, string[]> {
  const targets: Record<string, string[]> = {};
  for (const [field, types] of cache.referenceTargets(contentType)) {
    const collections = [...new Set(types.map(collectionOf).filter((c): c is string => c !== undefined))].sort();
    if (collections.length > 0) targets[field] = collections;
  }
  return targets;
}

/** A Markdown field a loader's `markdown` option renders: `data.markdown.<field>`. */
const renderedMarkdownSchema = z.object({
  html: z.string(),
  headings: z.array(z.object({ depth: z.number(), slug: z.string(), text: z.string() })),
});

/** A field's path → the locale its value came from (null: none has one). */
const fallbacksSchema = z.record(z.string(), z.string().nullable());

/** What an entry holds besides with `i18n` in astro.config (see i18n.ts). */
const i18nShape = { astroLocale: z.string(), lang: z.string(), astroFallbacks: fallbacksSchema };
/** The same, as a schema checks it whatever the site's config: there only with `i18n`. */
const i18nChecked = Object.fromEntries(Object.entries(i18nShape).map(([key, schema]) => [key, schema.optional()]));

/**
 * The entry envelope around a content type's fields; with `i18n` in astro.config, also `astroLocale`,
 * `lang` and `astroFallbacks`.
 * @example defineCollection({ loader: comfortableLoader({ collection: 'posts' }), schema: entrySchema(postFields,
 * 'post') })
 */
export function entrySchema<F extends z.ZodType>(fields: F, contentType?: string, i18n?: boolean) {
  return z.object({
    id: z.string(),
    locale: z.string(),
    // Typed always, so a schema module written once (comfortable-loader types) types them; there only with i18n
    // (checked as optional where the caller does not say whether the site has it).
    ...((i18n === undefined ? i18nChecked : i18n ? i18nShape : {}) as typeof i18nShape),
    contentType: contentType ? z.literal(contentType) : z.string(),
    fields,
    fallbacks: fallbacksSchema,
    meta: entryMetaSchema,
    digest: z.string(),
    cacheKey: z.string(),
    aliases: stringList,
    // There only with the loader's `markdown` option, which names the fields.
    markdown: z.record(z.string(), renderedMarkdownSchema).optional(),
  });
}

/** `{ schema, types }` for a loader's collection, as Astro's `createSchema()` wants them. */
export function createEntrySchema(
  cache: CacheReader,
  sources: string[],
  collectionOf: (contentType: string) => string | undefined = () => undefined,
  i18n?: boolean,
  markdown: readonly string[] = [],
): { schema: z.ZodType; types: string } {
  const { model } = cache.head;
  // The Markdown fields the loader renders, by name, so `entry.data.markdown.intro` needs no check.
  const rendered = z.object(Object.fromEntries(markdown.map((path) => [path, renderedMarkdownSchema])));
  const envelope = (fields: z.ZodType, type?: string) => {
    const schema = entrySchema(fields, type, i18n);
    return markdown.length ? schema.extend({ markdown: rendered }) : schema.omit({ markdown: true });
  };
  const variants = cache
    .contentTypes(sources)
    .map((type) => envelope(fieldsSchema(model, type, referenceTargets(cache, type, collectionOf)), type));
  const schema =
    variants.length === 0
      ? envelope(z.record(z.string(), z.unknown()))
      : variants.length === 1
        ? variants[0]!
        : z.discriminatedUnion('contentType', variants as never);
  return { schema, types: `export type Entry = ${toTypeScript(schema)};\n` };
}
