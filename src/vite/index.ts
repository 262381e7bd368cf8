import '../node-check.ts';
export {
  comfortableVite,
  comfortableVite as comfortable,
  comfortableVite as default,
  virtualModule,
  parseVirtualId,
  virtualPrefix,
} from './plugin.ts';
export type { ComfortableViteApi, ComfortableViteOptions } from './plugin.ts';
export { ComfortableViteError } from './errors.ts';
export { entryPages } from './pages.ts';
export type { EntryPagesOptions } from './pages.ts';
export type { ModuleData } from './module.ts';
export { refreshMiddleware, defaultRefreshPath } from './refresh.ts';
export { pageKey } from '../entries/page-keys.ts';
export type { KeyPart } from '../entries/page-keys.ts';
export { signWebhook, WebhookVerifier, webhookHeaders, webhookToleranceSeconds } from '../wire/webhook.ts';
// The entry types a Vite project needs, from an entry that reaches no Astro code or types (the package root does).
export type {
  Asset,
  AssetFile,
  Entry,
  EntryReference,
  Image,
  UnresolvedAsset,
  VirtualEntry,
} from '../entries/entries.ts';
export type { Changeset, SourceChanges } from '../sync/changeset.ts';
