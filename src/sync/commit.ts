import type { CacheHead, CacheReader, CacheTransaction, Etags, Records, StoredMembers } from '../cache/index.ts';
import { type Changeset, emptyChanges, isEmptyChangeset, type SourceChanges } from './changeset.ts';
import type { SourceClosure } from './closures.ts';
import type { SyncSource } from './config.ts';
import { affectedBy, dependencyDigests } from './digests.ts';
import type { Intake } from './intake.ts';
import type { Listed } from './list.ts';
import { reach } from './reach.ts';

/**
 * The commit phase: drops the records no source needs, works out the members' dependency
 * digests where they may have changed, writes each source's members, included records and
 * dangling references, and commits. Returns what changed.
 */

export interface CommitInput {
  sources: readonly SyncSource[];
  /** Members listed in this run, by source. */
  members: ReadonlyMap<string, Listed>;
  closures: ReadonlyMap<string, SourceClosure>;
  syncedAt: string;
  head: Omit<CacheHead, 'records'>;
  etags: Etags;
}

export function commitRun(
  tx: CacheTransaction,
  intake: Intake,
  input: CommitInput,
): { changeset: Changeset; cache: CacheReader } {
  const { records } = tx;
  const stored = tx.sources();
  const everyClosureKept =
    [...input.closures.values()].every((closure) => closure.kept) &&
    [...stored.keys()].every((key) => input.closures.has(key));
  if (!everyClosureKept) {
    const needed = new Set<string>();
    for (const source of input.sources) {
      for (const id of input.members.get(source.key)!.ids) needed.add(id);
      for (const id of input.closures.get(source.key)!.included) needed.add(id);
    }
    for (const id of records.ids()) if (!needed.has(id)) intake.drop(id);
  }
  for (const key of stored.keys()) if (!input.sources.some((source) => source.key === key)) tx.removeSource(key);

  // What changed among the records decides whose dependency digests are worked out again.
  const changedRecords = records.changes();
  const changed = [...changedRecords.added, ...changedRecords.updated, ...changedRecords.removed];
  const changeset: Omit<Changeset, 'empty'> = { sources: {}, records: changedRecords };
  for (const source of input.sources) {
    const closure = input.closures.get(source.key)!;
    const listed = input.members.get(source.key)!;
    const storedMembers = tx.members(source.key);
    const members = storedAs(listed, storedMembers, records);
    const row = {
      key: source.key,
      kind: source.kind,
      name: source.name,
      fingerprint: source.fingerprint,
      syncedAt: input.syncedAt,
    };
    const included = closure.kept ? undefined : closure.included;
    const dangling = uniqueReferences(closure.dangling);
    // Stored digests count only when made with the same options.
    const sameOptions = stored.get(source.key)?.fingerprint === source.fingerprint;
    const same = sameOptions && members.ids === storedMembers.ids;
    if (same && changed.length === 0 && listed.changed.size === 0) {
      // The list is the stored one, with the same stamps, and nothing its members reach changed: every row stands.
      changeset.sources[source.key] = emptyChanges();
      tx.writeSource(row, undefined, included, dangling);
      continue;
    }
    const before = { ids: storedMembers.ids, digests: tx.memberDigests(source.key) };
    const { digests, worked } = memberDigests(
      source,
      members.ids,
      closure,
      sameOptions ? before : undefined,
      changed,
      tx,
    );
    changeset.sources[source.key] = sourceChanges(members.ids, digests, before, same ? worked : undefined);
    const unmoved = same && members === storedMembers && digests.every((digest, i) => digest === before.digests[i]);
    tx.writeSource(row, unmoved ? undefined : { list: members, digests }, included, dangling);
  }
  const cache = tx.commit(input.head, input.etags);
  return { changeset: { ...changeset, empty: isEmptyChangeset(changeset) }, cache };
}

/**
 * A source's members as they are stored: each once (pages that shifted while they were read may
 * list one twice), only those that exist now, each with the stamps of its record as stored
 * (those listed as they were stored, with the stamps stored with them).
 */
