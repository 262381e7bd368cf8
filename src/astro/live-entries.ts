import type { LiveDataEntry } from 'astro';
import { z } from 'zod';
import { type Entry, type EntryReference, entryOf, mapRelations } from '../entries/entries.ts';
import type { Locales } from '../model/locales.ts';
import { type Model, normalizeRecord, referenceList, type StoredRecord } from '../model/records.ts';
import { valueAt } from '../model/sections.ts';
import type { ApiRecord } from '../wire/schemas.ts';
import { type AstroLocaleMap, astroSideOf } from './i18n.ts';
import type { ConnectedOptions, FieldsSchema } from './live-options.ts';
import type { LiveAnswer } from './live-requests.ts';
import { firstRichtextField, renderRichtext, richtextOf } from './rendered.ts';

/**
 * Live entries from the Read API's answers: each document in each locale, shaped as the
 * build-time loader shapes its entries (fallbacks marked, assets as images, relations as
 * references), with the records its includes reached, its richtext rendered, and cache hints.
 */

/**
 * A document in one locale, as a live entry shows it and the records it includes: an entry as the
 * build-time loader makes it, relations as references; `Fields` is the output of the loader's
 * `fields` schema, when it has one.
 */
export interface ComfortableLiveRecord<Fields extends Record<string, unknown> = Record<string, unknown>>
  extends Omit<Entry, 'fields'> {
  /**
   * Field values in this locale; relations are `{ collection, id }` references (mapped by
   * `contentTypes`), or `{ collection: null, id, contentType }` when no collection holds the target;
   * assets as in build-time entries (`kind` image, file or unresolved).
   */
  fields: Fields;
  /** With `i18n` in astro.config: the Astro locale of `locale`, what `getRelativeLocaleUrl` takes. */
  astroLocale?: string;
  /** With `i18n` in astro.config: the BCP 47 tag of `locale` (`fr-FR`), for `lang` and `hreflang`. */
  lang?: string;
  /** With `i18n` in astro.config: `fallbacks` in Astro's locales (null where none maps). */
  astroFallbacks?: Record<string, string | null>;
}

/** The `data` of a live entry; `Fields` is the output of the loader's `fields` schema, when it has one. */
export interface ComfortableLiveEntryData<Fields extends Record<string, unknown> = Record<string, unknown>>
  extends ComfortableLiveRecord<Fields> {
  /**
   * The documents the request's `includes` reached from this one (relations of relations too),
   * in the same locale, by the `id` their references carry in `fields`:
   * `entry.data.included[entry.data.fields.author.id]`. Their fields are not checked by the
   * `fields` option: they are typed loosely.
   */
  included: Record<string, ComfortableLiveRecord>;
}

/**
 * The cache tag of a record (`comfortable:<repository>:<id>`), or of every record of the
 * repository (`comfortable:<repository>`), for `Astro.cache` and `context.cache.invalidate()`.
 *
 * @example cacheTag('demo', '100000000000000101') // 'comfortable:demo:100000000000000101'
 */
export function cacheTag(repository: string, id?: string): string {
  return id === undefined ? `comfortable:${repository}` : `comfortable:${repository}:${id}`;
}

/**
 * Makes the entries of an answer: each document in each locale of `entryLocales`, in their order,
 * with their Astro locales when `astroLocales` is given.
 */
export type LiveShaper = (
  answer: LiveAnswer,
  locales: Locales,
  entryLocales: readonly string[],
  astroLocales?: AstroLocaleMap,
) => LiveDataEntry<ComfortableLiveEntryData>[];

