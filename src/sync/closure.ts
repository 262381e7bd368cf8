import type { IncludeMap } from '../api/query.ts';
import type { References } from './records.ts';

/**
 * The records a source needs: its members and what they include (spec §6), computed locally
 * from the stored references, so an incremental sync and a full one agree on the same set.
 * Under embedAssets every asset referenced by a record of the set is part of it.
 */

export interface Node {
  contentType: string;
  /** `[field, referenced id, field, referenced id, …]`: a pair per reference (every locale's). */
  refs: References;
}

export interface Closure {
  ids: Set<string>;
  /** References whose target is not known: to fetch, or dangling. */
  missing: { from: string; field: string; id: string }[];
  /** The closure of the cache, kept because nothing it depends on changed. */
  kept?: true;
  /** Of a kept closure: its records that are not members. */
  included?: readonly string[];
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
  // Every id met gets one record of its own walk state, and a record's references point to
  // those of their targets, so a walk follows links rather than looking ids up again (with a
  // hundred thousand records, the lookups were most of the cost).
  interface Walked {
    id: string;
    /** The id's node once looked up; null when it has none. */
    node?: Node | null;
    /** Its references, each classified once (an asset to embed, or one to follow); the target's record is found when first needed. */
    refs?: { field: string; target: string; walked?: Walked; asset: boolean }[];
    /** The missing assets its first `addAssets` reported, reported again on every later reach. */
    missingAssets?: Closure['missing'];
    inIds: boolean;
    expanded: boolean;
  }
  const walked = new Map<string, Walked>();
  const find = (id: string): Walked => {
    let record = walked.get(id);
    if (!record) walked.set(id, (record = { id, inIds: false, expanded: false }));
    return record;
  };
  const nodeOfWalked = (record: Walked): Node | undefined => {
    if (record.node === undefined) record.node = nodeOf(record.id) ?? null;
    return record.node ?? undefined;
  };
  const refsOf = (record: Walked, node: Node) => {
    if (!record.refs) {
      record.refs = [];
      const refs = node.refs;
      for (let i = 0; i < refs.length; i += 2) record.refs.push({ field: refs[i]!, target: refs[i + 1]!, asset: embedAssets && isAsset(refs[i + 1]!, refs[i]!, node) });
    }
    return record.refs;
  };
  const add = (record: Walked) => {
    if (!record.inIds) {
      record.inIds = true;
      ids.add(record.id);
    }
  };
  const visit = (from: string, field: string, target: Walked): Node | undefined => {
    const node = nodeOfWalked(target);
    if (!node) {
      missing.push({ from, field, id: target.id });
      return undefined;
    }
    add(target);
    return node;
  };
  // A record's assets are worked out the first time it is reached; after that the assets found
  // are already in `ids`, and only its missing ones are reported again, as each reach did.
  const addAssets = (record: Walked, node: Node) => {
    if (!embedAssets) return;
    if (record.missingAssets) {
      for (const ref of record.missingAssets) missing.push({ ...ref });
      return;
    }
    const first = missing.length;
    for (const ref of refsOf(record, node)) if (ref.asset) visit(record.id, ref.field, (ref.walked ??= find(ref.target)));
    record.missingAssets = missing.slice(first).map((ref) => ({ ...ref }));
  };
  const follows = (field: string, target: string, node: Node) => !(embedAssets && isAsset(target, field, node));

