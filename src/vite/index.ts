export { comfortableVite, comfortableVite as comfortable, comfortableVite as default, virtualModule, parseVirtualId, virtualPrefix } from './plugin.ts';
export type { ComfortableViteOptions } from './plugin.ts';
export { refreshMiddleware, verifySignature, defaultRefreshPath } from './refresh.ts';