export function liveShaper({
  repository,
  contentTypes,
  render,
}: Pick<ConnectedOptions, 'repository' | 'contentTypes' | 'render'>): LiveShaper {
  // What the answers have shown of each content type's fields (kind, localized), learned as the
  // sync learns it: which fields are relations, which is the first richtext field, and which
  // localized fields a document lacks in every locale.
  const model: Model = {};
  /** The rendered richtext field, with heading ids; images stay as the answer has them. */
  const rendered = ({ contentType, fields }: ComfortableLiveRecord) => {
    const field = render === false ? undefined : (render ?? firstRichtextField(model, contentType));
    const html = field === undefined ? undefined : richtextOf(valueAt(fields, field));
    if (html === undefined) return {};
    const { html: out, metadata } = renderRichtext(html, new Map(), () => false);
    return { rendered: { html: out, metadata: { headings: metadata.headings } } };
  };

  return (answer, locales, entryLocales, astroLocales) => {
    // The documents, included records and embedded assets, normalised, by id.
    const keys = new Set(locales.locales.map((locale) => locale.key));
    const records = new Map<string, StoredRecord>();
    const add = (record: ApiRecord): void => {
      if (records.has(record.meta.id)) return;
      const embedded: ApiRecord[] = [];
      records.set(
        record.meta.id,
        normalizeRecord(record, keys, model, (child) => embedded.push(child)),
      );
      embedded.forEach(add);
    };
    [...answer.documents, ...answer.included].forEach(add);
    // A relation as an entry in `locale` holds it: by entry id into the live collection of its
    // content type, or `{ collection: null, id, contentType }` when `contentTypes` maps none.
    const reference = (ref: EntryReference, locale: string) => {
      const collection = contentTypes[ref.contentType];
      return collection === undefined ? { collection: null, ...ref } : { collection, id: `${locale}/${ref.id}` };
    };

    /** A record in one locale, its relations as references; each made once. */
    const shaped = new Map<string, ComfortableLiveRecord>();
    const recordIn = (id: string, locale: string): ComfortableLiveRecord => {
      const made = shaped.get(`${locale}/${id}`);
      if (made) return made;
      // An asset reference's id is its asset's: the record of that id, as the build-time loader reads it.
      const entry = entryOf(records.get(id)!, locale, locales, (asset) => records.get(asset), model);
      const { contentType, fallbacks, meta } = entry;
      const fields = mapRelations(entry.fields, model[contentType], (ref) => reference(ref, locale));
      const record: ComfortableLiveRecord = {
        ...{ id: entry.id, locale, contentType, fields, fallbacks, meta },
        ...(astroLocales && astroSideOf(locale, fallbacks, astroLocales)),
      };
      shaped.set(`${locale}/${id}`, record);
      return record;
    };

    return [...new Set(answer.documents.map((document) => document.meta.id))].flatMap((id) => {
      const reached = reachedFrom(id, records);
      const lastModified = newest(reached.map((other) => records.get(other)!.updatedAt));
      const cacheHint = {
        tags: [cacheTag(repository), ...reached.map((other) => cacheTag(repository, other))],
        ...(lastModified && { lastModified }),
      };
      return entryLocales.map((locale) => {
        const own = recordIn(id, locale);
        const included: Record<string, ComfortableLiveRecord> = {};
        for (const other of reached.slice(1)) {
          const { contentType } = records.get(other)!;
          // By the id the references to it carry.
          if (contentType !== '_asset')
            included[reference({ id: other, contentType }, locale).id] = recordIn(other, locale);
        }
        return { id: `${locale}/${id}`, data: { ...own, included }, ...rendered(own), cacheHint };
      });
    });
  };
}

/** The id, then the ids of the records of the answer it reaches through its references, breadth first. */
function reachedFrom(id: string, records: Map<string, StoredRecord>): string[] {
  const reached = new Set([id]);
  for (const at of reached)
    for (const reference of referenceList(records.get(at)!)) if (records.has(reference.id)) reached.add(reference.id);
  return [...reached];
}

/** The latest of some ISO timestamps, as a Date (undefined when none can be read). */
function newest(stamps: string[]): Date | undefined {
  const times = stamps.map(Date.parse).filter((time) => !Number.isNaN(time));
  return times.length > 0 ? new Date(Math.max(...times)) : undefined;
}

/** An entry whose fields do not match the `fields` option. */
export class FieldsMismatch extends Error {
  constructor(entryId: string, error: z.ZodError) {
    const shown = 3;
    const issues = error.issues
      .slice(0, shown)
      .map((issue) => `${['fields', ...issue.path.map(String)].join('.')}: ${issue.message}`);
    const more = error.issues.length > shown ? ` (and ${error.issues.length - shown} more)` : '';
    super(
      `entry ${entryId} does not match the fields option of comfortableLiveLoader() in src/live.config.ts: ` +
        `${issues.join('; ')}${more}. Change the schema to what the content type holds (a field that may be empty ` +
        'needs .nullish()).',
    );
    this.name = 'FieldsMismatch';
  }
}

/**
 * The `fields` option at work: each entry's fields as the schema outputs them, so that a page gets
 * what the types promise; throws a FieldsMismatch for the first entry that does not match.
 */
export async function checkFields<Fields extends Record<string, unknown>>(
  entries: LiveDataEntry<ComfortableLiveEntryData>[],
  schema: FieldsSchema<Fields> | undefined,
): Promise<LiveDataEntry<ComfortableLiveEntryData<Fields>>[]> {
  // Without a schema the fields stay as they are, typed Record<string, unknown> (the default of Fields).
  if (!schema) return entries as LiveDataEntry<ComfortableLiveEntryData<Fields>>[];
  return Promise.all(
    entries.map(async (entry) => {
      const result = await z.safeParseAsync(schema, entry.data.fields);
      if (!result.success) throw new FieldsMismatch(entry.id, result.error);
      return { ...entry, data: { ...entry.data, fields: result.data } };
    }),
  );
}
