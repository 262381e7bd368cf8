import { resolve } from 'node:path';
import { inodeOf, removeDatabase } from './database.ts';
import { CacheReader } from './reader.ts';

export { CacheError } from './database.ts';
export { CacheReader } from './reader.ts';
export type { Link, Member } from './reader.ts';
export type { Reference } from './records.ts';
export type { CacheHead } from './head.ts';
export type { DanglingReference, StoredSource } from './transaction.ts';
export { cacheRootOf, originCacheDir, touchOrigin } from './origins.ts';
export type { ContentOrigin } from './origins.ts';
export type { Node, Records } from './records.ts';
export { CacheTransaction } from './transaction.ts';
export type { Etags, StoredMembers } from './transaction.ts';
export { cacheErrorOf } from './database.ts';

/** One reader per cache folder in a process, opened again when the database file was replaced. */
const readers = new Map<string, { reader: CacheReader; inode: number }>();

/**
 * The committed content of the cache in `dir`, or undefined when there is none (yet). Readers
 * are shared within a process; each read sees the last committed sync.
 */
export function openCache(dir: string): CacheReader | undefined {
  const path = resolve(dir);
  const inode = inodeOf(path);
  const known = readers.get(path);
  if (known && known.inode === inode && known.reader.isCurrent()) return known.reader;
  known?.reader.close();
  readers.delete(path);
  if (inode === undefined) return undefined;
  const reader = CacheReader.open(path);
  if (reader) readers.set(path, { reader, inode });
  return reader;
}

/** Removes the cache in `dir` (the next sync starts from nothing). */
export function clearCache(dir: string): void {
  const path = resolve(dir);
  readers.get(path)?.reader.close();
  readers.delete(path);
  removeDatabase(path);
}
