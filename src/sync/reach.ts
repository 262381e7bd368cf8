import type { DanglingReference, Node } from '../cache/index.ts';
import type { Reference } from '../model/records.ts';
import type { IncludeMap } from '../api/query.ts';
import { ownName } from '../model/sections.ts';
import type { SyncSource } from './config.ts';

/**
 * What a source's includes reach (spec §6), worked out from the stored references, so an
 * incremental sync and a full one agree on the same set: the members, the records their
 * references reach within the include levels (or along the field map), and, under embedAssets,
 * the assets of every record reached. Records are read level by level, each level in one batch.
 */

export interface IncludeOptions {
  includes: number | IncludeMap | undefined;
  embedAssets: boolean;
}

/** The include options of a source (its assets are embedded unless `embedAssets: false`). */
export const includeOptions = ({ options }: SyncSource): IncludeOptions => ({
  includes: options.includes,
  embedAssets: options.embedAssets !== false,
});

export interface Reach {
  /** Every existing record reached, members included, with its node. */
  nodes: Map<string, Node>;
  /** References to records that do not exist: to fetch, or dangling. Each once. */
  missing: DanglingReference[];
}

/** Reads the nodes of the ids that exist, in one batch. */
export type NodeReader = (ids: Iterable<string>) => Map<string, Node>;

/** The references a walk follows (an asset is embedded rather than followed under embedAssets). */
export const follows = (options: IncludeOptions) => (ref: Reference) => !(options.embedAssets && ref.asset);

/** Walks the includes of `options` from `starts` (the ones that exist). */
export function reach(starts: readonly string[], options: IncludeOptions, read: NodeReader): Reach {
  const nodes = new Map<string, Node>();
  const missing = new Map<string, DanglingReference>();
  const isFollowed = follows(options);
  const note = (from: string, field: string, id: string) =>
    missing.set(`${from}\u0000${field}\u0000${id}`, { from, field, id });

  /** Reads the records of `ids` not read yet, adds them with their assets, and returns those that exist. */
  const visit = (links: Target[]): Node[] => {
    const unread: string[] = [];
    for (const link of links) if (!nodes.has(link.id)) unread.push(link.id);
    const read_ = unread.length > 0 ? read(unread) : new Map<string, Node>();
    const reached: Node[] = [];
    for (const link of links) {
      const node = nodes.get(link.id) ?? read_.get(link.id);
      if (!node) {
        if (link.from !== undefined) note(link.from, link.field!, link.id);
        continue;
      }
      if (!nodes.has(node.id)) nodes.set(node.id, node);
      reached.push(node);
    }
    if (options.embedAssets) {
      const assets = linksOf(read_.values(), (ref) => ref.asset);
      const unreadAssets = assets.filter((link) => !nodes.has(link.id));
      const assetNodes = unreadAssets.length > 0 ? read(unreadAssets.map((link) => link.id)) : new Map<string, Node>();
      for (const link of assets) {
        const node = nodes.get(link.id) ?? assetNodes.get(link.id);
        if (node) nodes.set(node.id, node);
        else note(link.from, link.field, link.id);
      }
    }
    return reached;
  };

  const start = visit(starts.map((id) => ({ id })));
  if (typeof options.includes === 'number') {
    const expanded = new Set(start.map((node) => node.id));
    let frontier = start;
    for (let level = 1; level <= options.includes && frontier.length > 0; level++) {
      frontier = visit(linksOf(frontier, isFollowed)).filter((node) => !expanded.has(node.id) && expanded.add(node.id));
    }
  } else if (options.includes) {
    let work: { from: Node[]; map: IncludeMap }[] = [{ from: start, map: options.includes }];
    while (work.length > 0) {
      const next: typeof work = [];
      for (const { from, map } of work) {
        for (const [path, child] of Object.entries(map)) {
          const [contentType, , field] = path.split('.') as [string, string, string];
          const typed = from.filter((node) => contentType === '*' || contentType === node.contentType);
          // A field map names a field inside a section by its own API id, as the server does.
          const reached = unique(visit(linksOf(typed, (ref) => ownName(ref.field) === field && isFollowed(ref))));
          if (typeof child === 'object' && reached.length > 0) next.push({ from: reached, map: child });
        }
      }
      work = next;
    }
  }
  return { nodes, missing: [...missing.values()] };
}

/** A record to read: a member (from no record), or the target of a reference. */
type Target = { from?: string; field?: string; id: string };

/**
 * A link for each reference of `from` that `keep` accepts, in order (a loop: this runs for every record of a first
 * sync).
 */
function linksOf(from: Iterable<Node>, keep: (ref: Reference) => boolean): Required<Target>[] {
  const links: Required<Target>[] = [];
  for (const node of from)
    for (const ref of node.references) if (keep(ref)) links.push({ from: node.id, field: ref.field, id: ref.id });
  return links;
}

const unique = (nodes: Iterable<Node>): Node[] => [...new Map([...nodes].map((node) => [node.id, node])).values()];

/** How many references deep the includes go: a level, or the depth of a field map. */
export function includeDepth(includes: number | IncludeMap | undefined): number {
  if (includes === undefined) return 0;
  if (typeof includes === 'number') return includes;
  return (
    1 + Math.max(0, ...Object.values(includes).map((child) => (typeof child === 'object' ? includeDepth(child) : 0)))
  );
}
