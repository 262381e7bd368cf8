import { maxPageSize, type ReadApiClient } from '../api/client.ts';
import { NotFoundError } from '../api/errors.ts';
import { andFilters, type FilterEntry, type ListOptions } from '../api/query.ts';
import type { ApiRecord } from '../wire/schemas.ts';
import type { CollectionRequest, LiveOptions, RequestOptions } from './live-options.ts';

/**
 * The requests behind a live collection: which endpoint, with which options, for a list or one
 * entry of the loader's source. Documents always come with every locale (`locale=all`), so an
 * entry can say which of its values are fallbacks; a list or lookup that must read the values of
 * one locale (its filters, sorting, search, a field's value) first finds the ids in that locale.
 */

/** Documents in the order they were asked for, and what came with them. */
export interface LiveAnswer {
  documents: ApiRecord[];
  /** Included records (relations reached by `includes`), every group together. */
  included: ApiRecord[];
}

const byId = (id: string): FilterEntry => ({ '*.meta.id': { equal: id } });

export class LiveRequests {
  readonly #client: () => ReadApiClient;
  readonly #options: LiveOptions;

  constructor(client: () => ReadApiClient, options: LiveOptions) {
    this.#client = client;
    this.#options = options;
  }

  /** What every document of the answers is fetched with: every locale, includes (default 1), embedded assets. */
  #full(includes = this.#options.includes): ListOptions {
    return { locale: 'all', includes: includes ?? 1, embedAssets: this.#options.embedAssets };
  }

  /**
   * What holds a document to the source beyond its endpoint: its content type, the loader's
   * filters and tags (as filters, so that a request's own tags still mean what they say) and
   * search, with `filters` ANDed to them.
   */
  #constraints(filters?: FilterEntry[]): Pick<ListOptions, 'filters' | 'search'> {
    const { source, includeTags, excludeTags, search } = this.#options;
    const own: FilterEntry[] = [];
    if (source.kind === 'contentType') own.push({ '*.meta.contentType': { equal: source.contentType } });
    if (includeTags?.length) own.push({ '*.meta.tags': { in: includeTags } });
    if (excludeTags?.length) own.push({ '*.meta.tags': { notIn: excludeTags } });
    const all = andFilters(own, this.#options.filters, filters);
    return { ...(all.length > 0 ? { filters: all } : {}), ...(search ? { search } : {}) };
  }

