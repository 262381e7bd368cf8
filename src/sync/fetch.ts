import type { ReadApiClient } from '../api/client.ts';
import { andFilters, type FilterEntry, type ListOptions } from '../api/query.ts';
import type { ApiRecord, ListAnswer } from '../wire/schemas.ts';
import type { Stamp } from '../model/records.ts';
import { requestOptions, type SyncSource } from './config.ts';
import type { AnsweredPage, Intake } from './intake.ts';
import type { Model, TypeModel } from '../model/records.ts';

/**
 * The requests of a sync. Each feeds what it receives to the intake and returns ids; none
 * keeps state of its own.
 */

/** The mask of an id listing: the stamps a sync compares, and nothing else. */
export const listing = 'meta(id,updatedAt,revision)';

/**
 * The mask of a listing that carries the stamps of the assets its documents embed (asked with
 * `embedAssets`): each asset field of the model, through each locale where it is localized, and
 * through its section where it stands in one (`fields(seo(image(meta(…))))`). It names keys
 * only, no wildcard, so a server that masks the json-mask way answers it. Undefined when the
 * model has no asset field.
 */
export function assetStampsMask(model: Model, localeKeys: readonly string[]): string | undefined {
  /** A key of the mask: an asset field (plain, localized or both, across content types), a section of them, or both. */
  interface Term {
    plain: boolean;
    localized: boolean;
    inner: Map<string, Term>;
  }
  const termIn = (terms: Map<string, Term>, name: string): Term => {
    let term = terms.get(name);
    if (!term) terms.set(name, (term = { plain: false, localized: false, inner: new Map() }));
    return term;
  };
  const add = (terms: Map<string, Term>, fields: TypeModel): void => {
    for (const [name, field] of Object.entries(fields)) {
      if (field.kind === 'section') add(termIn(terms, name).inner, field.fields ?? {});
      if (field.kind !== 'asset') continue;
      const term = termIn(terms, name);
      if (field.localized) term.localized = true;
      else term.plain = true;
    }
  };
  const top = new Map<string, Term>();
  for (const [contentType, fields] of Object.entries(model)) if (contentType !== '_asset') add(top, fields);
  const render = (terms: Map<string, Term>): string[] =>
    [...terms].flatMap(([name, { plain, localized, inner }]) => {
      const parts = [
        ...(plain ? [listing] : []),
        ...(localized ? localeKeys.map((key) => `${key}(${listing})`) : []),
        ...render(inner),
      ];
      return parts.length > 0 ? [`${name}(${parts.join(',')})`] : [];
    });
  const terms = render(top);
  return terms.length > 0 ? `${listing},fields(${terms.join(',')})` : undefined;
}

/**
 * The stamps of the records embedded in the fields of an answered document: plain, localized,
 * inside sections (whichever shape of `locale=all` they came in). A reference left as it is (to
 * an asset the server no longer has) carries no stamps: it is skipped.
 */
export function embeddedStamps(record: { fields?: Record<string, unknown> }): Stamp[] {
  const stamps: Stamp[] = [];
  const take = (value: unknown, depth: number) => {
    if (Array.isArray(value)) {
      for (const item of value) {
        const meta = (item as { meta?: Stamp } | null)?.meta;
        if (typeof meta?.id === 'string' && (meta.updatedAt !== undefined || meta.revision !== undefined))
          stamps.push(meta);
      }
    } else if (value && typeof value === 'object' && depth < maxDepth) {
      // A map of locales, or a section: the arrays are further in.
      for (const inner of Object.values(value)) take(inner, depth + 1);
    }
  };
  for (const value of Object.values(record.fields ?? {})) take(value, 0);
  return stamps;
}

/**
 * How deep `embeddedStamps` looks for lists of assets: a section, a map of locales, and a section in it, with room to
 * spare.
 */
const maxDepth = 6;

/**
 * Runs every task to its end, then throws the first failure: a task left running after a
 * failure could still write to the transaction after it is rolled back.
 */
export async function settleAll<T>(tasks: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(tasks);
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
}

/**
 * Whole documents (every locale) a page of a source's first sync, or a request by id, asks at
 * most (`pageSize` when lower): pages of 1,000 run to megabytes each, and the sync holds several
 * at once. Listings of stamps ask `pageSize`.
 */
const wholePageSize = 250;

const listOf = (source: SyncSource): 'documents' | { collection: string } =>
  source.kind === 'collection' ? { collection: source.name } : 'documents';
export const isMasked = (source: SyncSource) => source.options.fields !== undefined;
/** The stamps of a listing's records (asked with the mask `listing`). */
const stampsIn = (page: ListAnswer): Stamp[] =>
  (page.data as unknown as { meta: Stamp }[]).map((record) => record.meta);
const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

export class Fetcher {
  readonly #client: ReadApiClient;
  readonly #intake: Intake;
  /** Documents a page of a listing of stamps. */
  readonly #pageSize: number;
  /** Whole documents a page or a request by id. */
  readonly #wholePageSize: number;

  constructor(client: ReadApiClient, intake: Intake, pageSize: number) {
    this.#client = client;
    this.#intake = intake;
    this.#pageSize = pageSize;
    this.#wholePageSize = Math.min(pageSize, wholePageSize);
  }

