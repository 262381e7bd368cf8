import type { IncludeMap } from '../api/query.ts';
import type { Node } from '../cache/index.ts';
import { ownName } from '../model/sections.ts';
import { follows, type IncludeOptions, includeDepth } from './reach.ts';

/**
 * Which members of a source a sync updated: a member is updated when it, or a record its
 * source's includes reach from it, was added, changed or removed, the assets each record reached
 * embeds counting as part of it. `affectedBy` walks back from the changed records, through the
 * stored references, to the records that may reach one; `updatedMembers` keeps those whose
 * includes do reach one, walking forward along the include levels or the field map.
 */

/**
 * The records that may reach a changed record (added, changed or removed): those, the records
 * embedding a changed asset, and every record with a chain of references to one of those, as
 * deep as the includes go. `referrers` gives the records referencing any of some ids (through
 * asset references only, when asked).
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

/** The members of `candidates` whose includes reach a changed record, from the nodes of what they reach. */
export function updatedMembers(
  candidates: Iterable<string>,
  options: IncludeOptions,
  changed: ReadonlySet<string>,
  nodes: ReadonlyMap<string, Node>,
): Set<string> {
  const isFollowed = follows(options);
  /** The record itself, or an asset it embeds, changed. */
  const own = (node: Node) =>
    changed.has(node.id) || (options.embedAssets && node.references.some((ref) => ref.asset && changed.has(ref.id)));
  const levels: Map<string, boolean>[] = [];
  const atLevel = (id: string, level: number): boolean => {
    const node = nodes.get(id);
    if (!node) return changed.has(id); // a reference to a record that is gone, or that came
    if (level === 0 || own(node)) return own(node);
    const known = (levels[level] ??= new Map());
    let touched = known.get(id);
    if (touched === undefined) {
      touched = node.references.some((ref) => isFollowed(ref) && atLevel(ref.id, level - 1));
      known.set(id, touched);
    }
    return touched;
  };
  const alongMap = (id: string, map: IncludeMap | undefined): boolean => {
    const node = nodes.get(id);
    if (!node) return changed.has(id);
    if (own(node) || !map) return own(node);
    return Object.entries(map).some(([path, child]) => {
      const [contentType, , field] = path.split('.') as [string, string, string];
      if (contentType !== '*' && contentType !== node.contentType) return false;
      return node.references.some(
        (ref) =>
          ownName(ref.field) === field &&
          isFollowed(ref) &&
          alongMap(ref.id, typeof child === 'object' ? child : undefined),
      );
    });
  };
  const { includes } = options;
  return new Set(
    [...candidates].filter((id) =>
      typeof includes === 'object' ? alongMap(id, includes) : atLevel(id, includes ?? 0),
    ),
  );
}