function storedAs(
  listed: Listed,
  stored: StoredMembers,
  records: Records,
): { ids: string[]; updatedAt: string[]; revisions: number[] } {
  const isNew = (id: string) => listed.changed.has(id) || records.dropped.has(id);
  // Most often the members are those stored, in the same order: only those that changed have other stamps.
  if (listed.ids.length === stored.ids.length && listed.ids.every((id, i) => id === stored.ids[i])) {
    if (listed.changed.size === 0 && records.dropped.size === 0) return stored;
    const out = { ids: stored.ids, updatedAt: stored.updatedAt.slice(), revisions: stored.revisions.slice() };
    records.infos(listed.changed);
    if (records.dropped.size === 0 && [...listed.changed].every((id) => records.info(id))) {
      listed.ids.forEach((id, i) => {
        if (!listed.changed.has(id)) return;
        const info = records.info(id)!;
        out.updatedAt[i] = info.updatedAt;
        out.revisions[i] = info.revision;
      });
      return out;
    }
  }
  const at = new Map(stored.ids.map((id, i) => [id, i]));
  const out = { ids: [] as string[], updatedAt: [] as string[], revisions: [] as number[] };
  const seen = new Set<string>();
  records.infos(listed.ids.filter((id) => isNew(id) || !at.has(id)));
  for (const id of listed.ids) {
    if (seen.has(id)) continue;
    seen.add(id);
    const position = isNew(id) ? undefined : at.get(id);
    const info = position === undefined ? records.info(id) : undefined;
    if (position === undefined && !info) continue;
    out.ids.push(id);
    out.updatedAt.push(info ? info.updatedAt : stored.updatedAt[position!]!);
    out.revisions.push(info ? info.revision : stored.revisions[position!]!);
  }
  return out;
}

/**
 * The dependency digest of each member, in order, and the positions of those worked out in
 * this run. With the stored digests of the same options, only the members a changed record may
 * affect (and new members) are worked out; otherwise all of them.
 */
function memberDigests(
  source: SyncSource,
  members: readonly string[],
  closure: SourceClosure,
  before: { ids: readonly string[]; digests: readonly string[] } | undefined,
  changed: readonly string[],
  tx: CacheTransaction,
): { digests: string[]; worked: number[] } {
  const options = { includes: source.options.includes, embedAssets: source.options.embedAssets !== false };
  const affected = before
    ? affectedBy(changed, options, (ids, assetsOnly) => tx.records.referrers(ids, assetsOnly))
    : undefined;
  // The stored digest of each member, by position when the list is the same (most often), else by id.
  const same = before !== undefined && before.ids === members;
  const known = before && !same ? new Map(before.ids.map((id, i) => [id, before.digests[i]!])) : undefined;
  const storedDigest = (id: string, i: number) => (same ? before.digests[i] : known?.get(id));
  const toWork = members.filter((id, i) => !affected || affected.has(id) || storedDigest(id, i) === undefined);
  // A closure worked out in this run holds the nodes of every member's reach; else read those of the members to work.
  const nodes = closure.nodes ?? reach(toWork, options, (ids) => tx.records.nodes(ids)).nodes;
  const fresh = dependencyDigests(toWork, options, nodes);
  const worked: number[] = [];
  const digests = members.map((id, i) => {
    const digest = fresh.get(id);
    if (digest === undefined) return storedDigest(id, i)!;
    worked.push(i);
    return digest;
  });
  return { digests, worked };
}

/**
 * A source's added, updated and removed members against the stored ones (only the `worked` positions, when the list is
 * the same).
 */
function sourceChanges(
  members: readonly string[],
  digests: readonly string[],
  before: { ids: readonly string[]; digests: readonly string[] },
  worked: readonly number[] | undefined,
): SourceChanges {
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
  return [...unique.values()].sort((a, b) =>
    a.from + a.field < b.from + b.field ? -1 : a.from + a.field > b.from + b.field ? 1 : 0,
  );
}
