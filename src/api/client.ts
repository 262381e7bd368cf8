import { z } from 'zod';
import {
  type ApiRecord,
  type AssetAnswer,
  type DocumentAnswer,
  documentAnswerSchema,
  isObject,
  type ListAnswer,
  listAnswerSchema,
  type MaskedDocumentAnswer,
  maskedDocumentAnswerSchema,
  type MaskedListAnswer,
  maskedListAnswerSchema,
  recordSchema,
  type RepositoryAnswer,
  repositoryAnswerSchema,
} from '../wire/schemas.ts';
import { type ListOptions, optionsToJson, type RecordOptions, serializeQuery } from './query.ts';
import { Transport, type TransportOptions } from './transport.ts';

/**
 * Full list pages are the big ones (a page of 1000 documents with includes is several MB): the
 * wire schema's `fields` record copies each record's fields key by key, most of the cost of
 * validating a page; here they are checked to be an object and kept (see docs/decisions.md).
 */
const listRecordSchema = recordSchema.extend({
  fields: z.custom<ApiRecord['fields']>(isObject, 'expected an object of fields'),
});
export const fastListAnswerSchema: z.ZodType<ListAnswer> = listAnswerSchema.extend({
  data: z.array(listRecordSchema),
  includes: z.record(z.string(), z.array(listRecordSchema)).optional(),
});

/**
 * Masked lists are the many ones (a sync lists every member's stamps, a thousand a page): their
 * records are checked by hand for what `maskedRecordSchema` checks, and kept as they are, as
 * zod's copy of each record and its meta costs a warm sync of 10,000 documents a fifth of its
 * time (see docs/decisions.md); a page with a record that fails is checked again by zod, to
 * name the place.
 */
