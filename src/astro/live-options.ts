import { z } from 'zod';
import { nonEmpty } from '../wire/schemas.ts';
import {
  builderJson,
  type Filter,
  type FilterEntry,
  type IncludeMap,
  type Includes,
  type Sorting,
  type SortingMap,
} from '../api/query.ts';
import type { RetryPolicy } from '../api/retry.ts';
import type { Timeouts } from '../api/transport.ts';
import { checkOptions, ConfigError, configProblem, sourceOptionsSchema, syncConfigSchema } from '../sync/config.ts';
import { astroLocalesSchema } from './i18n.ts';

/**
 * The options of `comfortableLiveLoader()` and the filters of `getLiveCollection()` and
 * `getLiveEntry()`, checked with zod: a wrong option is one sentence naming it (which the loader
 * returns for each request, see live-problem.ts), a wrong filter is answered as an error naming
 * the filter's member.
 */

/**
 * A zod schema of a content type's fields, as `comfortableLiveLoader({ fields })` takes it: its
 * output is the type of `entry.data.fields`.
 */
export type FieldsSchema<Fields extends Record<string, unknown> = Record<string, unknown>> = z.ZodType<Fields, unknown>;

/**
 * The request options of a live loader, which hold for every list and lookup of its collection, and
 * of `getLiveCollection()`, whose own are ANDed with (filters, search, tags) or replace (sorting,
 * includes) the loader's: the build-time loader's, which take a builder too.
 */
const requestShape = sourceOptionsSchema.shape;
/** A name or an id (API id, content type, locale key, collection): any string but the empty one. */
const requestOptions = {
  /** Filters: a `Filter` or its JSON form. */
  filters: (
    z.preprocess(builderJson, requestShape.filters) as z.ZodType<FilterEntry[], Filter | FilterEntry[]>
  ).optional(),
  /** The order of lists: a `Sorting` or `{ 'fields.date': 'DESC' }`. */
  sorting: (z.preprocess(builderJson, requestShape.sorting) as z.ZodType<SortingMap, Sorting | SortingMap>).optional(),
  /** Relations fetched with each document: a level from 0 to 5, or a field map (`Includes`). Default 1. */
  includes: (
    z.preprocess(builderJson, requestShape.includes) as z.ZodType<number | IncludeMap, number | IncludeMap | Includes>
  ).optional(),
  /** Only documents with one of these tags. */
  includeTags: requestShape.includeTags,
  /** No documents with any of these tags. */
  excludeTags: requestShape.excludeTags,
  /** Every word must occur in the document's text. */
  search: requestShape.search,
};
const apiIds = (what: string) => z.array(nonEmpty).min(1, `expected at least one ${what}`);

const optionsSchema = z.strictObject({
  /** The Read API base URL. Default `https://api.cmft.io/v1`. */
  baseUrl: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL such as https://api.cmft.io/v1' }).optional(),
  /**
   * The repository's API id, such as `demo`. Default: `CMFT_REPOSITORY`, read when the first
   * request comes as `getSecret` reads it (`.env` in `astro dev`, the environment of the built
   * server), so it need not be set where the site is built.
   */
  repository: z.string({ error: 'expected the repository API id, such as "demo"' }).min(1).optional(),
  apiKey: z.string({ error: 'expected the API key (read it from an environment variable)' }).optional(),
  /** The source: a collection of the repository, by API id. */
  collection: nonEmpty.optional(),
  /** The source: every document of a content type. */
  contentType: nonEmpty.optional(),
  /** The source: the documents of these aliases, by API id. */
  aliases: apiIds('alias API id').optional(),
  ...requestOptions,
  /** Asset fields arrive as images with their documents. Default true. */
  embedAssets: z.boolean().default(true),
  /** Locales that get entries. Default: every locale of the repository. */
  locales: apiIds('locale key').optional(),
  /**
   * With `i18n` in astro.config: the repository's locales → Astro's, where the codes do not match
   * by themselves, as the integration's option of that name; `false` leaves a locale out.
   * @example astroLocales: { en_GB: 'en', de_CH: false }
   */
  astroLocales: astroLocalesSchema.optional(),
  /**
   * Content type → the live collection in `src/live.config.ts` that holds it: a relation to a
   * document of a mapped type becomes `{ collection, id: '<locale>/<document id>' }`, for
   * `getLiveEntry(reference.collection, reference.id)`; others stay `{ id, contentType }`.
   * @example { post: 'posts', author: 'authors' }
   */
  contentTypes: z.record(nonEmpty, nonEmpty).default({}),
  /**
   * The richtext field rendered for `render(entry)` (inside a section by its path, `'content.body'`).
   * Default: the content type's first; `false` renders none. Not a Markdown field: Astro gives live
   * loaders no Markdown pipeline, so its source stays a string for the page to render (docs/live.md).
   */
  render: z.union([nonEmpty, z.literal(false)]).optional(),
  fields: z
    .custom<z.ZodType>(
      // A zod 4 schema, of this package's zod or of another copy (Astro's `astro/zod`).
      (value) => typeof value === 'object' && value !== null && '_zod' in value,
      'expected a zod schema of the fields, such as z.object({ title: z.string() }) with z from astro/zod',
    )
    .optional(),
  // Request-time defaults: a page waits for every timeout and retry.
  /** Timeouts of each request. Default: connect 5 s, headers 10 s, body 10 s (a page waits for them). */
  timeouts: z
    .strictObject({ connectMs: z.number().positive(), headersMs: z.number().positive(), bodyMs: z.number().positive() })
    .partial()
    .default({})
    .transform((timeouts): Partial<Timeouts> => ({ connectMs: 5_000, headersMs: 10_000, bodyMs: 10_000, ...timeouts })),
  /** Retries of 429, 5xx and network failures. Default: 3 attempts within 10 s (a page waits for them). */
  retry: z
    .strictObject({
      attempts: z.number().int().min(1),
      baseDelayMs: z.number().min(0),
      maxDelayMs: z.number().min(0),
      budgetMs: z.number().positive(),
    })
    .partial()
    .default({})
    .transform((retry): Partial<RetryPolicy> => ({ attempts: 3, budgetMs: 10_000, ...retry })),
  /** Requests in flight at once to the server, shared with every other client of it. Default 8. */
  concurrency: syncConfigSchema.shape.concurrency,
});

