import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import { fixture, tinyKey } from './server.ts';

/**
 * What the route, option, locale and error tests of the server share: two repositories served
 * over HTTP, the hand-written `tiny` fixture and `shelf`, built below, with more documents than
 * the largest page and a field with no value in the default locale; and `call`, a request with
 * its JSON answer parsed.
 */

export const shelfKey = 'shelf-key';
export const bookCount = 1005;

/** `shelf`: 1005 books, created one minute apart, so book i is `meta.id` 1000+i and the newest comes first. */
function shelfSnapshot(): object {
  const stamp = (minutes: number) => new Date(Date.UTC(2024, 0, 1) + minutes * 60_000).toISOString();
  const books = Array.from({ length: bookCount }, (_, i) => ({
    fields: { number: i, ...(i === 0 ? { motto: { de_CH: 'Grüezi' } } : {}) },
    meta: {
      id: String(1000 + i),
      contentType: 'book',
      revision: 1,
      tags: [],
      createdAt: stamp(i),
      updatedAt: stamp(i),
    },
  }));
  return {
    repository: {
      id: '800000000000000000',
      apiId: 'shelf',
      name: 'Shelf',
      defaultLocale: 'en_US',
      locales: [{ key: 'en_US' }, { key: 'de_DE', fallback: 'en_US' }, { key: 'de_CH', fallback: 'de_DE' }],
      apiKeys: [shelfKey],
    },
    contentTypes: [
      {
        apiId: 'book',
        fields: [
          { apiId: 'number', type: 'number' },
          { apiId: 'motto', type: 'text', localized: true },
        ],
      },
    ],
    documents: books,
  };
}

/** Serves `tiny` and `shelf`. */
export const startRoutesServer = (): Promise<ReadApiServer> =>
  startServer({ paths: [fixture('tiny.json')], snapshots: [shelfSnapshot()], watch: false });

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

export interface CallOptions {
  method?: string;
  /** The Authorization header; `null` sends none. Default: the tiny key. */
  authorization?: string | null;
  headers?: Record<string, string>;
  /** A JSON body (objects are serialised), for POST. */
  body?: unknown;
}

/** `call` sends a request to a path under `/v1` of the server and parses the JSON answer, if any; `post` sends a JSON body. */
export function callsTo(server: () => ReadApiServer) {
  const call = async (path: string, options: CallOptions = {}): Promise<Answer> => {
    const { method = 'GET', authorization = tinyKey, headers = {}, body } = options;
    const response = await fetch(`${server().url}${path}`, {
      method,
      headers: {
        ...(authorization === null ? {} : { authorization }),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined };
  };
  const post = (path: string, body: unknown, options: CallOptions = {}) =>
    call(path, { ...options, method: 'POST', body });
  return { call, post };
}

/** `?query=` with the options object as URI-encoded JSON, as the official SDKs send it. */
export const query = (options: object): string => `query=${encodeURIComponent(JSON.stringify(options))}`;

export const ids = (answer: Answer): string[] => answer.body.data.map((record: any) => record.meta.id);

/** Tiny's documents in the default order: `meta.createdAt` descending, ties on `meta.id` descending. */
export const tinyOrder = ['103', '102', '101', '100', '201', '200'];