  /**
   * Every page of a source, `wholePageSize` documents a page at most; `progress` hears after
   * each page. Returns the members in order. What they include would come again with every page
   * that references it: the pages are asked without includes, and the closures fetch what the
   * members include by id, each record once. A source keeps its includes when it does not embed
   * assets (its assets come only as includes; the API lists no assets) or has a `fields` mask
   * (which may shape what it includes, with an `includes(…)` scope).
   */
  async full(source: SyncSource, progress: (done: number, total: number) => void): Promise<string[]> {
    const members: string[] = [];
    const options = requestOptions(source);
    const withoutIncludes = source.options.embedAssets !== false && !isMasked(source);
    const pages = { pageSize: this.#wholePageSize, lookahead: 3 }; // three asked ahead keep the server busy
    for await (const page of this.#client.pages(listOf(source), {
      ...options,
      ...(withoutIncludes ? { includes: 0 } : {}),
      ...pages,
    })) {
      members.push(...this.#intake.acceptPage(page, isMasked(source)));
      progress(members.length, page.meta.total);
    }
    return members;
  }

  /** The stamps of a source's members, page by page, in the source's order. */
  async *stamps(source: SyncSource): AsyncGenerator<Stamp[]> {
    const { includes: _includes, embedAssets: _embed, fields: _fields, ...selection } = requestOptions(source);
    for await (const page of this.#client.pages(listOf(source), {
      ...selection,
      fields: listing,
      pageSize: this.#pageSize,
    })) {
      yield stampsIn(page);
    }
  }

  /**
   * The documents of a source changed since a time, without includes: what they include is
   * mostly stored, and what is not is found missing by the closures and fetched then.
   */
  async changedSince(source: SyncSource, since: string): Promise<void> {
    const options = requestOptions(source);
    const filters = andFilters([{ '*.meta.updatedAt': { greaterThanEqual: since } }], options.filters as FilterEntry[]);
    for await (const page of this.#client.pages(listOf(source), {
      ...options,
      includes: 0,
      filters,
      pageSize: this.#pageSize,
    })) {
      this.#intake.acceptPage(page, isMasked(source));
    }
  }

  /** The document an alias points to, with its includes. */
  async alias(source: SyncSource): Promise<string[]> {
    const { includes, embedAssets, fields, locale } = requestOptions(source);
    const answer = (await this.#client.alias(source.name, {
      includes,
      embedAssets,
      fields,
      locale,
    } as ListOptions)) as ApiRecord & AnsweredPage;
    return this.#intake.acceptPage({ data: [answer], includes: answer.includes }, fields !== undefined);
  }

  /** Documents by id (with the options' includes, every locale), in chunks; returns the ids the server had. */
  async byIds(ids: string[], options: ListOptions = { locale: 'all', embedAssets: true }): Promise<Set<string>> {
    const found = new Set<string>();
    await this.#eachById(ids, { ...options, locale: 'all' }, this.#wholePageSize, (page) => {
      for (const id of this.#intake.acceptPage(page, options.fields !== undefined)) found.add(id);
    });
    return found;
  }

  /** Assets by id (every locale), as the API has no list of them; returns the ids the server had. */
  async assets(ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    await this.#eachAsset(ids, { locale: 'all' }, (answer, id) => {
      this.#intake.accept(answer, false);
      found.add(id);
    });
    return found;
  }

  /**
   * The stamps of assets by id, one request each (the API lists no assets); assets the server does not have are absent.
   */
  async assetStamps(ids: string[]): Promise<Stamp[]> {
    const stamps: Stamp[] = [];
    await this.#eachAsset(ids, { fields: listing }, (answer, id) => {
      if (answer.meta?.id === id) stamps.push(answer.meta as Stamp);
    });
    return stamps;
  }

  /**
   * The stamps of the assets that documents embed: the documents by id, with `embedAssets` and a
   * mask that keeps the embedded assets' stamps only (`assetStampsMask`). One listing answers for
   * many assets, where asking each asset alone costs a request each.
   */
  async embeddedAssetStamps(documents: string[], mask: string): Promise<Stamp[]> {
    const stamps: Stamp[] = [];
    await this.#eachById(documents, { embedAssets: true, locale: 'all', fields: mask }, this.#pageSize, (page) => {
      for (const record of page.data as { fields?: Record<string, unknown> }[]) stamps.push(...embeddedStamps(record));
    });
    return stamps;
  }

  /** The stamps of documents by id (an id listing); documents the server does not have are absent. */
  async stampsOf(ids: string[]): Promise<Stamp[]> {
    const stamps: Stamp[] = [];
    await this.#eachById(ids, { fields: listing }, this.#pageSize, (page) => {
      stamps.push(...stampsIn(page));
    });
    return stamps;
  }

  /** Documents by id, `size` ids a request, asked together; `take` hears each answer as it comes. */
  async #eachById(
    ids: readonly string[],
    options: ListOptions,
    size: number,
    take: (page: ListAnswer) => void,
  ): Promise<void> {
    await settleAll(
      chunks(ids, size).map(async (chunk) => {
        take(
          (await this.#client.documents({
            ...options,
            filters: [{ '*.meta.id': { in: chunk } }],
            limit: chunk.length,
            offset: 0,
          })) as ListAnswer,
        );
      }),
    );
  }

  /**
   * Assets by id (`/assets/<id>`), one request each; `take` hears each answer with the id asked. An asset the server
   * does not have is skipped.
   */
  async #eachAsset(
    ids: readonly string[],
    options: ListOptions,
    take: (answer: ApiRecord, id: string) => void,
  ): Promise<void> {
    await settleAll(
      ids.map(async (id) => {
        let answer: ApiRecord;
        try {
          answer = (await this.#client.asset(id, options)) as ApiRecord;
        } catch (error) {
          if ((error as { code?: string }).code === 'not_found') return;
          throw error;
        }
        take(answer, id);
      }),
    );
  }
}
