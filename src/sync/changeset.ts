/** What a sync changed: per source (collection, alias, query) and over all records. */
export interface SourceChanges {
  /** Members that joined the source. */
  added: string[];
  /** Members whose record, or a record they include, changed. */
  updated: string[];
  /** Members that left the source (deleted, unpublished, or no longer matching). */
  removed: string[];
}

export interface Changeset {
  /** `collection:<apiId>`, `alias:<apiId>`, `query:<name>` → changes of its members. */
  sources: Record<string, SourceChanges>;
  /** Every record in the cache: documents and assets, members or included. */
  records: SourceChanges;
  /** True when nothing changed. */
  empty: boolean;
}

export function emptyChanges(): SourceChanges {
  return { added: [], updated: [], removed: [] };
}

/** No member (or record) added, updated or removed. */
export const noChanges = (c: SourceChanges): boolean =>
  c.added.length === 0 && c.updated.length === 0 && c.removed.length === 0;

export function isEmptyChangeset(changeset: Omit<Changeset, 'empty'>): boolean {
  return noChanges(changeset.records) && Object.values(changeset.sources).every(noChanges);
}
