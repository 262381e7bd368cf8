import type { LiveDataCollection, LiveDataEntry } from 'astro';
import type { LiveLoader } from 'astro/loaders';
import { createClient, defaultBaseUrl, type ReadApiClient } from '../api/client.ts';
import { ConfigError } from '../sync/config.ts';
import type { Locales } from '../sync/locales.ts';
import { valueNamed } from '../sync/sections.ts';
import { cacheTag, type ComfortableLiveEntryData, LiveShaper } from './live-entries.ts';
import { type ComfortableLiveError, entryNotFound, type ErrorContext, liveError } from './live-errors.ts';
import { checkFields } from './live-fields.ts';
import { RepositoryLocales } from './live-locales.ts';
import {
  type ComfortableLiveLoaderOptions,
  type EntryRequest,
  type LiveCollectionFilter,
  type FieldsSchema,
  type LiveEntryFilter,
  type LiveOptions,
  parseCollectionFilter,
  parseEntryFilter,
  parseLiveOptions,
} from './live-options.ts';
import { type LiveAnswer, LiveRequests } from './live-requests.ts';

/**
 * A live loader of this package, as `defineLiveCollection({ loader })` takes it; `Fields` is the
 * output of its `fields` schema, the type of `entry.data.fields`.
 */
export type ComfortableLiveLoader<Fields extends Record<string, unknown> = Record<string, unknown>> = LiveLoader<
  ComfortableLiveEntryData<Fields>,
  LiveEntryFilter,
  LiveCollectionFilter,
  ComfortableLiveError
>;

/**
 * A live loader for `src/live.config.ts`: content fetched from the Read API when a page asks for
 * it, through the client's shared concurrency limit and retries. Entries are per locale, with ids
 * `<locale>/<document id>`, shaped as the build-time loader's; errors are returned, not thrown.
 * A locale the repository (or the `locales` option) lacks is a not-found error
 * (`LiveEntryNotFoundError`), for an entry and for a list alike, so that a page answers 404 for it.
 *
 * @example
 * export const collections = {
 *   posts: defineLiveCollection({
 *     loader: comfortableLiveLoader({
 *       baseUrl: process.env.CMFT_BASE_URL, repository: 'demo', apiKey: process.env.CMFT_API_KEY,
 *       contentType: 'post', contentTypes: { post: 'posts', author: 'authors' },
 *       fields: z.object({ title: z.string(), slug: z.string() }),
 *     }),
 *   }),
 * };
 */
export function comfortableLiveLoader<Fields extends Record<string, unknown> = Record<string, unknown>>(
  input: ComfortableLiveLoaderOptions<Fields>,
): ComfortableLiveLoader<Fields> {
  const options: LiveOptions = parseLiveOptions(input);
  const { repository, source } = options;
  const baseUrl = options.baseUrl ?? defaultBaseUrl;
  let client: ReadApiClient | undefined;
  // Made on the first request: the key may be set only where the site runs, not where it is built.
  const clientOf = (): ReadApiClient => {
    if (!options.apiKey) {
      throw new ConfigError(
        'apiKey',
        `the apiKey option of comfortableLiveLoader() is not set. Give it a Read API key of the repository "${repository}", read from the environment when the server runs (apiKey: process.env.CMFT_API_KEY).`,
      );
    }
    return (client ??= createClient({
      baseUrl,
      repository,
      apiKey: options.apiKey,
      timeouts: options.timeouts,
      retry: options.retry,
      ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    }));
  };
  const repositoryLocales = new RepositoryLocales(clientOf, options.locales);
  const requests = new LiveRequests(clientOf, options);
  const shaper = new LiveShaper({ repository, contentTypes: options.contentTypes, render: options.render });
  const context = (collection: string): ErrorContext => ({
    collection,
    baseUrl,
    repository,
    aliases: source.kind === 'aliases',
    apiKey: options.apiKey,
  });
  // The schema the input typed as FieldsSchema<Fields>; parsing the options only checked it is one.
  const fields = options.fields as FieldsSchema<Fields> | undefined;

  return {
    name: 'comfortable-live-loader',

    async loadCollection({
      filter,
      collection,
    }): Promise<LiveDataCollection<ComfortableLiveEntryData<Fields>> | { error: ComfortableLiveError }> {
      try {
        const request = parseCollectionFilter(filter);
        if (source.kind === 'aliases') {
          const unsupported = (['filters', 'sorting', 'search', 'includeTags', 'excludeTags'] as const).find(
            (name) => request[name] !== undefined,
          );
          if (unsupported)
            throw new ConfigError(
              unsupported,
              `Invalid filter of getLiveCollection(): ${unsupported} needs a loader for a collection or contentType; this one lists aliases`,
            );
        }
        const locales = await repositoryLocales.get();
        const held = loaderLocales(options, locales);
        // A locale from the URL that has no entries is a page that does not exist, not a broken config.
        const missing =
          request.locale === undefined
            ? undefined
            : missingLocale(request.locale, held, options, locales, 'getLiveCollection()');
        if (missing)
          return {
            error: entryNotFound(collection, `entries in ${request.locale} (${missing})`) as ComfortableLiveError,
          };
        const shaped = shaper.shape(
          await requests.list(request),
          locales,
          request.locale === undefined ? held : [request.locale],
        );
        return {
          entries: await checkFields(shaped, fields),
          cacheHint: { tags: [cacheTag(repository), ...sourceTags(options)] },
        };
      } catch (error) {
        return { error: liveError(error, context(collection)) as ComfortableLiveError };
      }
    },

    async loadEntry({
      filter,
      collection,
    }): Promise<LiveDataEntry<ComfortableLiveEntryData<Fields>> | undefined | { error: ComfortableLiveError }> {
      try {
        const request = parseEntryFilter(filter);
        const locales = await repositoryLocales.get();
        const held = loaderLocales(options, locales);
        const locale = request.locale ?? defaultLocale(held, locales);
        const missing = missingLocale(locale, held, options, locales, 'getLiveEntry()');
        const entry = missing ? undefined : await findEntry(request, locale, locales);
        // Astro's own error for a missing entry, saying what was looked for and where.
        if (!entry)
          return {
            error: entryNotFound(
              collection,
              `${lookupText(request, locale)} (${missing ?? sourceText(options)})`,
            ) as ComfortableLiveError,
          };
        return (await checkFields([entry], fields))[0];
      } catch (error) {
        return { error: liveError(error, context(collection)) as ComfortableLiveError };
      }
    },
  };

  async function findEntry(
    request: EntryRequest,
    locale: string,
    locales: Locales,
  ): Promise<LiveDataEntry<ComfortableLiveEntryData> | undefined> {
    let answer: LiveAnswer | undefined;
    if (request.by === 'id') answer = await requests.byId(request.id);
    else if (request.by === 'alias') answer = await requests.byAlias(request.alias);
    else if (source.kind !== 'aliases') answer = await requests.byField(request.field, request.value, locale);
    else {
      // A handful of aliases: their documents are compared in the locale here.
      const entries = shaper.shape(await requests.list({}), locales, [locale]);
      return entries.find((entry) => valueNamed(entry.data.fields, request.field) === request.value);
    }
    return answer && shaper.shape(answer, locales, [locale])[0];
  }
}