/** The options of `comfortableLiveLoader()`; `Fields` is the output of the `fields` schema. */
export type ComfortableLiveLoaderOptions<Fields extends Record<string, unknown> = Record<string, unknown>> = Omit<
  z.input<typeof optionsSchema>,
  'apiKey' | 'fields'
> & {
  /**
   * A Read API key of the repository, read where the server runs: `getSecret('CMFT_API_KEY')`
   * with `getSecret` from `astro:env/server`, which reads `.env` in `astro dev` and the
   * environment of the built server, and never writes the value into the built code. Not
   * `process.env` (which `astro dev` does not fill from `.env`) and not `import.meta.env`
   * (which Astro writes into the built server code). It may be unset where the site is built: a
   * request without it is answered with an error that names this option.
   */
  apiKey: string | undefined;
  /**
   * The fields of the entries, as a zod schema (from `astro/zod`): each entry's fields are checked
   * with it on every request and typed by it (`entry.data.fields.title` is a `string`), and what
   * it outputs is what the page gets (fields it does not name are dropped, `z.coerce.date()`
   * gives a `Date`). An entry that does not match is an error naming this option. Default: none,
   * fields typed `Record<string, unknown>`. A loader option rather than a `schema` in
   * `defineLiveCollection()`: that one must describe the whole entry (`included`, `meta`, …), and
   * Astro's `render()` stops accepting the entries of the collections without one.
   * @example fields: z.object({ title: z.string(), slug: z.string(), author: z.object({ collection:
   * z.literal('authors'), id: z.string() }).nullish() })
   */
  fields?: FieldsSchema<Fields>;
};

/**
 * The options, checked. Exactly one of `collection`, `contentType` and `aliases` is set, and it is
 * the source: only the loader's own requests and messages read it, so no shape restates it.
 */
export type LiveOptions = z.output<typeof optionsSchema>;

/** The options once the repository is known: the option's, or `CMFT_REPOSITORY` where the server runs. */
export type ConnectedOptions = LiveOptions & { repository: string };

/**
 * Checks the options; throws a ConfigError whose message names the option, and the loader's
 * collection and file when `where` says them (` for the live collection "posts" in src/live.config.ts`).
 */
export function parseLiveOptions(input: unknown, where = ''): LiveOptions {
  const place = ` of comfortableLiveLoader()${where}`;
  const options = checkOptions(optionsSchema, input ?? {}, { place });
  if ([options.collection, options.contentType, options.aliases].filter((value) => value !== undefined).length !== 1) {
    throw new ConfigError(
      'collection',
      `Invalid options${place}: give exactly one of collection, contentType or aliases, for example ` +
        'comfortableLiveLoader({ apiKey, collection: "posts" })',
    );
  }
  return options;
}

