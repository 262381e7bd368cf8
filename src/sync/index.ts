export { sync, SyncError, defaultCacheDir, consoleLogger, packageVersion } from './engine.ts';
export type { SyncResult, SyncLogger, SyncHints } from './engine.ts';
export { parseSyncConfig, syncConfigSchema, sourceOptionsSchema, sourcesOf, ConfigError } from './config.ts';
export type { SyncConfig, SyncConfigInput, SourceOptions, Source } from './config.ts';
export type { Changeset, SourceChanges } from './changeset.ts';
export { openCache, clearCache, CacheReader, CacheError, DamagedRecordError } from '../cache/index.ts';
export type {
  CacheHead,
  Member,
  Reference as RecordReference,
  StoredSource,
  DanglingReference,
} from '../cache/index.ts';
export { fallbackChains, localizeRecord } from './locales.ts';
export type { Locales, LocalizedFields } from './locales.ts';
export { normalizeRecord, referencesOf, referenceList, digestOf } from './records.ts';
export type { StoredRecord, Model, FieldKind, Ref } from './records.ts';
export {
  entrySchemaFor,
  entryMetaSchema,
  entryOf,
  loadEntries,
  imageSchema,
  assetFileSchema,
  unresolvedAssetSchema,
  assetSchema,
  referenceSchema as entryReferenceSchema,
  richtextSchema,
  locationSchema,
  fieldValueSchemas,
} from './entries.ts';
export type { Asset, AssetFile, Entry, EntryReference, Image, UnresolvedAsset, VirtualEntry } from './entries.ts';
export { cacheKeys, pageKey } from './page-keys.ts';
export type { KeyPart } from './page-keys.ts';
