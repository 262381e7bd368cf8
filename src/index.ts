export * from './api/index.ts';
export * from './wire/schemas.ts';
export * from './sync/index.ts';
