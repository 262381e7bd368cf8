import type { IncludeMap } from '../api/query.ts';

/**
 * The records a source needs: its members and what they include (spec §6), computed locally
 * from the stored references, so an incremental sync and a full one agree on the same set.
 * Under embedAssets every asset referenced by a record of the set is part of it.
 */

export interface Node {
  contentType: string;
  /** Field name → referenced ids (every locale's). */
  refs: Record<string, string[]>;
}

export interface Closure {
  ids: Set<string>;
  /** References whose target is not known: to fetch, or dangling. */
  missing: { from: string; field: string; id: string }[];
}

export function includeClosure(
  members: readonly string[],
  includes: number | IncludeMap | undefined,
  embedAssets: boolean,
  nodeOf: (id: string) => Node | undefined,
  isAsset: (id: string, field: string, from: Node) => boolean,
): Closure {
  const ids = new Set<string>();
  const missing: Closure['missing'] = [];
  const visit = (from: string, field: string, id: string): Node | undefined => {
    const node = nodeOf(id);
    if (!node) {
      missing.push({ from, field, id });
      return undefined;
    }
    ids.add(id);
    return node;
  };
  const addAssets = (id: string, node: Node) => {
    if (!embedAssets) return;
    for (const [field, targets] of Object.entries(node.refs)) {
      for (const target of targets) if (isAsset(target, field, node)) visit(id, field, target);
    }
  };
  const follows = (field: string, target: string, node: Node) => !(embedAssets && isAsset(target, field, node));

  for (const id of members) {
    const node = nodeOf(id);
    if (node) {
      ids.add(id);
      addAssets(id, node);
    }
  }
  if (typeof includes === 'number') {
    const expanded = new Set(members);
    let frontier = [...members];
    for (let level = 1; level <= includes && frontier.length > 0; level++) {
      const next: string[] = [];
      for (const id of frontier) {
        const node = nodeOf(id);
        if (!node) continue;
        for (const [field, targets] of Object.entries(node.refs)) {
          for (const target of targets) {
            if (!follows(field, target, node)) continue;
            const reached = visit(id, field, target);
            if (reached) addAssets(target, reached);
            if (reached && !expanded.has(target)) {
              expanded.add(target);
              next.push(target);
            }
          }
        }
      }
      frontier = next;
    }
  } else if (includes) {
    let work: { from: string[]; map: IncludeMap }[] = [{ from: [...members], map: includes }];
    while (work.length > 0) {
      const next: typeof work = [];
      for (const { from, map } of work) {
        for (const [path, child] of Object.entries(map)) {
          const [contentType, , field] = path.split('.') as [string, string, string];
          const reached = new Set<string>();
          for (const id of from) {
            const node = nodeOf(id);
            if (!node || (contentType !== '*' && contentType !== node.contentType)) continue;
            for (const target of node.refs[field] ?? []) {
              if (!follows(field, target, node)) continue;
              const target_ = visit(id, field, target);
              if (target_) {
                addAssets(target, target_);
                reached.add(target);
              }
            }
          }
          if (typeof child === 'object' && reached.size > 0) next.push({ from: [...reached], map: child });
        }
      }
      work = next;
    }
  }
  return { ids, missing };
}
