import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../helpers/random.ts';
import type { IncludeMap } from '../../src/api/query.ts';
import type { Node } from '../../src/cache/records.ts';
import { reach, type IncludeOptions } from '../../src/sync/reach.ts';
import { affectedBy, updatedMembers } from '../../src/sync/updated.ts';

/**
 * Which members a sync updated, without a network: a member is updated exactly when it, an asset
 * it embeds, or a record its includes reach from it (with the assets those embed) was added,
 * changed or removed; `affectedBy` finds every such member walking back from the changes, and
 * `updatedMembers` keeps exactly those (seeded random graphs and changes, against the includes
 * walk that makes the sources' closures).
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

/** Whether `id` is updated when the records `changed` did, in `graph` (what the cache holds after the change). */
const isUpdated = (graph: Graph, options: IncludeOptions, changed: string[], id = 'a') =>
  updatedMembers([id], options, new Set(changed), graph).has(id);

describe('an updated member', () => {
  const base = graphOf(
    node('a', '1', ['related', 'b'], ['cover', 'x', true]),
    node('b', '1', ['author', 'p']),
    node('p', '1'),
    node('x', '1'),
  );

  it('is one whose record, assets or records within its include levels changed, and nothing further', () => {
    expect(isUpdated(base, level(1), ['a'])).toBe(true);
    expect(isUpdated(base, level(1), ['x'])).toBe(true); // an embedded asset
    expect(isUpdated(base, level(0), ['x'])).toBe(true); // embedded even without includes
    expect(isUpdated(base, level(1), ['b'])).toBe(true); // one level away
    expect(isUpdated(base, level(1), ['p'])).toBe(false); // two levels away, beyond includes 1
    expect(isUpdated(base, level(2), ['p'])).toBe(true);
    expect(isUpdated(base, level(1, false), ['x'])).toBe(true); // not embedded: followed as a reference
    expect(isUpdated(base, level(0, false), ['x'])).toBe(false);
  });

  it('is one whose reference met a record that came or went', () => {
    const withoutB = new Map(base);
    withoutB.delete('b');
    expect(isUpdated(withoutB, level(1), ['b'])).toBe(true);
    expect(isUpdated(withoutB, level(0), ['b'])).toBe(false);
  });

  it('follows a field map along its fields only', () => {
    const map = { '*.fields.related': { '*.fields.author': 1 } } as IncludeMap;
    expect(isUpdated(base, { includes: map, embedAssets: true }, ['p'])).toBe(true);
    const other = { '*.fields.other': 1 } as IncludeMap;
    expect(isUpdated(base, { includes: other, embedAssets: true }, ['b'])).toBe(false);
    const typed = { 'person.fields.related': 1 } as IncludeMap; // a is an article
    expect(isUpdated(base, { includes: typed, embedAssets: true }, ['b'])).toBe(false);
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

describe('the members a change affects', () => {
  const cases: [string, IncludeOptions][] = [
    ['includes 0', level(0)],
    ['includes 1', level(1)],
    ['includes 2', level(2)],
    ['includes 1 without embedAssets', level(1, false)],
    ['a field map', { includes: { '*.fields.related': { '*.fields.author': 1 } } as IncludeMap, embedAssets: true }],
  ];
  for (const [name, options] of cases) {
    it(`are exactly those whose includes reach a changed record (${name}, 200 seeded changes)`, () => {
      const random = mulberry32(name.length * 7919);
      for (let round = 0; round < 200; round++) {
        const before = randomGraph(random, 20);
        const after = edited(before, random);
        const members = [...after.keys()].filter((id) => id.startsWith('a') || id.startsWith('p'));
        const changed = [...new Set([...before.keys(), ...after.keys()])].filter(
          (id) => JSON.stringify(before.get(id)) !== JSON.stringify(after.get(id)),
        );
        const read = (ids: Iterable<string>) =>
          new Map([...ids].flatMap((id) => (after.has(id) ? [[id, after.get(id)!]] : [])));
        const reaching = members.filter((id) => {
          const walked = reach([id], options, read);
          return [...walked.nodes.keys(), ...walked.missing.map((ref) => ref.id)].some((x) => changed.includes(x));
        });
        const affected = affectedBy(changed, options, referrersIn(after));
        const candidates = members.filter((id) => affected.has(id));
        expect(candidates, `round ${round}: affectedBy misses a member`).toEqual(expect.arrayContaining(reaching));
        expect([...updatedMembers(candidates, options, new Set(changed), after)].sort(), `round ${round}`).toEqual(
          reaching.sort(),
        );
      }
    });
  }
});
