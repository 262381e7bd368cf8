import { expect } from 'vitest';
import type { ReadApiServer } from '../../src/server/index.ts';
import { getJson, tinyKey } from './server.ts';

/**
 * Small snapshots written inline, and the three forms the server takes options in (bracketed
 * parameters, `query=` JSON, a POST body on the list routes), for tests that must get the same
 * answer in every form.
 */

export type Options = Record<string, unknown>;

const stamp = '2024-01-01T00:00:00.000Z';

/** A snapshot document; `meta` overrides the defaults. */
export const doc = (id: string, contentType: string, fields: object, meta: object = {}) => ({
  fields,
  meta: { id, contentType, revision: 1, tags: [], createdAt: stamp, updatedAt: stamp, ...meta },
});

/** A snapshot's repository, readable with the tiny fixture's key. */
export const repository = (apiId: string, locales: object[] = [{ key: 'en_US' }]) => ({
  id: '1',
  apiId,
  name: apiId,
  defaultLocale: 'en_US',
  locales,
  apiKeys: [tinyKey], // one key for every repository keeps the requests short
});

/** A repository with a Swedish locale, whose collation puts Ä after Z. */
export const nordic = {
  repository: repository('nordic', [{ key: 'en_US' }, { key: 'sv_SE', fallback: 'en_US' }]),
  contentTypes: [{ apiId: 'word', fields: [{ apiId: 'w', type: 'text' }] }],
  documents: [doc('1', 'word', { w: 'Zebra' }), doc('2', 'word', { w: 'Äpple' }), doc('3', 'word', { w: 'Apple' })],
};

/** Options as bracketed parameters: objects nest, lists of objects are indexed, lists of values are joined with ",". */
export function bracketed(options: Options): string {
  const pairs: string[] = [];
  const walk = (name: string, value: unknown): void => {
    if (Array.isArray(value) && value.some((v) => typeof v === 'object' && v !== null))
      value.forEach((v, i) => {
        walk(`${name}[${i}]`, v);
      });
    else if (Array.isArray(value)) pairs.push(`${name}=${encodeURIComponent(value.join(','))}`);
    else if (typeof value === 'object' && value !== null)
      for (const [k, v] of Object.entries(value)) walk(`${name}[${k}]`, v);
    else pairs.push(`${name}=${encodeURIComponent(String(value))}`);
  };
  for (const [name, value] of Object.entries(options)) walk(name, value);
  return pairs.join('&');
}

const isList = (path: string) => /\/(documents|collections\/[^/]+)$/.test(path);

/** Sends the options in every form the route takes: brackets and query= everywhere, a POST body on the list routes. */
export function everyWay(server: ReadApiServer, path: string, options: Options) {
  return Promise.all([
    getJson(server, `${path}?${bracketed(options)}`),
    getJson(server, `${path}?query=${encodeURIComponent(JSON.stringify(options))}`),
    ...(isList(path)
      ? [
          getJson(server, path, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(options),
          }),
        ]
      : []),
  ]);
}

/** Sends in every form; all must be refused with a 400. Returns the first message. */
export async function refusedEveryWay(server: ReadApiServer, path: string, options: Options): Promise<string> {
  const answers = await everyWay(server, path, options);
  for (const answer of answers) {
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(answer.body.error.code).toBe('bad_request');
  }
  return answers[0]!.body.message;
}

/** The ids of records as answered. */
export const idsOf = (records: any[]): string[] => records.map((r) => r.meta.id);

/** The ids in each include group of an answer. */
export const includedIds = (body: any): Record<string, string[]> =>
  Object.fromEntries(Object.entries(body.includes ?? {}).map(([name, records]) => [name, idsOf(records as any[])]));

/** The asks of the server tests, against the server `server()` answers with once it is started. */
export function asks(server: () => ReadApiServer) {
  /** Asks in every form the route takes; all must answer the same 200. */
  async function ask(path: string, options: Options): Promise<any> {
    const [first, ...others] = await everyWay(server(), path, options);
    expect(first!.status, JSON.stringify(first!.body)).toBe(200);
    others.forEach((other, i) => {
      expect(other.body, ['query= JSON', 'POST body'][i]).toEqual(first!.body);
    });
    return first!.body;
  }

  /** Asks in every form; all must be refused with a 400. Returns the first message. */
  const refused = (path: string, options: Options): Promise<string> => refusedEveryWay(server(), path, options);

  /** A query string as written, sent as it is; it must answer 200. */
  async function raw(path: string, query: string): Promise<any> {
    const { status, body } = await getJson(server(), `${path}?${query}`);
    expect(status, JSON.stringify(body)).toBe(200);
    return body;
  }

  return { ask, refused, raw };
}