/**
 * Only this locale's entries (of an entry: the locale it is found in); filters, sorting and search
 * then read this locale's values. A repository locale (`fr_FR`), or with `i18n` in astro.config
 * the Astro locale it maps to (`Astro.currentLocale`).
 */
const locale = nonEmpty.optional();
const collectionFilterSchema = z.strictObject({
  locale,
  ...requestOptions,
  /** Documents at most, 1 to 1000. Default: every document. */
  limit: z.number().int().min(1).max(1000).optional(),
  /** Documents to skip. */
  offset: z.number().int().min(0).optional(),
  /** The page of `limit` documents, from 1 (instead of `offset`). */
  page: z.number().int().min(1).optional(),
});

/** What `getLiveCollection(name, filter)` accepts. */
export type LiveCollectionFilter = z.input<typeof collectionFilterSchema>;

/** A collection filter with builders resolved and `page` turned into `offset`. */
export type CollectionRequest = Omit<z.output<typeof collectionFilterSchema>, 'page'>;

/** Checks a `getLiveCollection()` filter for a loader with these options; throws a ConfigError naming the member. */
export function parseCollectionFilter(input: unknown, { aliases }: LiveOptions): CollectionRequest {
  const invalid = (option: string, message: string) =>
    new ConfigError(option, `Invalid filter of getLiveCollection(): ${message}`);
  const result = collectionFilterSchema.safeParse(input ?? {}, { reportInput: true });
  if (!result.success) {
    const problem = configProblem(result.error);
    throw new ConfigError(
      problem.option,
      problem.message.replace(/^Invalid option/, 'Invalid filter of getLiveCollection():'),
    );
  }
  const { page, ...filter } = result.data;
  if (aliases) {
    const unsupported = (['filters', 'sorting', 'search', 'includeTags', 'excludeTags'] as const).find(
      (name) => filter[name] !== undefined,
    );
    if (unsupported)
      throw invalid(
        unsupported,
        `${unsupported} needs a loader for a collection or contentType; this one lists aliases`,
      );
  }
  if (page === undefined) return filter;
  if (filter.limit === undefined) throw invalid('page', 'page needs a limit (the number of documents per page)');
  if (filter.offset !== undefined) throw invalid('page', 'give page or offset, not both');
  return { ...filter, offset: (page - 1) * filter.limit };
}

const entryFilterSchema = z.union([
  /** `'<locale>/<document id>'`, or a document id with `locale`. */
  z.strictObject({ id: nonEmpty, locale }),
  /** The document whose field (such as `slug`) has this value in the locale. */
  z.strictObject({
    field: z
      .string()
      .regex(/^(fields\.)?[^.]+$/, 'expected a field name such as "slug"')
      .transform((field) => field.replace(/^fields\./, '')),
    value: z.union([z.string(), z.number(), z.boolean()]),
    locale,
  }),
  /** The document an alias points to. */
  z.strictObject({ alias: nonEmpty, locale }),
]);

/**
 * What `getLiveEntry(name, filter)` accepts: an entry id, a field value or an alias, in a locale
 * (a repository locale, or with `i18n` in astro.config the Astro locale it maps to).
 */
export type LiveEntryFilter = z.input<typeof entryFilterSchema>;

/**
 * An entry lookup: by document id (the locale of an entry id split off), by a field's value (the
 * field named without `fields.`), or by alias; `locale` undefined when the filter names none.
 */
export type EntryRequest = z.output<typeof entryFilterSchema>;

/** Checks a `getLiveEntry()` filter (or id); throws a ConfigError naming what is wrong. */
export function parseEntryFilter(input: unknown): EntryRequest {
  const result = entryFilterSchema.safeParse(input, { reportInput: true });
  if (!result.success) {
    throw new ConfigError(
      'filter',
      'Invalid filter of getLiveEntry(): expected an entry id such as "en_US/123", { id, locale }, ' +
        `{ field: 'slug', value, locale } or { alias, locale } (got ${JSON.stringify(input)?.slice(0, 80)})`,
    );
  }
  const filter = result.data;
  if (!('id' in filter) || !filter.id.includes('/')) return filter;
  const slash = filter.id.indexOf('/');
  const [inId, id] = [filter.id.slice(0, slash), filter.id.slice(slash + 1)];
  if (filter.locale !== undefined && filter.locale !== inId) {
    throw new ConfigError(
      'locale',
      `Invalid filter of getLiveEntry(): the id "${filter.id}" is in ${inId}, the locale option says ` +
        `${filter.locale}; give one of them`,
    );
  }
  return { id, locale: inId };
}
