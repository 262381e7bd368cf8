import { z } from 'zod';
import { openCache } from '../cache/index.ts';
import { entrySchemaFor } from '../sync/entries.ts';
import type { SharedSync } from '../sync/shared.ts';
import { toTypeScript } from './schema.ts';

/** Generic declarations of the virtual modules; shipped as `comfortable-loader/virtual` for plain Vite. */
export const genericDeclarations = `declare module 'virtual:comfortable/collections/*' {
  import type { VirtualEntry as Entry } from 'comfortable-loader';
  export const entries: Entry[];
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(id: string, locale?: string): Entry | undefined;
  export default entries;
}
declare module 'virtual:comfortable/queries/*' {
  import type { VirtualEntry as Entry } from 'comfortable-loader';
  export const entries: Entry[];
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(id: string, locale?: string): Entry | undefined;
  export default entries;
}
declare module 'virtual:comfortable/aliases/*' {
  import type { VirtualEntry as Entry } from 'comfortable-loader';
  /** The entry in the default locale, or in the locale of a \`.../<locale>\` import. */
  export const entry: Entry;
  export const entries: Record<string, Entry>;
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(locale?: string): Entry | undefined;
  export default entry;
}
`;

/**
 * Declarations for Astro's `injectTypes`: the generic ones, and precise ones per synced source
 * when a cache exists (after the first sync).
 */
export async function virtualModuleTypes(shared: SharedSync): Promise<string> {
  let precise = '';
  try {
    const config = shared.config();
    const cache = config.cacheDir ? openCache(config.cacheDir) : undefined;
    for (const { key, kind, name } of cache?.sources() ?? []) {
      const folder = { collection: 'collections', alias: 'aliases', query: 'queries' }[kind];
      const types = cache!.contentTypes([key]);
      // A module's entries are the sync's, with a page's cacheKey: relations are { id, contentType }.
      const variants = types.map((type) => toTypeScript(entrySchemaFor(cache!.head.model, type).extend({ cacheKey: z.string() }), '  '));
      const entryType = variants.length ? variants.map((v) => `(${v})`).join(' | ') : 'import("comfortable-loader").Entry';
      const module = `virtual:comfortable/${folder}/${name}`;
      const common = `  type Entry = ${entryType};\n  export const locales: string[];\n  export const defaultLocale: string;\n`;
      precise +=
        kind === 'alias'
          ? `declare module '${module}' {\n${common}  export const entry: Entry;\n  export const entries: Record<string, Entry>;\n  export function getEntry(locale?: string): Entry | undefined;\n  export default entry;\n}\n`
          : `declare module '${module}' {\n${common}  export const entries: Entry[];\n  export function getEntry(id: string, locale?: string): Entry | undefined;\n  export default entries;\n}\n`;
    }
  } catch {
    // no cache yet, or not configured: the generic declarations still apply
  }
  return genericDeclarations + precise;
}
