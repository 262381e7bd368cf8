import type { ForSource, LocaleView, PreparedRecord, PreparedRepository } from './prepared-repository.ts';
import {
  type Kind,
  kindOf,
  type MetaName,
  metaKind,
  type Normalized,
  normalizeStored,
  type ValueSource,
} from './values.ts';

/**
 * Filling the indexes of a prepared repository (`SnapshotIndexes`): what a request works out
 * once and the next ones use again.
 */

/**
 * Every document's normalised value of a field (or meta name) in a locale, by record index,
 * computed on first use and kept for the snapshot's lifetime.
 */
export function column(repository: PreparedRepository, source: ValueSource, locale: LocaleView): Normalized[] {
  const view = source.scope === 'meta' ? '' : locale === 'all' ? repository.defaultLocale : locale;
  return kept(repository.indexes.columns, source, view, () =>
    repository.documents.map((record) => {
      if (source.scope === 'meta') {
        // Dates and ids a prepared record has parsed already (a new snapshot's first "changed since" scans them all).
        if (source.name === 'id') return record.idBig;
        if (source.name === 'updatedAt' || source.name === 'createdAt') return record[source.name];
        return normalizeStored(record.meta[source.name as MetaName], metaKind(source.name)!);
      }
      const field = record.type.fields.get(source.name);
      const kind = field && kindOf(field.type);
      return kind ? normalizeStored(record.value(source.name, view), kind, field.type) : undefined;
    }),
  );
}

/** The kind of a field for a document's content type, or of a meta name. */
export function kindFor(record: PreparedRecord, source: ValueSource): Kind | undefined {
  if (source.scope === 'meta') return metaKind(source.name);
  const field = record.type.fields.get(source.name);
  return field && kindOf(field.type);
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
