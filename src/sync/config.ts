import { z } from 'zod';
import { nonEmpty, stringList } from '../wire/schemas.ts';
import { fingerprintOf } from '../model/digests.ts';
import { defaultBaseUrl } from '../api/client.ts';
import {
  andFilters,
  builderJson,
  type FilterEntry,
  filterOperators,
  type IncludeMap,
  type ListOptions,
} from '../api/query.ts';
import type { Changeset } from './changeset.ts';
import { allowedKeys, nearestKey } from './option-keys.ts';

/**
 * What to sync and how, validated with zod. An error names the option and what is allowed.
 */

/** A name, an API id, a path: any string but an empty one. */

const includeMapSchema: z.ZodType<IncludeMap> = z.lazy(() =>
  z.record(
    z.string().regex(/^[^.]+\.fields\.[^.]+$/, 'expected <contentType|*>.fields.<name>'),
    z.union([z.literal(1), includeMapSchema]),
  ),
);

const filterConditionSchema = z.record(
  z.string().regex(/^[^.]+\.(fields|meta)\.[^.]+$/, 'expected <contentType|*>.<fields|meta>.<name>'),
  z.partialRecord(z.enum(filterOperators), z.unknown()),
);
const filterEntrySchema = z.union([
  z.strictObject({ and: filterConditionSchema }),
  z.strictObject({ or: filterConditionSchema }),
  filterConditionSchema,
]);

/** Request options a source is fetched with (always with `locale=all`). */
export const sourceOptionsSchema = z.strictObject({
  /** Filters in the JSON form (or a `Filter` builder's `toJSON()`). */
  filters: z.array(filterEntrySchema).optional(),
  sorting: z
    .record(
      z.string().regex(/^(fields|meta)\.[^.]+$/, 'expected fields.<name> or meta.<name>'),
      z.union([z.enum(['ASC', 'DESC', 'asc', 'desc', '1', '-1']), z.literal(1), z.literal(-1)], {
        error: 'expected "ASC" or "DESC" (or "asc", "desc", 1, -1)',
      }),
    )
    .optional(),
  /** A level from 0 to 5, or a field map. Default 1. */
  includes: z
    .union([z.number().int().min(0).max(5), includeMapSchema], {
      error: 'expected a level from 0 to 5, or a map of fields such as { "post.fields.author": 1 }',
    })
    .optional(),
  /** Embed asset records (default true), so images arrive with their documents. */
  embedAssets: z.boolean().optional(),
  /** A partial-response mask; the loader always adds the meta it needs. */
  fields: nonEmpty.optional(),
  includeTags: stringList.optional(),
  excludeTags: stringList.optional(),
  search: z.string().optional(),
});
export type SourceOptions = z.infer<typeof sourceOptionsSchema>;

const querySchema = sourceOptionsSchema.extend({
  /** Shorthand for a filter on `*.meta.contentType`. */
  contentType: nonEmpty.optional(),
});

export const syncConfigSchema = z.strictObject({
  /** The Read API base URL. Default `https://api.cmft.io/v1`. */
  baseUrl: z
    .url({
      protocol: /^https?$/,
      error:
        'expected an http(s) URL such as https://api.cmft.io/v1 (the integration, the Vite plugin and the ' +
        'CLI read CMFT_BASE_URL)',
    })
    .default(defaultBaseUrl),
  /** The repository's API id. */
  repository: z
    .string({
      error:
        'expected the repository API id, such as "demo" (the integration, the Vite plugin and the CLI read ' +
        'CMFT_REPOSITORY)',
    })
    .min(1),
  /** A Read API key of the repository; read it from the environment. Never written anywhere. */
  apiKey: z
    .string({
      error:
        'expected a Read API key of the repository (the integration, the Vite plugin and the CLI read ' +
        'CMFT_API_KEY from the environment or .env)',
    })
    .min(1, 'expected a Read API key of the repository, not an empty string'),
  /** Collections to sync, by API id, each with its own options. */
  collections: z.record(nonEmpty, sourceOptionsSchema).default({}),
  /** Aliases to sync: a list of API ids, or API id → options. */
  aliases: z.union([z.array(nonEmpty), z.record(nonEmpty, sourceOptionsSchema)]).default([]),
  /** Extra document queries on `/documents`, by a name of your choice (for example every author). */
  queries: z.record(nonEmpty, querySchema).default({}),
  /** Where the cache lives. Default: `comfortable` inside the Astro or Vite cache folder. */
  cacheDir: nonEmpty.optional(),
  /** `incremental` (default) fetches what changed, `fresh` ignores the cache, `offline` reads only the cache. */
  mode: z.enum(['incremental', 'fresh', 'offline']).default('incremental'),
  /**
   * On a network or server failure: `fail`, or `use-cache` (keep the last good content and warn). Default `fail` when
   * CI is set, else `use-cache`.
   */
  onError: z.enum(['fail', 'use-cache']).optional(),
  /**
   * How far before the last sync to look for changes, in milliseconds (clock skew, slow publishes). Default 300 000.
   */
  safetyMarginMs: z.number().int().min(0).default(300_000),
  /** Requests in flight at once to the server (shared by every client of it). Default 8. */
  concurrency: z.number().int().min(1).max(64).default(8),
  /** Documents per page, up to 1000 (the default); whole documents (every locale) are asked 250 a request at most. */
  pageSize: z.number().int().min(1).max(1000).default(1000),
  /** Called after each committed sync with what changed. */
  onSync: z.custom<(changeset: Changeset) => unknown>((v) => typeof v === 'function', 'expected a function').optional(),
});

