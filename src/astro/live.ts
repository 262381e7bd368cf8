import type { LiveLoader } from 'astro/loaders';
import { createClient, defaultBaseUrl, type ReadApiClient } from '../api/client.ts';
import { ConfigError, didYouMean } from '../sync/config.ts';
import { type Locales, repositoryLocales } from '../model/locales.ts';
import { valueNamed } from '../model/sections.ts';
import { cacheTag, type ComfortableLiveEntryData, checkFields, type LiveShaper, liveShaper } from './live-entries.ts';
import { type AstroLocaleMap, LocaleMap } from './i18n.ts';
import { type ComfortableLiveError, failure, notFound } from './live-errors.ts';
import {
  type ComfortableLiveLoaderOptions,
  type ConnectedOptions,
  type EntryRequest,
  type FieldsSchema,
  type LiveCollectionFilter,
  type LiveEntryFilter,
  type LiveOptions,
  parseCollectionFilter,
  parseEntryFilter,
  parseLiveOptions,
} from './live-options.ts';
import { LiveRequests } from './live-requests.ts';
import { serverVariable, siteI18n } from './live-env.ts';
import { withProblem } from './live-problem.ts';

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

/** How long the repository's locales are used before they are asked for again. */
const localesMaxAgeMs = 60_000;

/**
 * A live loader for `src/live.config.ts`: content fetched from the Read API when a page asks for
 * it, through the client's shared concurrency limit and retries. Entries are per locale, with ids
 * `<locale>/<document id>`, shaped as the build-time loader's; errors are returned, not thrown.
 * A locale the repository (or the `locales` option) lacks is a not-found error
 * (`LiveEntryNotFoundError`), for an entry and for a list alike, so that a page answers 404 for it.
 * Wrong options are not thrown either: each request returns them as an error (code `config`),
 * and with the `comfortable()` integration `astro build` and `astro dev` stop at them.
 *
 * @example
 * export const collections = {
 *   posts: defineLiveCollection({
 *     loader: comfortableLiveLoader({
 *       baseUrl: getSecret('CMFT_BASE_URL'), apiKey: getSecret('CMFT_API_KEY'), // repository: CMFT_REPOSITORY
 *       contentType: 'post', contentTypes: { post: 'posts', author: 'authors' },
 *       fields: z.object({ title: z.string(), slug: z.string() }),
 *     }),
 *   }),
 * };
 */
export function comfortableLiveLoader<Fields extends Record<string, unknown> = Record<string, unknown>>(
  input: ComfortableLiveLoaderOptions<Fields>,
): ComfortableLiveLoader<Fields> {
  try {
    return liveLoader(parseLiveOptions(input));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // Not thrown: a throw while live.config loads would fail every page of the server (live-problem.ts).
    const problem = (where: string) => {
      try {
        parseLiveOptions(input, where);
      } catch (named) {
        return named as ConfigError;
      }
      return error;
    };
    // The key, if the options have one, is only scrubbed from the message.
    const { apiKey } = (input ?? {}) as { apiKey?: unknown };
    const failed = async ({ collection }: { collection: string }) =>
      failure(problem(' in src/live.config.ts'), {
        collection,
        baseUrl: defaultBaseUrl,
        apiKey: typeof apiKey === 'string' ? apiKey : undefined,
        aliases: false,
      });
    return withProblem({ name: 'comfortable-live-loader', loadCollection: failed, loadEntry: failed }, problem);
  }
}

/** What a loader needs of its repository, made at the first request, once the repository and the key are known. */
interface Connection {
  options: ConnectedOptions;
  locales: () => Promise<Locales>;
  requests: LiveRequests;
  shape: LiveShaper;
}

/**
 * A request's locales: the repository's (`known`), those the loader makes entries in (`held`: its
 * `locales` option, or every one, without those that map to no Astro locale), each one's Astro
 * locale with `i18n` (`astro`), and the repository locale the filter names (`locale`), if it names one.
 */
interface RequestLocales {
  known: Locales;
  held: string[];
  astro: AstroLocaleMap | undefined;
  locale: string | undefined;
}

