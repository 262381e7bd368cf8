export { comfortable, comfortable as default, parseIntegrationOptions, remotePatterns } from './integration.ts';
export type { ComfortableIntegrationOptions } from './integration.ts';
export { comfortableLoader, defaultEntryId } from './loader.ts';
export { pageKey } from '../sync/page-keys.ts';
export type { KeyPart } from '../sync/page-keys.ts';
export type { ComfortableLoaderOptions, ComfortableEntryData, EntryIdInput } from './loader.ts';
export { entrySchema, fieldsSchema, createEntrySchema, astroReferenceSchema } from './schema.ts';
export { ConfigError } from '../sync/config.ts';
