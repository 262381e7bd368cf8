export { sync, SyncError, defaultCacheDir, consoleLogger, packageVersion } from './engine.ts';
export type { SyncResult, SyncLogger } from './engine.ts';
export { parseSyncConfig, syncConfigSchema, sourceOptionsSchema, sourcesOf, ConfigError } from './config.ts';
export type { SyncConfig, SyncConfigInput, SourceOptions, Source } from './config.ts';
export type { Changeset, SourceChanges } from './changeset.ts';
export { readManifest, RecordReader, CacheError, clearCache } from './cache.ts';
export type { Manifest, SourceState, RecordEntry } from './cache.ts';
export { fallbackChains, localizeRecord } from './locales.ts';
export type { Locales, LocalizedFields } from './locales.ts';
export { normalizeRecord, referencesOf, digestOf } from './records.ts';
export type { StoredRecord, Model, FieldKind, Ref } from './records.ts';
export {
  entrySchema,
  entrySchemaFor,
  entryMetaSchema,
  entryOf,
  loadEntries,
  imageSchema,
  referenceSchema as entryReferenceSchema,
  richtextSchema,
  locationSchema,
  fieldValueSchemas,
} from './entries.ts';
export type { Entry, EntryReference, Image } from './entries.ts';