function liveLoader<Fields extends Record<string, unknown>>(options: LiveOptions): ComfortableLiveLoader<Fields> {
  const { apiKey } = options;
  const baseUrl = options.baseUrl ?? defaultBaseUrl;
  let connection: Connection | undefined;
  let localeMap: LocaleMap | undefined;
  // Made on the first request: the repository and the key may be set only where the site runs, not where it is built.
  const connect = async (): Promise<Connection> => {
    if (connection) return connection;
    const repository = options.repository ?? (await serverVariable('CMFT_REPOSITORY'));
    if (!repository) {
      throw new ConfigError(
        'repository',
        'the repository option of comfortableLiveLoader() is not set, and CMFT_REPOSITORY is not set where the ' +
          'server runs. Set CMFT_REPOSITORY to the API id of the repository (in .env for astro dev, in the ' +
          "environment of the built server), or give the option: repository: 'demo'.",
      );
    }
    if (!apiKey) {
      throw new ConfigError(
        'apiKey',
        `the apiKey option of comfortableLiveLoader() is not set. Give it a Read API key of the repository ` +
          `"${repository}", read when the server runs: apiKey: getSecret('CMFT_API_KEY'), with getSecret from ` +
          'astro:env/server, reads .env in astro dev too (process.env does not).',
      );
    }
    const { timeouts, retry, concurrency } = options;
    const client = createClient({ baseUrl, repository, apiKey, timeouts, retry, concurrency });
    const connected = { ...options, repository };
    return (connection = {
      options: connected,
      locales: repositoryLocalesOf(client, options.locales),
      requests: new LiveRequests(client, options),
      shape: liveShaper(connected),
    });
  };
  const localesOf = async (
    { options, locales }: Connection,
    collection: string,
    given: string | undefined,
  ): Promise<RequestLocales> => {
    const known = await locales();
    const keys = known.locales.map((locale) => locale.key);
    const unknown = options.locales?.find((key) => !keys.includes(key));
    if (unknown)
      throw new ConfigError(
        'locales',
        `the locales option of comfortableLiveLoader() names "${unknown}", which is not a locale of the repository ` +
          `"${options.repository}"${didYouMean(unknown, keys)}`,
      );
    const i18n = await siteI18n();
    const map = i18n && (localeMap ??= new LocaleMap(i18n, options.astroLocales, 'comfortableLiveLoader()'));
    const astro = map?.resolve(known, options.locales, collection, (message) =>
      console.warn(`[comfortable] ${message}`),
    );
    return {
      known,
      held: (options.locales ?? keys).filter((locale) => !astro || typeof astro.get(locale) === 'string'),
      astro,
      locale: given && (astro ? map!.cmsLocaleOf(astro, given) : given),
    };
  };
  // The schema the input typed as FieldsSchema<Fields>; parsing the options only checked it is one.
  const fields = options.fields as FieldsSchema<Fields> | undefined;
  const failed = (error: unknown, collection: string) =>
    failure(error, {
      collection,
      baseUrl,
      // Known once a request went out, which a hint is for.
      repository: connection?.options.repository,
      apiKey,
      aliases: options.aliases !== undefined,
    });

  return {
    name: 'comfortable-live-loader',

    async loadCollection({ filter, collection }) {
      try {
        const request = parseCollectionFilter(filter, options);
        const connection = await connect();
        const scope = await localesOf(connection, collection, request.locale);
        const { locale } = scope;
        // A locale from the URL that has no entries is a page that does not exist, not a broken config.
        const missing = locale && missingLocale(locale, 'getLiveCollection()', scope, connection.options);
        if (missing) return notFound(collection, `entries in ${locale} (${missing})`);
        const answer = await connection.requests.list({ ...request, locale });
        return {
          entries: await checkFields(
            connection.shape(answer, scope.known, locale ? [locale] : scope.held, scope.astro),
            fields,
          ),
          cacheHint: { tags: listTags(connection.options) },
        };
      } catch (error) {
        return failed(error, collection);
      }
    },

    async loadEntry({ filter, collection }) {
      try {
        const request = parseEntryFilter(filter);
        const connection = await connect();
        const scope = await localesOf(connection, collection, request.locale);
        const { known, held } = scope;
        // Without a locale: the repository's default, if the loader holds it, else the loader's first.
        const locale = scope.locale ?? (held.includes(known.defaultLocale) ? known.defaultLocale : held[0]!);
        const missing = missingLocale(locale, 'getLiveEntry()', scope, connection.options);
        const entry = missing ? undefined : await findEntry(connection, request, locale, scope);
        // Astro's own error for a missing entry, saying what was looked for and where.
        const lookup = `${lookupText(request)} in ${locale} (${missing ?? sourceText(connection.options)})`;
        if (!entry) return notFound(collection, lookup);
        return (await checkFields([entry], fields))[0];
      } catch (error) {
        return failed(error, collection);
      }
    },
  };

  async function findEntry(
    { requests, shape }: Connection,
    request: EntryRequest,
    locale: string,
    { known, astro }: RequestLocales,
  ) {
    if ('field' in request && options.aliases) {
      // A handful of aliases: their documents are compared in the locale here.
      const entries = shape(await requests.list({}), known, [locale], astro);
      return entries.find((entry) => valueNamed(entry.data.fields, request.field) === request.value);
    }
    const answer =
      'id' in request
        ? await requests.byId(request.id)
        : 'alias' in request
          ? await requests.byAlias(request.alias)
          : await requests.byField(request.field, request.value, locale);
    return answer && shape(answer, known, [locale], astro)[0];
  }
}