/** The locales the loader makes entries in: its `locales` option, checked, or every locale of the repository. */
function loaderLocales(options: LiveOptions, locales: Locales): string[] {
  const known = locales.locales.map((locale) => locale.key);
  if (!options.locales) return known;
  const unknown = options.locales.find((key) => !known.includes(key));
  if (unknown)
    throw new ConfigError(
      'locales',
      `the locales option of comfortableLiveLoader() names "${unknown}", which is not a locale of the repository "${options.repository}" (${known.join(', ')})`,
    );
  return options.locales;
}

/** An entry's locale when the filter names none: the repository's default, if the loader holds it, else the loader's first. */
function defaultLocale(held: string[], locales: Locales): string {
  return held.includes(locales.defaultLocale) ? locales.defaultLocale : held[0]!;
}

/**
 * Why a locale a filter names has no entries of the loader: not a locale of the repository, or
 * not one of its `locales` option (each naming what to check); undefined when it has.
 */
function missingLocale(
  locale: string,
  held: string[],
  options: LiveOptions,
  locales: Locales,
  call: string,
): string | undefined {
  const known = locales.locales.map((l) => l.key);
  if (!known.includes(locale))
    return `the repository "${options.repository}" has no locale "${locale}", only ${known.join(', ')}: check the locale given to ${call}`;
  if (!held.includes(locale))
    return `${locale} is not one of the locales option of comfortableLiveLoader() in src/live.config.ts: ${held.join(', ')}`;
  return undefined;
}

/**
 * The cache tags of the loader's source (`comfortable:<repository>:collection:<apiId>`,
 * `…:contentType:<type>`, `…:alias:<apiId>`): a list carries them, so that a new document, in no
 * cached list yet, can purge the lists it joins.
 */
function sourceTags({ repository, source }: Pick<LiveOptions, 'repository' | 'source'>): string[] {
  if (source.kind === 'collection') return [`${cacheTag(repository)}:collection:${source.apiId}`];
  if (source.kind === 'contentType') return [`${cacheTag(repository)}:contentType:${source.contentType}`];
  return source.aliases.map((alias) => `${cacheTag(repository)}:alias:${alias}`);
}

function lookupText(request: EntryRequest, locale: string): string {
  if (request.by === 'id') return `document ${request.id} in ${locale}`;
  if (request.by === 'alias') return `alias "${request.alias}" in ${locale}`;
  return `${request.field} ${JSON.stringify(request.value)} in ${locale}`;
}

function sourceText({ source, repository }: LiveOptions): string {
  if (source.kind === 'collection')
    return `among the documents of the collection "${source.apiId}" of the repository "${repository}"`;
  if (source.kind === 'contentType')
    return `among the documents of content type "${source.contentType}" of the repository "${repository}"`;
  return `among the documents of the aliases ${source.aliases.map((alias) => `"${alias}"`).join(', ')} of the repository "${repository}"`;
}
