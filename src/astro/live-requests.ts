import { type ListSource, maxPageSize, type ReadApiClient } from '../api/client.ts';
import { NotFoundError } from '../api/errors.ts';
import { andFilters, type FilterEntry, type ListOptions } from '../api/query.ts';
import type { ApiRecord, DocumentAnswer, ListAnswer } from '../wire/schemas.ts';
import type { CollectionRequest, LiveOptions } from './live-options.ts';

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

type Answered = Pick<ListAnswer, 'data' | 'includes'>;
type Includes = LiveOptions['includes'];

/** A single record's answer as a page of a list: the record, and what it included. */
const pageOf = ({ includes, ...document }: DocumentAnswer): Answered => ({
  data: [document as ApiRecord],
  includes,
});

const answerOf = (answers: Answered[]): LiveAnswer => ({
  documents: answers.flatMap((answer) => answer.data),
  included: answers.flatMap((answer) => Object.values(answer.includes ?? {}).flat()),
});
const found = (answer: LiveAnswer): LiveAnswer | undefined => (answer.documents.length > 0 ? answer : undefined);
const byId = (id: string): FilterEntry => ({ '*.meta.id': { equal: id } });

export class LiveRequests {
  readonly #client: ReadApiClient;
  readonly #options: LiveOptions;

  constructor(client: ReadApiClient, options: LiveOptions) {
    this.#client = client;
    this.#options = options;
  }

  /** A list of the source, as `getLiveCollection()` asks for it. */
  async list(request: CollectionRequest): Promise<LiveAnswer> {
    const { aliases, collection, sorting } = this.#options;
    if (aliases) {
      const answer = await this.#aliases(request.includes);
      const start = request.offset ?? 0;
      answer.documents = answer.documents.slice(start, request.limit === undefined ? undefined : start + request.limit);
      return answer;
    }
    const { locale, includes, filters, search, ...given } = request;
    const constraints = this.#constraints(filters);
    const options: ListOptions = {
      ...given,
      ...constraints,
      sorting: given.sorting ?? sorting,
      search: [constraints.search, search].filter(Boolean).join(' ') || undefined,
    };
    // A collection's own definition may filter or sort on localized values too.
    const localeSensitive = Boolean(collection || options.filters || options.sorting || options.search);
    if (locale !== undefined && localeSensitive) return this.#byIds(await this.#ids({ ...options, locale }), includes);
    return this.#list({ ...options, ...this.#full(includes) });
  }

  /** The document with this id, if the source holds it. */
  async byId(id: string): Promise<LiveAnswer | undefined> {
    if (this.#options.aliases) {
      const { documents, included } = await this.#aliases();
      return found({ documents: documents.filter((document) => document.meta.id === id).slice(0, 1), included });
    }
    // One list request finds the document and whether the source holds it.
    if (this.#needsMembership)
      return found(await this.#list({ ...this.#full(), ...this.#constraints([byId(id)]), limit: 1 }));
    return this.#held(await this.#single(() => this.#client.document(id, this.#full())));
  }

  /** The first document of the source whose field has this value in the locale (not for aliases). */
  async byField(field: string, value: string | number | boolean, locale: string): Promise<LiveAnswer | undefined> {
    const filter = { [`*.fields.${field}`]: { equal: value } };
    const [id] = await this.#ids({ ...this.#constraints([filter]), locale, limit: 1 });
    return id === undefined ? undefined : this.#single(() => this.#client.document(id, this.#full()));
  }

  /** The document an alias points to, if the source holds it. */
  async byAlias(alias: string): Promise<LiveAnswer | undefined> {
    const { aliases } = this.#options;
    if (aliases && !aliases.includes(alias)) return undefined;
    const answer = await this.#single(() => this.#client.alias(alias, this.#full()));
    return aliases ? answer : this.#held(answer);
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
    const { contentType, includeTags, excludeTags, search } = this.#options;
    const own: FilterEntry[] = [];
    if (contentType) own.push({ '*.meta.contentType': { equal: contentType } });
    if (includeTags?.length) own.push({ '*.meta.tags': { in: includeTags } });
    if (excludeTags?.length) own.push({ '*.meta.tags': { notIn: excludeTags } });
    const all = andFilters(own, this.#options.filters, filters);
    return { ...(all.length > 0 ? { filters: all } : {}), ...(search ? { search } : {}) };
  }

  /** Whether a document fetched alone must be checked against the source with a list request. */
  get #needsMembership(): boolean {
    const { collection, filters, includeTags, excludeTags, search } = this.#options;
    return Boolean(collection || filters?.length || includeTags?.length || excludeTags?.length || search);
  }

  /** A document fetched alone, if the source holds it: of its content type, and in its list when that says more. */
  async #held(answer: LiveAnswer | undefined): Promise<LiveAnswer | undefined> {
    const { contentType } = this.#options;
    const document = answer?.documents[0];
    const held = this.#needsMembership
      ? document && (await this.#ids({ ...this.#constraints([byId(document.meta.id)]), limit: 1 })).length > 0
      : !contentType || document?.meta.contentType === contentType;
    return held ? answer : undefined;
  }

  /** Every page of a list of the source, as large as the API gives them, in order; or the first `limit` documents. */
  async #list(options: ListOptions): Promise<LiveAnswer> {
    const { collection } = this.#options;
    const list: ListSource = collection ? { collection } : 'documents';
    const pages: Answered[] = [];
    for await (const page of this.#client.pages(list, { ...options, pageSize: options.limit ?? maxPageSize })) {
      pages.push(page);
      if (options.limit !== undefined) break;
    }
    return answerOf(pages);
  }

  /** The ids of a list as it is in one locale, in its order. */
  async #ids(options: ListOptions): Promise<string[]> {
    const answer = await this.#list({ ...options, includes: 0, embedAssets: false, fields: 'meta(id)' });
    return answer.documents.map((document) => document.meta.id);
  }

  /** Documents by id with every locale, in the order given (one that is gone by now is left out). */
  async #byIds(ids: string[], includes: Includes): Promise<LiveAnswer> {
    const chunks: string[][] = [];
    // As many ids in one `in` filter as a page holds.
    for (let start = 0; start < ids.length; start += maxPageSize) chunks.push(ids.slice(start, start + maxPageSize));
    const filtered = (chunk: string[]) =>
      this.#client.documents({
        ...this.#full(includes),
        filters: [{ '*.meta.id': { in: chunk } }],
        limit: chunk.length,
      });
    const answer = answerOf(await Promise.all(chunks.map(filtered)));
    const byIds = new Map(answer.documents.map((document) => [document.meta.id, document]));
    return { documents: ids.flatMap((id) => byIds.get(id) ?? []), included: answer.included };
  }

  /** The documents of every alias of an aliases source, in the order of the option. */
  async #aliases(includes?: Includes): Promise<LiveAnswer> {
    const names = this.#options.aliases ?? [];
    const answers = await Promise.all(names.map((name) => this.#client.alias(name, this.#full(includes))));
    return answerOf(answers.map(pageOf));
  }

  /** A single-record request; a 404 is no document. */
  async #single(send: () => Promise<DocumentAnswer>): Promise<LiveAnswer | undefined> {
    try {
      return answerOf([pageOf(await send())]);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }
}
