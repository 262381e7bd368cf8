import './node-check.ts';

/*
 * The package root: what README.md and docs/ show, and nothing else. The Astro integration and
 * loaders are in `comfortable-loader/astro`, the Vite plugin in `comfortable-loader/vite`, the
 * local Read API in `comfortable-loader/server`.
 */

// What `astro add comfortable-loader` imports: the Astro integration (it loads no Astro code itself).
export { comfortable as default } from './astro/integration.ts';
export type { ComfortableIntegrationOptions } from './astro/integration.ts';

// The client (docs/client.md).
export { createClient } from './api/client.ts';
export type { ClientOptions, ListSource, PageOptions, ReadApiClient } from './api/client.ts';
export { Filter, Includes, Sorting } from './api/query.ts';
export type { FilterOperator, FilterValue, ListOptions, RecordOptions, SortDirection } from './api/query.ts';
export {
  AuthenticationError,
  BadRequestError,
  NetworkError,
  NotFoundError,
  RateLimitedError,
  ReadApiError,
  ServerError,
  TimeoutError,
  UnexpectedAnswerError,
} from './api/errors.ts';
export type { ReadApiErrorCode } from './api/errors.ts';
export type { EtagStore, ResponseEvent, Timeouts } from './api/transport.ts';
export type { RetryPolicy } from './api/retry.ts';
export type { ApiRecord, AssetAnswer, DocumentAnswer, ListAnswer, RepositoryAnswer } from './wire/schemas.ts';

// The sync and its cache (docs/sync.md).
export { sync, SyncError } from './sync/engine.ts';
export type { SyncHints, SyncLogger, SyncResult } from './sync/engine.ts';
export { ConfigError } from './sync/config.ts';
export type { SourceOptions, SyncConfig, SyncConfigInput } from './sync/config.ts';
export type { Changeset, SourceChanges } from './sync/changeset.ts';
export { CacheError, openCache } from './cache/index.ts';
export type { CacheHead, CacheReader, Member } from './cache/index.ts';
export type { Locales, LocalizedFields } from './model/locales.ts';
export type { Model, StoredRecord } from './model/records.ts';
export type { FieldKind } from './model/shapes.ts';

// Entries: a cached record as a page sees it.
export { entryOf, entrySchemaFor, fieldSchemas } from './entries/entries.ts';
export type {
  Asset,
  AssetFile,
  Entry,
  EntryReference,
  Image,
  UnresolvedAsset,
  VirtualEntry,
} from './entries/entries.ts';