  const starts = members.map(find);
  for (const record of starts) {
    const node = nodeOfWalked(record);
    if (node) {
      add(record);
      addAssets(record, node);
    }
  }
  if (typeof includes === 'number') {
    for (const record of starts) record.expanded = true;
    let frontier = starts;
    for (let level = 1; level <= includes && frontier.length > 0; level++) {
      const next: Walked[] = [];
      for (const record of frontier) {
        const node = nodeOfWalked(record);
        if (!node) continue;
        for (const ref of refsOf(record, node)) {
          if (ref.asset) continue;
          const target = (ref.walked ??= find(ref.target));
          const reached = visit(record.id, ref.field, target);
          if (reached) addAssets(target, reached);
          if (reached && !target.expanded) {
            target.expanded = true;
            next.push(target);
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
            const node = nodeOfWalked(find(id));
            if (!node || (contentType !== '*' && contentType !== node.contentType)) continue;
            for (let i = 0; i < node.refs.length; i += 2) {
              const target = node.refs[i + 1]!;
              if (node.refs[i] !== field || !follows(field, target, node)) continue;
              const record = find(target);
              const target_ = visit(id, field, record);
              if (target_) {
                addAssets(record, target_);
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

/**
 * The closure of each member alone: `closureOf(id)` holds the ids of `includeClosure([id], …).ids`
 * (each once, in no particular order). Records are linked to the existing records they embed and
 * include the first time they are reached, and walks mark the linked records instead of hashing
 * ids, so all members of a source cost about one closure rather than one each. Valid while
 * `nodeOf` and `isAsset` answer the same.
 */
export function memberClosures(
  includes: number | IncludeMap | undefined,
  embedAssets: boolean,
  nodeOf: (id: string) => Node | undefined,
  isAsset: (id: string, field: string, from: Node) => boolean,
): (member: string) => string[] {
  if (includes !== undefined && typeof includes !== 'number') return (member) => [...includeClosure([member], includes, embedAssets, nodeOf, isAsset).ids];
  const levels = includes ?? 0;
  interface Linked {
    id: string;
    node: Node;
    /** Existing records it embeds as assets, and existing records it includes (in reference order); each listed when first needed. */
    assets?: Linked[];
    follows?: Linked[];
    /** The walk that last put it in the closure, and the one that last expanded it. */
    added: number;
    expanded: number;
  }
  const linked = new Map<string, Linked | null>();
  const find = (id: string): Linked | undefined => {
    let entry = linked.get(id);
    if (entry === undefined) {
      const node = nodeOf(id);
      entry = node ? { id, node, added: 0, expanded: 0 } : null;
      linked.set(id, entry);
    }
    return entry ?? undefined;
  };
  /** The existing targets of a record's references that are assets to embed (`assets`) or not: the records of the last level need only the first. */
  const targets = (record: Linked, assets: boolean): Linked[] => {
    const out: Linked[] = [];
    const refs = record.node.refs;
    for (let i = 0; i < refs.length; i += 2) {
      const target = refs[i + 1]!;
      if ((embedAssets && isAsset(target, refs[i]!, record.node)) !== assets) continue;
      const found = find(target);
      if (found) out.push(found);
    }
    return out;
  };
  let walk = 0;
  return (member) => {
    const start = find(member);
    if (!start) return [];
    walk++;
    const ids: string[] = [];
    const add = (record: Linked) => {
      if (record.added !== walk) {
        record.added = walk;
        ids.push(record.id);
      }
      for (const asset of (record.assets ??= targets(record, true))) {
        if (asset.added !== walk) {
          asset.added = walk;
          ids.push(asset.id);
        }
      }
    };
    add(start);
    start.expanded = walk;
    let frontier = [start];
    for (let level = 1; level <= levels && frontier.length > 0; level++) {
      const next: Linked[] = [];
      for (const record of frontier) {
        for (const target of (record.follows ??= targets(record, false))) {
          add(target);
          if (target.expanded !== walk) {
            target.expanded = walk;
            next.push(target);
          }
        }
      }
      frontier = next;
    }
    return ids;
  };
}

/**
 * The records whose closure may have changed when the records `changed` did (were added,
 * changed or dropped): `changed` themselves, the records that reference a changed asset, and
 * every record with a chain of at most `levels` references to one of those. A closure walk with
 * `levels` include levels follows that many references, and adds the assets of what it
 * reaches (one reference further, and only to an asset), so the closure of any other record is
 * made of the same records as before. `isAsset` says whether a changed record is an asset (now
 * or before). `eachReferrer` calls back with every record that references one of `targets`
 * (the references of records not in `changed` are the same before and after); it is called only
 * when something changed.
 */
export function reachersOf(
  changed: ReadonlySet<string>,
  levels: number,
  eachReferrer: (targets: ReadonlySet<string>, referrer: (id: string) => void) => void,
  isAsset: (id: string) => boolean,
): Set<string> {
  const reached = new Set(changed);
  if (changed.size === 0) return reached;
  /** The records not reached yet that reference one of `targets`. */
  const referrers = (targets: ReadonlySet<string>): Set<string> => {
    const found = new Set<string>();
    eachReferrer(targets, (id) => {
      if (!reached.has(id)) found.add(id);
    });
    for (const id of found) reached.add(id);
    return found;
  };
  const assets = new Set([...changed].filter(isAsset));
  let frontier: ReadonlySet<string> = assets.size > 0 ? new Set([...changed, ...referrers(assets)]) : changed;
  for (let step = 0; step < levels && frontier.size > 0; step++) frontier = referrers(frontier);
  return reached;
}
