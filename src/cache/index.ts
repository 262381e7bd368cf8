/** The cache: one SQLite database per folder, read through `CacheReader`, written in a `CacheTransaction`. */
export { CacheError } from './database.ts';
export { CacheReader, clearCache, openCache } from './reader.ts';
export type { DanglingReference, Link, Member, StoredSource } from './reader.ts';
export type { CacheHead } from './head.ts';
export { cacheRootOf, originCacheDir, touchOrigin } from './origins.ts';
export type { ContentOrigin } from './origins.ts';
export type { Node, Records } from './records.ts';
export { CacheTransaction } from './transaction.ts';
export type { Etags, StoredMembers } from './transaction.ts';
export { cacheErrorOf } from './database.ts';
