import '../node-check.ts';
export { comfortable, comfortable as default, parseIntegrationOptions, remotePatterns } from './integration.ts';
export type { ComfortableIntegrationOptions } from './integration.ts';
export { comfortableLoader } from './loader.ts';
export { defaultEntryId } from './loader-options.ts';
export { pageKey } from '../entries/page-keys.ts';
export { alternates, langOf } from './i18n.ts';
export { richTextNodes } from './richtext.ts';
export type {
  RichTextAttributes,
  RichTextComponents,
  RichTextImage,
  RichTextLink,
  RichTextLinks,
  RichTextNode,
} from './richtext.ts';
export type { Alternate } from './i18n.ts';
export type { KeyPart } from '../entries/page-keys.ts';
export type { ComfortableEntryData } from './loader.ts';
export type { RenderedMarkdown } from './renderer.ts';
export type { ComfortableLoaderOptions, EntryIdInput } from './loader-options.ts';
export { entrySchema, fieldsSchema, createEntrySchema, astroReferenceSchema } from './schema.ts';
export { ConfigError } from '../sync/config.ts';
export { comfortableLiveLoader } from './live.ts';
export type { ComfortableLiveLoader } from './live.ts';
export { cacheTag } from './live-entries.ts';
export type { ComfortableLiveEntryData, ComfortableLiveRecord } from './live-entries.ts';
export { isComfortableLiveError } from './live-errors.ts';
export type { ComfortableLiveError, LiveErrorCode } from './live-errors.ts';
export type {
  ComfortableLiveLoaderOptions,
  FieldsSchema,
  LiveCollectionFilter,
  LiveEntryFilter,
} from './live-options.ts';
