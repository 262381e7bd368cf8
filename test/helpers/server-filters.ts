import { expect } from 'vitest';
import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import { asks, doc, idsOf, nordic, type Options, repository } from './forms.ts';
import { fixture } from './server.ts';

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

/** The asks of the filter tests (see `asks`), against the server `server()` answers with once it is started. */
export function filterAsks(server: () => ReadApiServer) {
  const { ask, refused, raw } = asks(server);
  const sortedIds = (body: any): string[] => idsOf(body.data).sort(byId);

  /** The ids of the documents that match, in numeric order. */
  async function matching(options: Options, path = '/tiny/documents'): Promise<string[]> {
    const body = await ask(path, options);
    expect(body.meta.total).toBe(body.data.length);
    return sortedIds(body);
  }

  return {
    /** Asks a list route in every form; all must answer the same 200. */
    list: ask,
    matching,
    /** Asks in every form; all must be refused with a 400. Returns the first message. */
    refused: (options: Options, path = '/tiny/documents') => refused(path, options),
    /** The ids a bracketed query string, sent as it is, answers, in numeric order. */
    raw: async (path: string, query: string) => sortedIds(await raw(path, query)),
  };
}
