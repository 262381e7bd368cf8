import type { CacheHead, CacheReader, CacheTransaction, Etags, Records, StoredMembers } from '../cache/index.ts';
import { type Changeset, emptyChanges, isEmptyChangeset, type SourceChanges } from './changeset.ts';
import { sameList, type SourceClosure } from './closures.ts';
import type { SyncSource } from './config.ts';
import { affectedBy, updatedMembers } from './updated.ts';
import type { Intake } from './intake.ts';
import type { Listed } from './list.ts';
import { includeOptions, reach } from './reach.ts';

/**
 * The commit phase: drops the records no source needs, works out which members the changed
 * records updated, writes each source's members, included records and dangling references, and
 * commits. Returns what changed.
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

  // What changed among the records decides which members are updated.
  const changedRecords = records.changes();
  const changed = new Set([...changedRecords.added, ...changedRecords.updated, ...changedRecords.removed]);
  const changeset: Omit<Changeset, 'empty'> = { sources: {}, records: changedRecords };
  for (const source of input.sources) {
    const closure = input.closures.get(source.key)!;
    const listed = input.members.get(source.key)!;
    const storedMembers = tx.members(source.key);
    const members = storedAs(listed, storedMembers, records);
    // Members stored with other options are updated, all of them: their entries are made with the new ones.
    const sameOptions = stored.get(source.key)?.fingerprint === source.fingerprint;
    changeset.sources[source.key] =
      sameOptions && members.ids === storedMembers.ids && changed.size === 0 && listed.changed.size === 0
        ? emptyChanges() // the stored list, with the same stamps, and nothing its members reach changed
        : sourceChanges(source, members.ids, storedMembers.ids, sameOptions, changed, closure, tx);
    // A stored row stands when the list and its stamps are as stored; a new source gets one, even empty.
    tx.writeSource(
      { ...source, syncedAt: input.syncedAt },
      stored.has(source.key) && members === storedMembers ? undefined : members,
      closure.kept ? undefined : closure.included,
      uniqueReferences(closure.dangling),
    );
  }
  const cache = tx.commit(input.head, input.etags);
  return { changeset: { ...changeset, empty: isEmptyChangeset(changeset) }, cache };
}

/**
 * A source's members as they are stored: each once (pages that shifted while they were read may
 * list one twice), only those that exist now, each with the stamps of its record as stored
 * (those listed as they were stored, with the stamps stored with them).
 */
function storedAs(listed: Listed, stored: StoredMembers, records: Records): StoredMembers {
  const isNew = (id: string) => listed.changed.has(id) || records.dropped.has(id);
  // Most often the members are those stored, in the same order: only those that changed have other stamps.
  if (sameList(listed.ids, stored.ids)) {
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
  const out: StoredMembers = { ids: [], updatedAt: [], revisions: [] };
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
 * A source's added, updated and removed members against the stored ones. Updated: those stored
 * with other options, else those whose includes reach a changed record (worked out for the
 * members a change may affect, from the nodes the closure read or, when it was kept, the cache's).
 */
function sourceChanges(
  source: SyncSource,
  members: readonly string[],
  before: readonly string[],
  sameOptions: boolean,
  changed: ReadonlySet<string>,
  closure: SourceClosure,
  tx: CacheTransaction,
): SourceChanges {
  const old = new Set(before);
  const current = new Set(members);
  const kept = members.filter((id) => old.has(id));
  const changes: SourceChanges = {
    added: members.filter((id) => !old.has(id)),
    updated: [],
    removed: before.filter((id) => !current.has(id)),
  };
  if (!sameOptions) return { ...changes, updated: kept };
  const options = includeOptions(source);
  const affected = affectedBy(changed, options, (ids, assetsOnly) => tx.records.referrers(ids, assetsOnly));
  const candidates = kept.filter((id) => affected.has(id));
  if (candidates.length === 0) return changes;
  // A closure worked out in this run holds the nodes of every member's reach; else read those of the candidates.
  const nodes = closure.nodes ?? reach(candidates, options, (ids) => tx.records.nodes(ids)).nodes;
  const updated = updatedMembers(candidates, options, changed, nodes);
  changes.updated = kept.filter((id) => updated.has(id));
  return changes;
}

/** References once each, in order of document and field. */
function uniqueReferences<T extends { from: string; field: string; id: string }>(references: readonly T[]): T[] {
  const unique = new Map(references.map((d) => [`${d.from}\u0000${d.field}\u0000${d.id}`, d]));
  return [...unique.values()].sort((a, b) =>
    a.from + a.field < b.from + b.field ? -1 : a.from + a.field > b.from + b.field ? 1 : 0,
  );
}
