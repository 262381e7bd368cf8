import { collectionMembers } from './answer.ts';
import { refusalOf } from './errors.ts';
import { idIndex, likeTexts } from './filters.ts';
import type { PreparedRepository } from './prepared-repository.ts';
import { ranks } from './sorting.ts';
import { column } from './indexes.ts';

/**
 * Works out on `next`, a reloaded snapshot about to go live, what requests had worked out on
 * `previous`, the snapshot it replaces: the first requests after a reload are then as fast as
 * those before it (a dev refresh syncs right after a reload). Collections are made with the new
 * snapshot's definitions; what the new snapshot refuses (a collection it no longer has, a sort
 * on a field it lost) is left to a request that asks for it.
 */
export function warmFrom(next: PreparedRepository, previous: PreparedRepository): void {
  const done = previous.indexes;
  for (const [index, make] of [
    [done.columns, column],
    [done.sortRanks, ranks],
    [done.likeTexts, likeTexts],
  ] as const) {
    for (const { source, view } of index.values()) refusalOf(() => make(next, source, view));
  }
  for (const { apiId, view } of done.collections.values()) {
    const definition = next.snapshot.collections.find((c) => c.apiId === apiId);
    if (definition) refusalOf(() => collectionMembers(next, definition, view));
  }
  if (done.ids) idIndex(next);
  if (done.localFiles) next.localFiles();
}
