import '../node-check.ts';
export { comfortableVite, comfortableVite as comfortable, comfortableVite as default, virtualModule, parseVirtualId, virtualPrefix } from './plugin.ts';
export type { ComfortableViteOptions } from './plugin.ts';
export { refreshMiddleware, defaultRefreshPath } from './refresh.ts';
export { pageKey } from '../sync/page-keys.ts';
export { signWebhook, WebhookVerifier, webhookHeaders, webhookToleranceSeconds } from '../wire/webhook.ts';
