import type { CacheHead, CacheTransaction, Etags } from '../cache/transaction.ts';
import { type Changeset, emptyChanges, isEmptyChangeset, type SourceChanges } from './changeset.ts';
import type { SourceClosure } from './closures.ts';
import type { Source } from './config.ts';
import { affectedBy, dependencyDigests } from './digests.ts';
import type { Intake } from './intake.ts';
import { reach } from './reach.ts';

/**
 * The commit phase: drops the records no source needs, works out the members' dependency
 * digests where they may have changed, writes each source's members, included records and
 * dangling references, and commits. Returns what changed.
 */

export interface CommitInput {
  sources: readonly Source[];
  /** Members listed in this run, by source. */
  members: ReadonlyMap<string, readonly string[]>;
  closures: ReadonlyMap<string, SourceClosure>;
  syncedAt: string;
  head: CacheHead;
  etags: Etags;
}

export function commitRun(tx: CacheTransaction, intake: Intake, input: CommitInput): Changeset {
  const { records } = tx;
  const stored = tx.sources();
  const everyClosureKept = [...input.closures.values()].every((closure) => closure.kept) && [...stored.keys()].every((key) => input.closures.has(key));
  if (!everyClosureKept) {
    const needed = new Set<string>();
    for (const source of input.sources) {
      for (const id of input.members.get(source.key)!) needed.add(id);
      for (const id of input.closures.get(source.key)!.included) needed.add(id);
    }
    for (const id of [...records.ids()]) if (!needed.has(id)) intake.drop(id);
  }
  for (const key of stored.keys()) if (!input.sources.some((source) => source.key === key)) tx.removeSource(key);

  // What changed among the records decides whose dependency digests are worked out again.
  const changedRecords = records.changes();
  const changed = [...changedRecords.added, ...changedRecords.updated, ...changedRecords.removed];
  const changeset: Omit<Changeset, 'empty'> = { sources: {}, records: changedRecords };
  for (const source of input.sources) {
    const closure = input.closures.get(source.key)!;
    // (A member listed twice, as pages shifted while they were read, counts once; one gone by now is no member.)
    const members = [...new Set(input.members.get(source.key)!)].filter((id) => records.info(id) !== undefined);
    const storedMembers = tx.members(source.key);
    // Stored digests count only when made with the same options.
    const before = stored.get(source.key)?.fingerprint === source.fingerprint ? storedMembers : undefined;
    const { digests, worked } = memberDigests(source, members, closure, before, changed, tx);
    const same = before !== undefined && before.ids.length === members.length && before.ids.every((id, i) => id === members[i]);
    changeset.sources[source.key] = sourceChanges(members, digests, storedMembers, same ? worked : undefined);
    tx.writeSource(
      { key: source.key, kind: source.kind, name: source.name, fingerprint: source.fingerprint, syncedAt: input.syncedAt },
      { ids: members, digests, ...(same ? { changed: worked } : {}) },
      closure.kept ? undefined : closure.included,
      uniqueReferences(closure.dangling),
    );
  }
  tx.commit(input.head, input.etags);
  return { ...changeset, empty: isEmptyChangeset(changeset) };
}

/**
 * The dependency digest of each member, in order, and the positions of those worked out in
 * this run. With the stored digests of the same options, only the members a changed record may
 * affect (and new members) are worked out; otherwise all of them.
 */
function memberDigests(
  source: Source,
  members: readonly string[],
  closure: SourceClosure,
  before: { ids: string[]; digests: string[] } | undefined,
  changed: readonly string[],
  tx: CacheTransaction,
): { digests: string[]; worked: number[] } {
  const options = { includes: source.options.includes, embedAssets: source.options.embedAssets !== false };
  const known = new Map(before?.ids.map((id, i) => [id, before.digests[i]!]));
  const affected = before ? affectedBy(changed, options, (ids, assetsOnly) => tx.records.referrers(ids, assetsOnly)) : undefined;
  const toWork = members.filter((id) => !affected || affected.has(id) || !known.has(id));
  // A closure worked out in this run holds the nodes of every member's reach; else read those of the members to work.
  const nodes = closure.nodes ?? reach(toWork, options, (ids) => tx.records.nodes(ids)).nodes;
  const fresh = dependencyDigests(toWork, options, nodes);
  const worked: number[] = [];
  const digests = members.map((id, i) => {
    const digest = fresh.get(id);
    if (digest === undefined) return known.get(id)!;
    worked.push(i);
    return digest;
  });
  return { digests, worked };
}

/** A source's added, updated and removed members against the stored ones (only the `worked` positions, when the list is the same). */
function sourceChanges(members: readonly string[], digests: readonly string[], before: { ids: string[]; digests: string[] }, worked: readonly number[] | undefined): SourceChanges {
  const changes = emptyChanges();
  if (worked) {
    for (const i of worked) if (before.digests[i] !== digests[i]) changes.updated.push(members[i]!);
    return changes;
  }
  const old = new Map(before.ids.map((id, i) => [id, before.digests[i]]));
  const current = new Set(members);
  members.forEach((id, i) => {
    if (!old.has(id)) changes.added.push(id);
    else if (old.get(id) !== digests[i]) changes.updated.push(id);
  });
  for (const id of old.keys()) if (!current.has(id)) changes.removed.push(id);
  return changes;
}

/** References once each, in order of document and field. */
export function uniqueReferences<T extends { from: string; field: string; id: string }>(references: readonly T[]): T[] {
  const unique = new Map(references.map((d) => [`${d.from}\u0000${d.field}\u0000${d.id}`, d]));
  return [...unique.values()].sort((a, b) => (a.from + a.field < b.from + b.field ? -1 : a.from + a.field > b.from + b.field ? 1 : 0));
}
