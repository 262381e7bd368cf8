import { expect } from 'vitest';
import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import { doc, everyWay, nordic, type Options, repository } from './forms.ts';
import { fixture, getJson } from './server.ts';

/**
 * The server and the helpers shared by the filter tests (test/server-filters*.test.ts): besides
 * the shared `tiny` fixture, three small repositories are built here: `ledger` (20-digit ids,
 * revisions, a tagged collection), `blanks` (empty values of every kind) and `clock` (documents a
 * day apart), served beside `nordic` (a Swedish locale, whose collation puts Ä after Z).
 */

const ledger = {
  repository: repository('ledger'),
  contentTypes: [{ apiId: 'entry', fields: [{ apiId: 'amount', type: 'number' }] }],
  documents: [
    // Two ids a double cannot tell apart.
    doc('18446744073709551614', 'entry', { amount: 1 }, { revision: 3, tags: ['a'] }),
    doc('18446744073709551615', 'entry', { amount: 2 }, { revision: 1, tags: ['b'] }),
    doc('9', 'entry', { amount: 3 }, { revision: 2, tags: ['a', 'b'] }),
  ],
  collections: [{ apiId: 'tagged', includeTags: ['a'] }],
};

const blanks = {
  repository: repository('blanks'),
  contentTypes: [
    {
      apiId: 'thing',
      fields: [
        { apiId: 'note', type: 'text' },
        { apiId: 'choices', type: 'select' },
        { apiId: 'data', type: 'json' },
        { apiId: 'body', type: 'richtext' },
      ],
    },
  ],
  documents: [
    doc('1', 'thing', { note: null, choices: [], data: {}, body: { html: '', plain: '' } }),
    doc('2', 'thing', { note: '', choices: ['a'], data: null, body: { html: '<p>x</p>', plain: 'x' } }),
    doc('3', 'thing', { note: 'n', data: { k: 1 } }),
  ],
};

/** Twelve documents updated a day apart in March (two on the 6th), created a day apart in February in the other order. */
const clock = {
  repository: repository('clock'),
  contentTypes: [{ apiId: 'tick', fields: [{ apiId: 'n', type: 'number' }] }],
  documents: Array.from({ length: 12 }, (_, i) => {
    const day = (month: number, n: number) => `2024-0${month}-${String(n).padStart(2, '0')}T00:00:00.000Z`;
    return doc(
      String(i + 1),
      'tick',
      { n: i + 1 },
      { updatedAt: day(3, i === 6 ? 6 : i + 1), createdAt: day(2, 12 - i) },
    );
  }),
};

/** Serves `tiny` with `ledger`, `blanks`, `nordic` and `clock`. */
export function startFiltersServer(): Promise<ReadApiServer> {
  return startServer({ paths: [fixture('tiny.json')], snapshots: [ledger, blanks, nordic, clock], watch: false });
}

export const byId = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : 1);

export const where = (...filters: object[]) => ({ filters });

/** The asks of the filter tests, against the server `server()` answers with once it is started. */
export function filterAsks(server: () => ReadApiServer) {
  /** Asks a list route three ways; all must answer the same 200. */
  async function list(path: string, options: Options): Promise<any> {
    const [brackets, query, post] = await everyWay(server(), path, options);
    expect(brackets.status, JSON.stringify(brackets.body)).toBe(200);
    expect(query.body, 'query= JSON').toEqual(brackets.body);
    expect(post, 'a list route takes a POST body').toBeDefined();
    expect(post!.body, 'POST body').toEqual(brackets.body);
    return brackets.body;
  }

  /** The ids of the documents that match, in numeric order. */
  async function matching(options: Options, path = '/tiny/documents'): Promise<string[]> {
    const body = await list(path, options);
    expect(body.meta.total).toBe(body.data.length);
    return body.data.map((d: any) => d.meta.id).sort(byId);
  }

  /** A bracketed query string as written, sent as it is. */
  async function raw(path: string, query: string): Promise<string[]> {
    const { status, body } = await getJson(server(), `${path}?${query}`);
    expect(status, JSON.stringify(body)).toBe(200);
    return body.data.map((d: any) => d.meta.id).sort(byId);
  }

  return { list, matching, raw };
}
