import type { ReadApiClient } from '../api/client.ts';
import { type Locales, repositoryLocales } from '../sync/locales.ts';

/**
 * The repository's locales and fallback chains for a live loader, from the repository endpoint:
 * fetched on the first request, then kept and asked again at most once a minute, a conditional
 * GET the server answers with 304 while they are unchanged. Requests waiting for them share one.
 */

/** How long the locales are used before they are asked for again. */
const localesMaxAgeMs = 60_000;

export class RepositoryLocales {
  readonly #client: () => ReadApiClient;
  /** The `locales` option, used as the locales when the server lists none. */
  readonly #configured: string[] | undefined;
  #current: { locales: Locales; at: number } | undefined;
  #pending: Promise<Locales> | undefined;

  constructor(client: () => ReadApiClient, configured: string[] | undefined) {
    this.#client = client;
    this.#configured = configured;
  }

  get(): Promise<Locales> {
    const current = this.#current;
    if (current && Date.now() - current.at < localesMaxAgeMs) return Promise.resolve(current.locales);
    this.#pending ??= this.#fetch().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  async #fetch(): Promise<Locales> {
    try {
      const { meta } = await this.#client().repository();
      let locales = repositoryLocales(meta);
      if (!locales && this.#configured)
        locales = {
          defaultLocale: meta.defaultLocale ?? this.#configured[0]!,
          locales: this.#configured.map((key) => ({ key })),
          source: 'config',
        };
      if (!locales)
        throw new Error(
          `The repository "${meta.apiId}" lists no locales: set the locales option of comfortableLiveLoader() to its locale keys, the default first`,
        );
      this.#current = { locales, at: Date.now() };
      return locales;
    } catch (error) {
      // Kept while the server cannot say: a request for content reports its own failure.
      if (this.#current) return this.#current.locales;
      throw error;
    }
  }
}