/**
 * The repository's locales and fallback chains, from the repository endpoint: fetched on the
 * first request, then kept and asked again at most once a minute, a conditional GET the server
 * answers with 304 while they are unchanged. Requests waiting for them share one. The `locales`
 * option stands for them when the server lists none.
 */
function repositoryLocalesOf(client: ReadApiClient, configured: string[] | undefined): () => Promise<Locales> {
  let current: { locales: Locales; at: number } | undefined;
  let pending: Promise<Locales> | undefined;
  const fetch = async (): Promise<Locales> => {
    try {
      const { meta } = await client.repository();
      const locales =
        repositoryLocales(meta) ??
        (configured && {
          defaultLocale: meta.defaultLocale ?? configured[0]!,
          locales: configured.map((key) => ({ key })),
          source: 'config' as const,
        });
      if (!locales)
        throw new Error(
          `The repository "${meta.apiId}" lists no locales: set the locales option of comfortableLiveLoader() to ` +
            'its locale keys, the default first',
        );
      current = { locales, at: Date.now() };
      return locales;
    } catch (error) {
      // Kept while the server cannot say: a request for content reports its own failure.
      if (current) return current.locales;
      throw error;
    }
  };
  return () => {
    if (current && Date.now() - current.at < localesMaxAgeMs) return Promise.resolve(current.locales);
    pending ??= fetch().finally(() => (pending = undefined));
    return pending;
  };
}

/**
 * Why a locale a filter names has no entries of the loader: not a locale of the repository, left
 * out, or not one of its `locales` option (each naming what to check); undefined when it has.
 */
function missingLocale(
  locale: string,
  call: string,
  { known, held, astro }: RequestLocales,
  options: ConnectedOptions,
): string | undefined {
  if (held.includes(locale)) return undefined;
  const keys = known.locales.map((l) => l.key);
  if (!keys.includes(locale)) {
    // With i18n the locale may be an Astro locale: say which ones the repository's map to.
    const only = astro
      ? `nor does one map to that Astro locale (${keys.map((cms) => `${cms} → ${astro.get(cms) || 'left out'}`).join(', ')})`
      : `only ${keys.join(', ')}`;
    return `the repository "${options.repository}" has no locale "${locale}", ${only}: check the locale given to ${call}`;
  }
  if (options.astroLocales?.[locale] === false)
    return `${locale} is left out by the astroLocales option of comfortableLiveLoader() in src/live.config.ts`;
  if (astro && !astro.has(locale)) return `${locale} is left out: it maps to no locale of i18n.locales in astro.config`;
  return `${locale} is not one of the locales option of comfortableLiveLoader() in src/live.config.ts: ${held.join(', ')}`;
}

/**
 * The cache tags of a list: the repository's, and its source's (`comfortable:<repository>:collection:<apiId>`,
 * `…:contentType:<type>`, `…:alias:<apiId>`), so that a new document, in no cached list yet, can purge
 * the lists it joins.
 */
function listTags({ repository, collection, contentType, aliases }: ConnectedOptions): string[] {
  const tag = cacheTag(repository);
  const source = collection
    ? [`collection:${collection}`]
    : contentType
      ? [`contentType:${contentType}`]
      : aliases!.map((alias) => `alias:${alias}`);
  return [tag, ...source.map((name) => `${tag}:${name}`)];
}

function lookupText(request: EntryRequest): string {
  if ('id' in request) return `document ${request.id}`;
  if ('alias' in request) return `alias "${request.alias}"`;
  return `${request.field} ${JSON.stringify(request.value)}`;
}

function sourceText({ collection, contentType, aliases, repository }: ConnectedOptions): string {
  const among = collection
    ? `the collection "${collection}"`
    : contentType
      ? `content type "${contentType}"`
      : `the aliases ${aliases!.map((alias) => `"${alias}"`).join(', ')}`;
  return `among the documents of ${among} of the repository "${repository}"`;
}