const metaTypes: Record<string, string> = {
  id: 'string',
  contentType: 'string',
  repository: 'string',
  revision: 'number',
  createdAt: 'string',
  updatedAt: 'string',
};
function isMaskedRecord(value: unknown): boolean {
  if (!isObject(value)) return false;
  const { fields, meta } = value as { fields?: unknown; meta?: Record<string, unknown> };
  if (fields !== undefined && !isObject(fields)) return false;
  if (meta === undefined) return true;
  if (!isObject(meta)) return false;
  for (const key in meta) {
    const type = metaTypes[key];
    if (type !== undefined && meta[key] !== undefined && typeof meta[key] !== type) return false;
    if (key === 'tags' && meta.tags !== undefined && !isStringArray(meta.tags)) return false;
  }
  return true;
}
const isStringArray = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string');
const listShape = maskedListAnswerSchema.omit({ data: true });
export const fastMaskedListAnswerSchema = z.unknown().transform((value, ctx): MaskedListAnswer => {
  const data = (value as { data?: unknown } | null)?.data;
  const head = Array.isArray(data) && data.every(isMaskedRecord) ? listShape.safeParse(value) : undefined;
  if (head?.success) return { ...head.data, data } as MaskedListAnswer;
  const full = maskedListAnswerSchema.safeParse(value);
  if (full.success) return full.data;
  for (const issue of full.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
  return z.NEVER;
});

export const defaultBaseUrl = 'https://api.cmft.io/v1';
/** The largest page the Read API answers. */
export const maxPageSize = 1000;
/** URLs longer than this go to the list endpoints as a POST with a JSON body. */
const defaultMaxUrlLength = 8192;

export interface ClientOptions extends Omit<TransportOptions, 'baseUrl'> {
  /** The repository's API id (the `<repoName>` of every path). */
  repository: string;
  /** Default `https://api.cmft.io/v1`; the local server's URL for offline work and tests. */
  baseUrl?: string;
  /** How options travel in the URL: bracket parameters (default) or the `query=` JSON the official SDKs send. */
  notation?: 'brackets' | 'json';
  /** List requests whose URL would be longer go as POST with a JSON body. Default 8192. */
  maxUrlLength?: number;
}

/** Where a list comes from: every document, or a collection. */
export type ListSource = 'documents' | { collection: string };

type Masked<O, Full, Partial> = O extends { fields: string } ? Partial : Full;

export interface PageOptions extends ListOptions {
  /** Documents per page, up to 1000 (the default). */
  pageSize?: number;
  /** Pages requested ahead of the one being read. Default 8; the shared concurrency limit still applies. */
  lookahead?: number;
}

/**
 * A client for one repository of the Read API.
 *
 * @example
 * const client = createClient({ repository: 'demo', apiKey: process.env.CMFT_API_KEY! });
 * const page = await client.collection('posts', { locale: 'all', includes: 1, limit: 10 });
 * for await (const document of client.all({ collection: 'posts' }, { locale: 'all' })) console.log(document.meta.id);
 */
export class ReadApiClient {
  readonly repositoryId: string;
  readonly transport: Transport;
  readonly #notation: 'brackets' | 'json';
  readonly #maxUrlLength: number;

  constructor(options: ClientOptions) {
    if (!options.repository)
      throw new TypeError('repository is required: the API id of the repository, as in /v1/<repository>/documents');
    this.repositoryId = options.repository;
    this.transport = new Transport({ ...options, baseUrl: options.baseUrl ?? defaultBaseUrl });
    this.#notation = options.notation ?? 'brackets';
    this.#maxUrlLength = options.maxUrlLength ?? defaultMaxUrlLength;
  }

  #path(...segments: string[]): string {
    return `/${[this.repositoryId, ...segments].map(encodeURIComponent).join('/')}`;
  }

  #get<T>(path: string, options: RecordOptions, schema: z.ZodType<T>): Promise<T> {
    return this.transport.request({ method: 'GET', path, query: serializeQuery(options, this.#notation), schema });
  }

  #list<T>(path: string, options: ListOptions, schema: z.ZodType<T>): Promise<T> {
    const query = serializeQuery(options, this.#notation);
    const length = this.transport.baseUrl.length + path.length + 1 + query.length;
    if (length <= this.#maxUrlLength) return this.transport.request({ method: 'GET', path, query, schema });
    return this.transport.request({ method: 'POST', path, body: JSON.stringify(optionsToJson(options)), schema });
  }

  /** `GET /v1/<repo>`: the repository, with its locales where the server lists them. */
  repository(): Promise<RepositoryAnswer> {
    return this.transport.request({ method: 'GET', path: this.#path(), schema: repositoryAnswerSchema });
  }

  /** `GET /v1/<repo>/documents`: one page of every document. */
  documents<O extends ListOptions>(options?: O): Promise<Masked<O, ListAnswer, MaskedListAnswer>> {
    return this.#list(
      this.#path('documents'),
      options ?? {},
      options?.fields ? fastMaskedListAnswerSchema : fastListAnswerSchema,
    ) as never;
  }

  /** `GET /v1/<repo>/collections/<apiId>`: one page of a collection. */
  collection<O extends ListOptions>(apiId: string, options?: O): Promise<Masked<O, ListAnswer, MaskedListAnswer>> {
    return this.#list(
      this.#path('collections', apiId),
      options ?? {},
      options?.fields ? fastMaskedListAnswerSchema : fastListAnswerSchema,
    ) as never;
  }

  /** `GET /v1/<repo>/documents/<id>`. */
  document<O extends RecordOptions>(id: string, options?: O): Promise<Masked<O, DocumentAnswer, MaskedDocumentAnswer>> {
    return this.#get(
      this.#path('documents', id),
      options ?? {},
      options?.fields ? maskedDocumentAnswerSchema : documentAnswerSchema,
    ) as never;
  }

  /** `GET /v1/<repo>/alias/<apiId>`: the document the alias points to now. */
  alias<O extends RecordOptions>(apiId: string, options?: O): Promise<Masked<O, DocumentAnswer, MaskedDocumentAnswer>> {
    return this.#get(
      this.#path('alias', apiId),
      options ?? {},
      options?.fields ? maskedDocumentAnswerSchema : documentAnswerSchema,
    ) as never;
  }

  /** `GET /v1/<repo>/assets/<id>`. */
  asset<O extends RecordOptions>(id: string, options?: O): Promise<Masked<O, AssetAnswer, MaskedDocumentAnswer>> {
    return this.#get<unknown>(
      this.#path('assets', id),
      options ?? {},
      options?.fields ? maskedDocumentAnswerSchema : recordSchema,
    ) as never;
  }

  #page(source: ListSource, options: ListOptions): Promise<ListAnswer> {
    return (
      source === 'documents' ? this.documents(options) : this.collection(source.collection, options)
    ) as Promise<ListAnswer>;
  }

  /**
   * Every page of a list, in order. The first page tells the total, and the page size the
   * server keeps to when it caps pages lower than asked; the rest are fetched concurrently
   * (within the shared limit), a bounded number ahead of the reader.
   */
  async *pages(source: ListSource, options: PageOptions = {}): AsyncGenerator<ListAnswer> {
    const { pageSize = maxPageSize, lookahead = 8, ...rest } = options;
    if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > maxPageSize)
      throw new RangeError(`pageSize must be a whole number from 1 to ${maxPageSize}, got ${pageSize}`);
    const start = rest.offset ?? 0;
    const first = await this.#page(source, { ...rest, limit: pageSize, offset: start });
    yield first;
    // A server that caps pages lower than asked says so in `meta.limit`: the pages step by that.
    const step = first.meta.limit > 0 && first.meta.limit < pageSize ? first.meta.limit : pageSize;
    const offsets: number[] = [];
    for (let offset = start + step; offset < first.meta.total; offset += step) offsets.push(offset);
    const inFlight: Promise<ListAnswer>[] = [];
    let next = 0;
    const refill = () => {
      while (inFlight.length < lookahead && next < offsets.length) {
        const page = this.#page(source, { ...rest, limit: step, offset: offsets[next++]! });
        page.catch(() => {}); // observed when its turn comes; avoids an unhandled rejection meanwhile
        inFlight.push(page);
      }
    };
    refill();
    while (inFlight.length > 0) {
      const page = await inFlight.shift()!;
      refill();
      yield page;
    }
  }

  /** Every document of a list, in order (see `pages`). */
  async *all(source: ListSource, options: PageOptions = {}): AsyncGenerator<ApiRecord> {
    for await (const page of this.pages(source, options)) yield* page.data;
  }
}

/** Creates a client for one repository; see `ClientOptions`. */
export function createClient(options: ClientOptions): ReadApiClient {
  return new ReadApiClient(options);
}
