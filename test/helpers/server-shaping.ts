import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import { doc, nordic, repository } from './forms.ts';
import { fixture } from './server.ts';

/**
 * The server of the shaping tests (test/server-shaping*.test.ts; their asks are `asks` of forms.ts): besides
 * the shared `tiny` fixture, the server holds `store`, built here with one value of each sortable
 * type per item, and `nordic`, with a Swedish locale whose collation puts Ä after Z.
 */

/** Items 9, 10 and 11 hold one value of each type; item 12 holds none. Ids 9 < 10 < 11 only as numbers. */
const store = {
  repository: repository('store'),
  contentTypes: [
    {
      apiId: 'item',
      fields: [
        { apiId: 'body', type: 'richtext' },
        { apiId: 'price', type: 'number' },
        { apiId: 'day', type: 'date' },
        { apiId: 'done', type: 'boolean' },
        { apiId: 'spot', type: 'location' },
        { apiId: 'kind', type: 'select' },
        { apiId: 'multi', type: 'select' },
        { apiId: 'shade', type: 'color' },
        { apiId: 'link', type: 'relation' },
        { apiId: 'pics', type: 'asset' },
        { apiId: 'extra', type: 'json' },
      ],
    },
  ],
  documents: [
    doc(
      '9',
      'item',
      {
        body: { html: '<p>beta</p>', plain: 'beta' },
        price: 10,
        day: '2024-05-01',
        done: true,
        spot: { lat: 10, lng: 5 },
        kind: 'a',
        multi: ['a', 'c'],
        shade: '#00ff00',
      },
      { revision: 3, createdAt: '2024-01-03T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' },
    ),
    doc(
      '10',
      'item',
      {
        body: { html: '<p>alpha</p>', plain: 'alpha' },
        price: 2,
        day: '2024-05-01T12:00:00.000Z',
        done: false,
        spot: { lat: 10, lng: 1 },
        kind: 'c',
        multi: ['a', 'b'],
        shade: '#0000ff',
      },
      { revision: 1, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-03-01T00:00:00.000Z' },
    ),
    doc(
      '11',
      'item',
      {
        body: { html: '<p>Gamma</p>', plain: 'Gamma' },
        price: 9,
        day: '2023-01-01',
        done: true,
        spot: { lat: -5, lng: 100 },
        kind: 'b',
        multi: ['a'],
        shade: '#ff0000',
      },
      { revision: 2, createdAt: '2024-01-02T00:00:00.000Z', updatedAt: '2024-01-02T00:00:00.000Z' },
    ),
    doc(
      '12',
      'item',
      {},
      { revision: 10, createdAt: '2023-12-31T00:00:00.000Z', updatedAt: '2024-01-05T00:00:00.000Z' },
    ),
  ],
};

/** Serves `tiny` with `store` and `nordic`. */
export function startShapingServer(): Promise<ReadApiServer> {
  return startServer({ paths: [fixture('tiny.json')], snapshots: [store, nordic], watch: false });
}
