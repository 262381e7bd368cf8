import { hash } from 'node:crypto';
import type { IncludeMap } from '../api/query.ts';
import type { Node } from '../cache/index.ts';
import { follows, type IncludeOptions, includeDepth } from './reach.ts';
import { ownName } from '../model/sections.ts';

/**
 * Dependency digests: a member's digest changes when the member, or any record its source's
 * includes reach from it, changes. It is made the way the includes walk, level by level, as a
 * hash tree: a record's own part is its digest with those of the assets it embeds; a level
 * adds the parts of the records its references reach, sorted; a reference to a record that
 * does not exist counts by its id. So a change reaches exactly the members with a chain of
 * references, within the include levels, to the record that changed (`affectedBy`), and only
 * their digests need working out again.
 */

/**
 * `parts.sort().join(',')`, sorting a few parts in place by hand: a member's digest sorts a
 * handful of parts per record reached, and the built-in sort allocates a work area each call.
 */
function sortedJoin(parts: string[]): string {
  if (parts.length > 16) return parts.sort().join(',');
  for (let i = 1; i < parts.length; i++) {
    const part = parts[i]!;
    let j = i - 1;
    for (; j >= 0 && parts[j]! > part; j--) parts[j + 1] = parts[j]!;
    parts[j + 1] = part;
  }
  return parts.join(',');
}

const h = (text: string) => hash('sha1', text, 'base64url').slice(0, 20);
const absent = (id: string) => `!${id}`;

/** The dependency digest of each of `members`, from the nodes of everything they reach (see `reach`). */
export function dependencyDigests(
  members: readonly string[],
  options: IncludeOptions,
  nodes: ReadonlyMap<string, Node>,
): Map<string, string> {
  const isFollowed = follows(options);
  const own = new Map<string, string>();
  const ownPart = (node: Node): string => {
    let part = own.get(node.id);
    if (part === undefined) {
      const assets = options.embedAssets
        ? node.references.filter((ref) => ref.asset).map((ref) => nodes.get(ref.id)?.digest ?? absent(ref.id))
        : [];
      own.set(node.id, (part = assets.length === 0 ? node.digest : h(`${node.digest}|${sortedJoin(assets)}`)));
    }
    return part;
  };
  /** Each record's part at each level above 0, by level. */
  const levels: Map<string, string>[] = [];
  const atLevel = (id: string, level: number): string => {
    const node = nodes.get(id);
    if (!node) return absent(id);
    if (level === 0) return ownPart(node);
    const known = (levels[level] ??= new Map());
    let part = known.get(id);
    if (part === undefined) {
      const reached: string[] = [];
      for (const ref of node.references) if (isFollowed(ref)) reached.push(atLevel(ref.id, level - 1));
      known.set(id, (part = reached.length === 0 ? ownPart(node) : h(`${ownPart(node)}|${sortedJoin(reached)}`)));
    }
    return part;
  };
  const alongMap = (id: string, map: IncludeMap | undefined): string => {
    const node = nodes.get(id);
    if (!node) return absent(id);
    if (!map) return ownPart(node);
    const parts = Object.entries(map).map(([path, child]) => {
      const [contentType, , field] = path.split('.') as [string, string, string];
      if (contentType !== '*' && contentType !== node.contentType) return '-';
      const reached = node.references
        .filter((ref) => ownName(ref.field) === field && isFollowed(ref))
        .map((ref) => alongMap(ref.id, typeof child === 'object' ? child : undefined));
      return sortedJoin(reached);
    });
    return h(`${ownPart(node)}|${parts.join(';')}`);
  };
  const { includes } = options;
  const digests = new Map<string, string>();
  for (const id of members) {
    if (!nodes.has(id)) continue;
    digests.set(id, h(typeof includes === 'object' ? alongMap(id, includes) : atLevel(id, includes ?? 0)));
  }
  return digests;
}

/**
 * The records whose dependency digest may differ after the records `changed` did (added,
 * changed or removed): those, the records embedding a changed asset, and every record with a
 * chain of references, as deep as the includes go, to one of those. `referrers` gives the
 * records referencing any of some ids (through asset references only, when asked).
 */
export function affectedBy(
  changed: Iterable<string>,
  options: IncludeOptions,
  referrers: (ids: Set<string>, assetsOnly: boolean) => Set<string>,
): Set<string> {
  const affected = new Set(changed);
  if (affected.size === 0) return affected;
  let frontier = new Set(affected);
  // A record embedding a changed asset changed its own part: it counts as changed.
  if (options.embedAssets) {
    for (const id of referrers(frontier, true)) {
      affected.add(id);
      frontier.add(id);
    }
  }
  for (let level = 0; level < includeDepth(options.includes) && frontier.size > 0; level++) {
    const next = new Set<string>();
    for (const id of referrers(frontier, false)) {
      if (affected.has(id)) continue;
      affected.add(id);
      next.add(id);
    }
    frontier = next;
  }
  return affected;
}
