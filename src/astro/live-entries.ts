import type { LiveDataEntry } from 'astro';
import { z } from 'zod';
import { type Entry, entryOf, mapRelations } from '../sync/entries.ts';
import type { Locales } from '../sync/locales.ts';
import { type Model, normalizeRecord, referenceList, type StoredRecord } from '../sync/records.ts';
import { valueAt } from '../sync/sections.ts';
import type { ApiRecord } from '../wire/schemas.ts';
import type { LiveOptions } from './live-options.ts';
import type { LiveAnswer } from './live-requests.ts';
import { firstRichtextField, type Heading, renderRichtext, richtextOf } from './rendered.ts';

/**
 * Live entries from the Read API's answers: each document in each locale, shaped as the
 * build-time loader shapes its entries (fallbacks marked, assets as images, relations as
 * references), with the records its includes reached, its richtext rendered, and cache hints.
 */

/**
 * A document in one locale, as a live entry shows it and the records it includes; `Fields` is
 * the output of the loader's `fields` schema, when it has one.
 */
export interface ComfortableLiveRecord<Fields extends Record<string, unknown> = Record<string, unknown>> {
  /** The document id. */
  id: string;
  locale: string;
  contentType: string;
  /**
   * Field values in this locale; relations are `{ collection, id }` references (mapped by
   * `contentTypes`), or `{ collection: null, id, contentType }` when no collection holds the target;
   * assets as in build-time entries (`kind` image, file or unresolved).
   */
  fields: Fields;
  /** Localized fields whose value is not this locale's own → the locale it came from (null: none has one). */
  fallbacks: Record<string, string | null>;
  meta: Entry['meta'];
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

/** What shaping needs of the loader's options. */
export type ShapeOptions = Pick<LiveOptions, 'repository' | 'contentTypes' | 'render'>;

type Rendered = { html: string; metadata: { headings: Heading[] } };

export class LiveShaper {
  readonly #options: ShapeOptions;
  /**
   * What the answers have shown of each content type's fields (kind, localized), learned as the
   * sync learns it: which fields are relations, which is the first richtext field, and which
   * localized fields a document lacks in every locale.
   */
  readonly #model: Model = {};

  constructor(options: ShapeOptions) {
    this.#options = options;
  }

  /** Entries of the answer's documents, in their order, each in every locale of `entryLocales`. */
  shape(
    answer: LiveAnswer,
    locales: Locales,
    entryLocales: readonly string[],
  ): LiveDataEntry<ComfortableLiveEntryData>[] {
    const records = this.#normalize(answer, new Set(locales.locales.map((locale) => locale.key)));
    const shaped = new Map<string, ComfortableLiveRecord>();
    const recordIn = (id: string, locale: string): ComfortableLiveRecord => {
      const key = `${locale}/${id}`;
      let record = shaped.get(key);
      if (!record) shaped.set(key, (record = this.#record(records.get(id)!, locale, locales, records)));
      return record;
    };
    const entries: LiveDataEntry<ComfortableLiveEntryData>[] = [];
    const seen = new Set<string>();
    for (const document of answer.documents) {
      if (seen.has(document.meta.id)) continue;
      seen.add(document.meta.id);
      const reached = this.#reached(document.meta.id, records);
      const tags = [
        cacheTag(this.#options.repository),
        ...[document.meta.id, ...reached].map((id) => cacheTag(this.#options.repository, id)),
      ];
      const lastModified = newest([document.meta.id, ...reached].map((id) => records.get(id)!.updatedAt));
      for (const locale of entryLocales) {
        const own = recordIn(document.meta.id, locale);
        const included: Record<string, ComfortableLiveRecord> = {};
        for (const id of reached) {
          const target = records.get(id)!;
          if (target.contentType !== '_asset') included[this.#referenceId(target, locale)] = recordIn(id, locale);
        }
        const rendered = this.#render(own);
        entries.push({
          id: `${locale}/${document.meta.id}`,
          data: { ...own, included },
          ...(rendered ? { rendered } : {}),
          cacheHint: { tags, ...(lastModified ? { lastModified } : {}) },
        });
      }
    }
    return entries;
  }

  /** The answer's documents, included records and embedded assets, normalised, by id. */
  #normalize(answer: LiveAnswer, localeKeys: Set<string>): Map<string, StoredRecord> {
    const records = new Map<string, StoredRecord>();
    const add = (record: ApiRecord): void => {
      if (records.has(record.meta.id)) return;
      const embedded: ApiRecord[] = [];
      records.set(
        record.meta.id,
        normalizeRecord(record, localeKeys, this.#model, (child) => embedded.push(child)),
      );
      embedded.forEach(add);
    };
    answer.documents.forEach(add);
    answer.included.forEach(add);
    return records;
  }

  /** Ids of the records of the answer that a document reaches through its references, breadth first. */
  #reached(id: string, records: Map<string, StoredRecord>): string[] {
    const reached = new Set<string>([id]);
    const queue = [id];
    while (queue.length > 0) {
      for (const reference of referenceList(records.get(queue.shift()!)!)) {
        if (reached.has(reference.id) || !records.has(reference.id)) continue;
        reached.add(reference.id);
        queue.push(reference.id);
      }
    }
    reached.delete(id);
    return [...reached];
  }

  /** A record in one locale, its relations as references. */
  #record(
    record: StoredRecord,
    locale: string,
    locales: Locales,
    records: Map<string, StoredRecord>,
  ): ComfortableLiveRecord {
    const asset = (id: string) => {
      const found = records.get(id);
      return found?.contentType === '_asset' ? found : undefined;
    };
    const { id, contentType, fields, fallbacks, meta } = entryOf(record, locale, locales, asset, this.#model);
    const reference = (ref: { id: string; contentType: string }) => {
      const collection = this.#options.contentTypes[ref.contentType];
      return collection === undefined ? { collection: null, ...ref } : { collection, id: `${locale}/${ref.id}` };
    };
    return {
      id,
      locale,
      contentType,
      fields: mapRelations(fields, this.#model[contentType], reference),
      fallbacks,
      meta,
    };
  }

  /** The id a reference to this record carries: the entry id when its content type is mapped, else the document id. */
  #referenceId(record: StoredRecord, locale: string): string {
    return this.#options.contentTypes[record.contentType] === undefined ? record.id : `${locale}/${record.id}`;
  }

  /** The rendered richtext field, with heading ids; images stay as the answer has them. */
  #render(record: ComfortableLiveRecord): Rendered | undefined {
    if (this.#options.render === false) return undefined;
    const field = this.#options.render ?? firstRichtextField(this.#model, record.contentType);
    const html = field === undefined ? undefined : richtextOf(valueAt(record.fields, field));
    if (html === undefined) return undefined;
    const { html: out, metadata } = renderRichtext(html, new Map(), () => false);
    return { html: out, metadata: { headings: metadata.headings } };
  }
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
  schema: z.ZodType<Fields, unknown> | undefined,
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
