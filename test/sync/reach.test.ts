import { describe, expect, it } from 'vitest';
import type { Node } from '../../src/cache/records.ts';
import { planSources } from '../../src/sync/plan.ts';
import { includeDepth, reach } from '../../src/sync/reach.ts';
import type { SyncSource } from '../../src/sync/config.ts';

/**
 * The include walk (spec §6, worked out from stored references) and the plan phase, without a
 * network: nodes are given as a map, and every batch the walk reads is recorded.
 */

const node = (id: string, contentType: string, ...refs: [string, string, boolean?][]): Node => ({
  id,
  contentType,
  digest: `d${id}`,
  references: refs.map(([field, target, asset]) => ({ field, id: target, asset: asset === true })),
});

/** a1 → b1 → c1 → a1 (a cycle), a1 embeds x1; b1 embeds x2 and a missing asset x9; a1 → missing m1. */
const graph = new Map(
  [
    node('a1', 'article', ['related', 'b1'], ['cover', 'x1', true], ['related', 'm1']),
    node('b1', 'article', ['author', 'c1'], ['cover', 'x2', true], ['gallery', 'x9', true]),
    node('c1', 'author', ['favourite', 'a1']),
    node('x1', '_asset'),
    node('x2', '_asset'),
  ].map((n) => [n.id, n]),
);

function reader() {
  const batches: string[][] = [];
  return {
    batches,
    read: (ids: Iterable<string>) => {
      const list = [...ids];
      batches.push(list);
      return new Map(list.filter((id) => graph.has(id)).map((id) => [id, graph.get(id)!]));
    },
  };
}

describe('reach', () => {
  it('with includes 0 takes the members and, under embedAssets, their assets', () => {
    const { read } = reader();
    const { nodes, missing } = reach(['a1'], { includes: 0, embedAssets: true }, read);
    expect([...nodes.keys()].sort()).toEqual(['a1', 'x1']);
    expect(missing).toEqual([]);
  });

  it('follows references level by level, with the assets of every record reached, reading each level in one batch', () => {
    const { read, batches } = reader();
    const { nodes, missing } = reach(['a1'], { includes: 1, embedAssets: true }, read);
    expect([...nodes.keys()].sort()).toEqual(['a1', 'b1', 'x1', 'x2']);
    expect(missing).toEqual([
      { from: 'a1', field: 'related', id: 'm1' },
      { from: 'b1', field: 'gallery', id: 'x9' },
    ]);
    expect(batches).toEqual([['a1'], ['x1'], ['b1', 'm1'], ['x2', 'x9']]);
  });

  it('goes round a cycle once', () => {
    const { read } = reader();
    expect([...reach(['a1'], { includes: 5, embedAssets: true }, read).nodes.keys()].sort()).toEqual([
      'a1',
      'b1',
      'c1',
      'x1',
      'x2',
    ]);
  });

  it('follows assets as references without embedAssets', () => {
    const { read } = reader();
    expect([...reach(['b1'], { includes: 1, embedAssets: false }, read).nodes.keys()].sort()).toEqual([
      'b1',
      'c1',
      'x2',
    ]);
  });

  it('follows a field map: only the fields named, and of the content types named', () => {
    const { read } = reader();
    const along = (includes: Record<string, unknown>) =>
      [...reach(['a1'], { includes: includes as never, embedAssets: true }, read).nodes.keys()].sort();
    expect(along({ '*.fields.related': { '*.fields.author': 1 } })).toEqual(['a1', 'b1', 'c1', 'x1', 'x2']);
    expect(along({ '*.fields.related': { 'author.fields.author': 1 } })).toEqual(['a1', 'b1', 'x1', 'x2']);
    expect(along({ 'author.fields.related': 1 })).toEqual(['a1', 'x1']);
  });

  it('skips members that do not exist', () => {
    const { read } = reader();
    expect([...reach(['gone', 'c1'], { includes: 0, embedAssets: true }, read).nodes.keys()]).toEqual(['c1']);
  });

  it('measures how deep includes go', () => {
    expect(includeDepth(undefined)).toBe(0);
    expect(includeDepth(3)).toBe(3);
    expect(includeDepth({ '*.fields.a': 1, '*.fields.b': { '*.fields.c': { '*.fields.d': 1 } } })).toBe(3);
  });
});

describe('plan', () => {
  const source = (kind: SyncSource['kind'], name: string, fingerprint = 'f1'): SyncSource => ({
    key: `${kind}:${name}`,
    kind,
    name,
    options: {},
    fingerprint,
  });
  const stored = new Map([
    [
      'collection:posts',
      {
        key: 'collection:posts',
        kind: 'collection' as const,
        name: 'posts',
        fingerprint: 'f1',
        syncedAt: '2024-01-01T00:00:00.000Z',
      },
    ],
    [
      'query:authors',
      {
        key: 'query:authors',
        kind: 'query' as const,
        name: 'authors',
        fingerprint: 'old',
        syncedAt: '2024-01-01T00:00:00.000Z',
      },
    ],
  ]);

  it('lists a source stored with the same options, fetches any other in full, and asks aliases again', () => {
    const plans = planSources(
      [source('collection', 'posts'), source('query', 'authors'), source('collection', 'new'), source('alias', 'home')],
      stored,
      false,
    );
    expect(plans.map((plan) => [plan.source.key, plan.how, plan.syncedAt])).toEqual([
      ['collection:posts', 'incremental', '2024-01-01T00:00:00.000Z'],
      ['query:authors', 'full', undefined],
      ['collection:new', 'full', undefined],
      ['alias:home', 'alias', undefined],
    ]);
  });

  it('fetches every source in full in a fresh sync', () => {
    expect(planSources([source('collection', 'posts')], stored, true).map((plan) => plan.how)).toEqual(['full']);
  });
});