  /** Whether a document fetched alone must be checked against the source with a list request. */
  get #needsMembership(): boolean {
    const { source, filters, includeTags, excludeTags, search } = this.#options;
    return (
      source.kind === 'collection' || Boolean(filters?.length || includeTags?.length || excludeTags?.length || search)
    );
  }

  #page(
    options: ListOptions,
  ): Promise<{ data: ApiRecord[]; includes?: Record<string, ApiRecord[]> | undefined; meta: { total: number } }> {
    const { source } = this.#options;
    const client = this.#client();
    return (
      source.kind === 'collection' ? client.collection(source.apiId, options) : client.documents(options)
    ) as never;
  }

  /** Every page of a list (or `limit` documents), in order. */
  async #pages(options: ListOptions): Promise<LiveAnswer> {
    const answer: LiveAnswer = { documents: [], included: [] };
    const add = (page: { data: ApiRecord[]; includes?: Record<string, ApiRecord[]> | undefined }) => {
      answer.documents.push(...page.data);
      for (const group of Object.values(page.includes ?? {})) answer.included.push(...group);
    };
    if (options.limit !== undefined) {
      add(await this.#page(options));
      return answer;
    }
    const { source } = this.#options;
    const client = this.#client();
    const list = source.kind === 'collection' ? { collection: source.apiId } : 'documents';
    for await (const page of client.pages(list, options)) add(page as never); // pages as large as the API gives
    return answer;
  }

  /** The ids of a list as it is in one locale, in its order. */
  async #ids(options: ListOptions): Promise<string[]> {
    const answer = await this.#pages({ ...options, includes: 0, embedAssets: false, fields: 'meta(id)' });
    return answer.documents.map((document) => document.meta.id);
  }

  /** Documents by id with every locale, in the order given (one that is gone by now is left out). */
  async #byIds(ids: string[], includes: RequestOptions['includes']): Promise<LiveAnswer> {
    const answer: LiveAnswer = { documents: [], included: [] };
    const chunks: string[][] = [];
    // As many ids in one `in` filter as a page holds.
    for (let start = 0; start < ids.length; start += maxPageSize) chunks.push(ids.slice(start, start + maxPageSize));
    const pages = await Promise.all(
      chunks.map((chunk) =>
        this.#client().documents({
          ...this.#full(includes),
          filters: [{ '*.meta.id': { in: chunk } }],
          limit: chunk.length,
        }),
      ),
    );
    const found = new Map<string, ApiRecord>();
    for (const page of pages) {
      for (const document of page.data) found.set(document.meta.id, document);
      for (const group of Object.values(page.includes ?? {})) answer.included.push(...group);
    }
    for (const id of ids) if (found.has(id)) answer.documents.push(found.get(id)!);
    return answer;
  }

  /** The documents of every alias of an aliases source, in the order of the option. */
  async #aliases(names: string[], includes?: RequestOptions['includes']): Promise<LiveAnswer> {
    const answers = await Promise.all(names.map((name) => this.#client().alias(name, this.#full(includes))));
    return {
      documents: answers.map(({ includes: _, ...document }) => document),
      included: answers.flatMap((answer) => Object.values(answer.includes ?? {}).flat()),
    };
  }

  /** A list of the source, as `getLiveCollection()` asks for it. */
  async list(request: CollectionRequest): Promise<LiveAnswer> {
    const { source, sorting } = this.#options;
    if (source.kind === 'aliases') {
      const answer = await this.#aliases(source.aliases, request.includes);
      const start = request.offset ?? 0;
      answer.documents = answer.documents.slice(start, request.limit === undefined ? undefined : start + request.limit);
      return answer;
    }
    const constraints = this.#constraints(request.filters);
    const options: ListOptions = {
      ...constraints,
      sorting: request.sorting ?? sorting,
      search: [constraints.search, request.search].filter(Boolean).join(' ') || undefined,
      includeTags: request.includeTags,
      excludeTags: request.excludeTags,
      limit: request.limit,
      offset: request.offset,
    };
    // A collection's own definition may filter or sort on localized values too.
    const localeSensitive =
      source.kind === 'collection' ||
      options.filters !== undefined ||
      options.sorting !== undefined ||
      options.search !== undefined;
    if (request.locale !== undefined && localeSensitive)
      return this.#byIds(await this.#ids({ ...options, locale: request.locale }), request.includes);
    return this.#pages({ ...options, ...this.#full(request.includes) });
  }

  /** The document with this id, if the source holds it. */
  async byId(id: string): Promise<LiveAnswer | undefined> {
    const { source } = this.#options;
    if (source.kind === 'aliases') return this.#only(await this.#aliases(source.aliases), id);
    if (this.#needsMembership)
      return this.#first(await this.#pages({ ...this.#full(), ...this.#constraints([byId(id)]), limit: 1 }));
    const answer = await this.#single(() => this.#client().document(id, this.#full()));
    return answer && this.#ofSource(answer) ? answer : undefined;
  }

  /** The first document of the source whose field has this value in the locale. */
  async byField(field: string, value: string | number | boolean, locale: string): Promise<LiveAnswer | undefined> {
    const { source } = this.#options;
    if (source.kind === 'aliases') throw new Error('byField is answered from the aliases by the loader');
    const ids = await this.#ids({
      ...this.#constraints([{ [`*.fields.${field}`]: { equal: value } }]),
      locale,
      limit: 1,
    });
    if (ids.length === 0) return undefined;
    return this.#single(() => this.#client().document(ids[0]!, this.#full()));
  }

  /** The document an alias points to, if the source holds it. */
  async byAlias(alias: string): Promise<LiveAnswer | undefined> {
    const { source } = this.#options;
    if (source.kind === 'aliases' && !source.aliases.includes(alias)) return undefined;
    const answer = await this.#single(() => this.#client().alias(alias, this.#full()));
    if (!answer || source.kind === 'aliases') return answer;
    if (!this.#needsMembership) return this.#ofSource(answer) ? answer : undefined;
    const id = answer.documents[0]!.meta.id;
    const member = await this.#ids({ ...this.#constraints([byId(id)]), limit: 1 });
    return member.length > 0 ? answer : undefined;
  }

  /** A single-record request; a 404 is no document. */
  async #single(
    send: () => Promise<ApiRecord & { includes?: Record<string, ApiRecord[]> | undefined }>,
  ): Promise<LiveAnswer | undefined> {
    try {
      const { includes, ...document } = await send();
      return { documents: [document as ApiRecord], included: Object.values(includes ?? {}).flat() };
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  #ofSource(answer: LiveAnswer): boolean {
    const { source } = this.#options;
    return source.kind !== 'contentType' || answer.documents[0]?.meta.contentType === source.contentType;
  }

  #first(answer: LiveAnswer): LiveAnswer | undefined {
    return answer.documents.length > 0
      ? { documents: answer.documents.slice(0, 1), included: answer.included }
      : undefined;
  }

  #only(answer: LiveAnswer, id: string): LiveAnswer | undefined {
    const document = answer.documents.find((candidate) => candidate.meta.id === id);
    return document && { documents: [document], included: answer.included };
  }
}
