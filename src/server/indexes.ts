import type { LocaleView, PreparedRecord } from './prepared-repository.ts';
import type { Normalized, ValueSource } from './values.ts';

/** A value worked out for a field or meta name in a locale view, with what it was made from. */
export interface ForSource<T> {
  source: ValueSource;
  /** The locale view the value was made for (meta names have one value for every view). */
  view: LocaleView;
  value: T;
}

/**
 * What the server works out from one snapshot when a request first needs it, kept while the
 * snapshot is live: collections in their order, columns of values, sort ranks, `like` texts,
 * the id index and the asset files. Each is filled by the function that needs it (see
 * `collectionMembers`, `column`, `ranks`, `likeTexts`, `idIndex`, `sortedDocuments`); `warmFrom`
 * in `warm.ts` does on a reloaded snapshot what the one it replaces had worked out (but the
 * orders, quick to make again from the ranks).
 */
export class SnapshotIndexes {
  /** The members of a collection in its order, by `<apiId>:<view>`. */
  readonly collections = new Map<string, { apiId: string; view: LocaleView; members: PreparedRecord[] }>();
  /** Each document's normalised value, by record index; by `<scope>.<name>:<view>`. */
  readonly columns = new Map<string, ForSource<Normalized[]>>();
  /** Each document's rank for a sort key (-1 when it has no value), by record index; keyed as `columns`. */
  readonly sortRanks = new Map<string, ForSource<Int32Array>>();
  /** Each document's texts a `like` filter matches, case-folded, by record index; keyed as `columns`. */
  readonly likeTexts = new Map<string, ForSource<(string[] | undefined)[]>>();
  /** The documents of each `meta.id`, as the id column reads it. */
  ids: Map<bigint, PreparedRecord[]> | undefined;
  /** The relative paths of the asset files, the only files `/files/<repo>/` serves. */
  localFiles: Set<string> | undefined;
  /** Every document in the order of a sorting, for the last few sortings and locales asked (see `sortedDocuments`). */
  readonly orders = new Map<string, PreparedRecord[]>();
}

/** The key of a source's value in a view, in the maps of `SnapshotIndexes`: one for every view of a meta name. */
const sourceKey = (source: ValueSource, view: LocaleView): string =>
  `${source.scope}.${source.name}:${source.scope === 'meta' ? '' : view}`;

/** The value `map` keeps for a source in a view, made (and kept) when it has none. */
export function kept<T>(map: Map<string, ForSource<T>>, source: ValueSource, view: LocaleView, make: () => T): T {
  const key = sourceKey(source, view);
  let entry = map.get(key);
  if (!entry) map.set(key, (entry = { source, view, value: make() }));
  return entry.value;
}

/** The value `cache` keeps under `key`, made when it has none; past `max` entries the least recently used goes. */
export function recent<T>(cache: Map<string, T>, key: string, max: number, make: () => T): T {
  let value = cache.get(key);
  if (value !== undefined)
    cache.delete(key); // set again below, as the most recent
  else {
    value = make();
    if (cache.size >= max) cache.delete(cache.keys().next().value!);
  }
  cache.set(key, value);
  return value;
}