/** The integration's (and the `types` command's) map of content type → the Astro collection that holds it. */
export const contentTypesSchema = z.record(nonEmpty, nonEmpty, {
  error: 'expected content type → collection, such as { post: "posts" }',
});

export type SyncConfigInput = z.input<typeof syncConfigSchema>;
export type SyncConfig = z.output<typeof syncConfigSchema> & { onError: 'fail' | 'use-cache' };

/** A bad option: the message names it and what is allowed. */
export class ConfigError extends Error {
  readonly code = 'config';
  readonly option: string;
  constructor(option: string, message: string) {
    super(message);
    this.name = 'ConfigError';
    this.option = option;
  }
}

/**
 * Where options were written, for the messages of their problems: the prefix of their paths
 * (`comfortable.`), the call they belong to (` of comfortableLoader() for the collection "posts"`),
 * and their schema, which knows the keys to suggest for a misspelt one.
 */
export interface OptionsPlace {
  prefix?: string;
  place?: string;
  schema?: z.ZodType;
}

/**
 * Formats the first problem of a zod error as "Invalid option <option>: <what is allowed> (got …)",
 * or, for a key the schema does not know, "Unknown option <option>: did you mean <nearest>?".
 */
export function configProblem(error: z.ZodError, where: OptionsPlace = {}): ConfigError {
  const { prefix = '', place = '', schema } = where;
  const issue = error.issues[0]!;
  const pathOf = (path: readonly PropertyKey[]) =>
    prefix +
    path
      .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
      .join('.')
      .replace(/\.\[/g, '[');
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const allowed = schema ? allowedKeys(schema, issue.path) : [];
    const nearest = nearestKey(key, allowed);
    const option = pathOf([...issue.path, key]);
    const help = nearest
      ? `did you mean ${pathOf([...issue.path, nearest])}?`
      : allowed.length > 0
        ? `the options there are ${allowed.join(', ')}`
        : 'no such option';
    return new ConfigError(option, `Unknown option ${option}${place}: ${help}`);
  }
  const option = pathOf(issue.path) || '(config)';
  let message = issue.message;
  if (issue.code === 'invalid_value')
    message = `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  // A record's key: zod says "Invalid key in record"; the key's own check says what it must be.
  if (issue.code === 'invalid_key') message = issue.issues[0]?.message ?? message;
  // The value is shown to help, except a key's, which must never be printed.
  const shown = 'input' in issue && issue.input !== undefined && !issue.path.includes('apiKey');
  const input = shown ? ` (got ${JSON.stringify(issue.input)?.slice(0, 60)})` : '';
  return new ConfigError(option, `Invalid option ${option}${place}: ${message}${input}`);
}

/**
 * What to add to the message of a value that names nothing it may name (a content type, a
 * collection, a locale): the names there are, and the nearest as for a misspelt key (nearestKey),
 * such as ` (cuisine, recipe): did you mean "cuisine"?`; `label` goes before the names.
 */
export function didYouMean(value: string, known: readonly string[], label = ''): string {
  const shown = known.length > 12 ? `${known.slice(0, 12).join(', ')}, …` : known.join(', ');
  const nearest = nearestKey(value, known);
  return `${known.length > 0 ? ` (${label}${shown})` : ''}${nearest ? `: did you mean "${nearest}"?` : ''}`;
}

/**
 * Checks options against their schema; throws a ConfigError naming the option as written and, for a misspelt key, the
 * nearest one.
 */
export function checkOptions<S extends z.ZodType>(
  schema: S,
  options: unknown,
  where: Omit<OptionsPlace, 'schema'> = {},
): z.output<S> {
  const result = schema.safeParse(options, { reportInput: true });
  if (!result.success) throw configProblem(result.error, { ...where, schema });
  return result.data;
}

/** Validates a sync config; throws a ConfigError naming the option. */
export function parseSyncConfig(input: unknown, prefix = ''): SyncConfig {
  const config = checkOptions(syncConfigSchema, input, { prefix });
  if (sourceSpecs(config).length === 0)
    throw new ConfigError(
      `${prefix}collections`,
      `Invalid option ${prefix}collections: nothing to sync; name at least one collection, alias or query`,
    );
  return { ...config, onError: config.onError ?? (process.env.CI ? 'fail' : 'use-cache') };
}

export type SourceKind = 'collection' | 'alias' | 'query';

/** A source a config or a loader names: a collection, an alias, or a query of documents, with its options as given. */
export interface SourceSpec {
  kind: SourceKind;
  name: string;
  options: SourceOptions & { contentType?: string };
}

/** One list or alias to fetch, with its effective request options. */
export interface SyncSource extends SourceSpec {
  /** `collection:<apiId>`, `alias:<apiId>` or `query:<name>`. */
  key: string;
  options: SourceOptions;
  /** A hash of the options, whatever the order of their keys: when it changes, the source is fetched in full again. */
  fingerprint: string;
}

/** The sources a config names, in its order: collections, aliases, queries. */
export function sourceSpecs(config: Pick<SyncConfigInput, 'collections' | 'aliases' | 'queries'>): SourceSpec[] {
  const aliases = Array.isArray(config.aliases)
    ? Object.fromEntries(config.aliases.map((alias) => [alias, {}]))
    : (config.aliases ?? {});
  const of = (kind: SourceKind, named: object = {}) =>
    Object.entries(named).map(([name, options]) => ({ kind, name, options: options as SourceSpec['options'] }));
  return [...of('collection', config.collections), ...of('alias', aliases), ...of('query', config.queries)];
}

/**
 * The options as JSON with the keys of every object sorted, so that the same options written
 * in another order are the same source. Arrays keep their order, and so does `sorting`, whose
 * key order is the order of the sort.
 */
export function canonicalOptions(options: SourceOptions): string {
  const { sorting, ...rest } = options;
  return canonicalJson({ ...rest, ...(sorting ? { sorting: Object.entries(sorting) } : {}) });
}

function canonicalJson(given: unknown): string {
  const value = builderJson(given); // a builder, or a Date, as JSON.stringify sees it
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
}

/** The sources of a config, each with its effective options. */
export function configSources(config: SyncConfig): SyncSource[] {
  return sourceSpecs(config).map(({ kind, name, options }) => {
    const { contentType, ...rest } = options;
    const effective: SourceOptions = { includes: 1, embedAssets: true, ...rest };
    // The content type joins every OR branch (AND binds tighter than OR).
    if (contentType) {
      const only = { '*.meta.contentType': { equal: contentType } };
      effective.filters = andFilters([only], rest.filters as FilterEntry[] | undefined) as SourceOptions['filters'];
    }
    return {
      key: `${kind}:${name}`,
      kind,
      name,
      options: effective,
      fingerprint: fingerprintOf(canonicalOptions(effective)),
    };
  });
}

/** The request options of a source: always every locale. */
export function requestOptions(source: SyncSource): ListOptions {
  const { fields, ...rest } = source.options;
  return { ...(rest as ListOptions), locale: 'all', ...(fields ? { fields: withMeta(fields) } : {}) };
}

/** Makes sure a mask keeps the whole `meta` scope, which the cache needs. */
function withMeta(mask: string): string {
  return /(^|,)\s*meta\s*(,|$)/.test(mask)
    ? mask
    : `${mask.replace(/(^|,)\s*meta\s*\([^)]*\)/, '')},meta`.replace(/^,/, '');
}
