import './node-check.ts';

export * from './api/index.ts';
export * from './wire/schemas.ts';
export * from './sync/index.ts';
// What `astro add comfortable-loader` imports: the Astro integration (it loads no Astro code itself).
export { comfortable as default } from './astro/integration.ts';
export type { ComfortableIntegrationOptions } from './astro/integration.ts';
