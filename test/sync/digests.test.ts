import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../helpers/random.ts';
import type { IncludeMap } from '../../src/api/query.ts';
import type { Node } from '../../src/cache/records.ts';
import { affectedBy, dependencyDigests } from '../../src/sync/digests.ts';
import type { IncludeOptions } from '../../src/sync/reach.ts';

/**
 * Dependency digests without a network: a member's digest changes exactly when the member or a
 * record its includes reach from it changes, and working out only the members `affectedBy` a
 * change gives what working out every member gives (seeded random graphs and changes).
 */

type Graph = Map<string, Node>;

const node = (id: string, digest: string, ...refs: [string, string, boolean?][]): Node => ({
  id,
  contentType: id.startsWith('x') ? '_asset' : id.startsWith('p') ? 'person' : 'article',
  digest,
  references: refs.map(([field, target, asset]) => ({ field, id: target, asset: asset === true })),
});
const graphOf = (...nodes: Node[]): Graph => new Map(nodes.map((n) => [n.id, n]));
const level = (includes: number, embedAssets = true): IncludeOptions => ({ includes, embedAssets });

describe('a dependency digest', () => {
  const base = [
    node('a', '1', ['related', 'b'], ['cover', 'x', true]),
    node('b', '1', ['author', 'p']),
    node('p', '1'),
    node('x', '1'),
  ];
  const digestOf = (nodes: Node[], options: IncludeOptions, id = 'a') =>
    dependencyDigests([id], options, graphOf(...nodes)).get(id);

  it('changes with the member, its assets, and what its include levels reach, and with nothing further', () => {
    const before = digestOf(base, level(1));
    const edit = (id: string) => base.map((n) => (n.id === id ? { ...n, digest: '2' } : n));
    expect(digestOf(edit('a'), level(1))).not.toBe(before);
    expect(digestOf(edit('x'), level(1))).not.toBe(before); // an embedded asset
    expect(digestOf(edit('b'), level(1))).not.toBe(before); // one level away
    expect(digestOf(edit('p'), level(1))).toBe(before); // two levels away, beyond includes 1
    expect(digestOf(edit('p'), level(2))).not.toBe(digestOf(base, level(2)));
  });

  it('changes when a reference to a missing record is met by the record', () => {
    const withoutB = base.filter((n) => n.id !== 'b');
    expect(digestOf(withoutB, level(1))).not.toBe(digestOf(base, level(1)));
  });

  it('does not depend on the order references are stored in, but on which records they reach', () => {
    const reordered = [node('a', '1', ['cover', 'x', true], ['related', 'b']), ...base.slice(1)];
    expect(digestOf(reordered, level(1))).toBe(digestOf(base, level(1)));
  });

  it('follows a field map along its fields only', () => {
    const map = { '*.fields.related': { '*.fields.author': 1 } } as IncludeMap;
    const before = digestOf(base, { includes: map, embedAssets: true });
    expect(
      digestOf(
        base.map((n) => (n.id === 'p' ? { ...n, digest: '2' } : n)),
        { includes: map, embedAssets: true },
      ),
    ).not.toBe(before);
    const other = { '*.fields.other': 1 } as IncludeMap;
    expect(
      digestOf(
        base.map((n) => (n.id === 'b' ? { ...n, digest: '2' } : n)),
        { includes: other, embedAssets: true },
      ),
    ).toBe(digestOf(base, { includes: other, embedAssets: true }));
  });
});

/** A random graph of articles, people and assets, with references of every kind and some to missing records. */
function randomGraph(random: () => number, size: number): Graph {
  const ids = [
    ...Array.from({ length: size }, (_, i) => `a${i}`),
    ...Array.from({ length: size / 4 }, (_, i) => `p${i}`),
    ...Array.from({ length: size / 4 }, (_, i) => `x${i}`),
  ];
  const pick = (prefix: string) => {
    const some = ids.filter((id) => id.startsWith(prefix));
    return random() < 0.05 ? `${prefix}missing${Math.floor(random() * 3)}` : some[Math.floor(random() * some.length)]!;
  };
  return graphOf(
    ...ids.map((id) => {
      if (id.startsWith('x')) return node(id, String(Math.floor(random() * 3)));
      const refs: [string, string, boolean?][] = [];
      for (let i = Math.floor(random() * 4); i > 0; i--) refs.push(['related', pick('a')]);
      if (random() < 0.7) refs.push(['author', pick('p')]);
      if (random() < 0.6) refs.push(['cover', pick('x'), true]);
      return node(id, String(Math.floor(random() * 3)), ...refs);
    }),
  );
}

/** The graph after random edits: digests changed, references changed, records added and removed. */
function edited(graph: Graph, random: () => number): Graph {
  const next = new Map(graph);
  const ids = [...graph.keys()];
  const any = () => ids[Math.floor(random() * ids.length)]!;
  for (let i = 0; i < 4; i++) {
    const id = any();
    const what = random();
    const current = next.get(id);
    if (what < 0.4 && current) next.set(id, { ...current, digest: `${current.digest}'` });
    else if (what < 0.6 && current)
      next.set(id, {
        ...current,
        digest: `${current.digest}"`,
        references: [...current.references.slice(1), { field: 'related', id: any(), asset: false }],
      });
    else if (what < 0.8) next.delete(id);
    else if (!current) next.set(id, node(id, 'new', ['related', any()]));
  }
  if (random() < 0.3) next.set(`a${ids.length}`, node(`a${ids.length}`, 'new', ['author', any()])); // a record that is new
  return next;
}

/** The records referencing any of `targets`, as the reverse index of the graph gives them. */
const referrersIn = (graph: Graph) => (targets: Set<string>, assetsOnly: boolean) =>
  new Set(
    [...graph.values()]
      .filter((n) => n.references.some((ref) => targets.has(ref.id) && (!assetsOnly || ref.asset)))
      .map((n) => n.id),
  );

describe('working out only the members a change affects', () => {
  const cases: [string, IncludeOptions][] = [
    ['includes 0', level(0)],
    ['includes 1', level(1)],
    ['includes 2', level(2)],
    ['includes 1 without embedAssets', level(1, false)],
    ['a field map', { includes: { '*.fields.related': { '*.fields.author': 1 } } as IncludeMap, embedAssets: true }],
  ];
  for (const [name, options] of cases) {
    it(`gives every digest a full working out gives (${name}, 200 seeded changes)`, () => {
      const random = mulberry32(name.length * 7919);
      for (let round = 0; round < 200; round++) {
        const before = randomGraph(random, 20);
        const after = edited(before, random);
        const members = [...after.keys()].filter((id) => id.startsWith('a') || id.startsWith('p'));
        const changed = [...new Set([...before.keys(), ...after.keys()])].filter(
          (id) => JSON.stringify(before.get(id)) !== JSON.stringify(after.get(id)),
        );
        const full = dependencyDigests(members, options, after);
        const old = dependencyDigests(members, options, before);
        const affected = affectedBy(changed, options, referrersIn(after));
        const again = dependencyDigests(
          members.filter((id) => affected.has(id) || !old.has(id)),
          options,
          after,
        );
        const incremental = new Map(members.map((id) => [id, again.get(id) ?? old.get(id)!]));
        expect(incremental, `round ${round}, changed ${changed.join(', ')}`).toEqual(full);
      }
    });
  }
});
