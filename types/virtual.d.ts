// Declarations of the virtual:comfortable/... modules for plain Vite projects, with entries
// whose fields are Record<string, unknown>. Reference it from your tsconfig:
// "types": ["comfortable-loader/virtual"]. The file the Vite plugin writes after each sync
// (comfortable.d.ts) references this one and types each synced source's fields precisely.
declare module 'virtual:comfortable/collections/*' {
  import type { VirtualEntry as Entry } from 'comfortable-loader/vite';
  export const entries: Entry[];
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(id: string, locale?: string): Entry | undefined;
  export default entries;
}
declare module 'virtual:comfortable/queries/*' {
  import type { VirtualEntry as Entry } from 'comfortable-loader/vite';
  export const entries: Entry[];
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(id: string, locale?: string): Entry | undefined;
  export default entries;
}
declare module 'virtual:comfortable/aliases/*' {
  import type { VirtualEntry as Entry } from 'comfortable-loader/vite';
  /** The entry in the default locale, or in the locale of a `.../<locale>` import. */
  export const entry: Entry;
  export const entries: Record<string, Entry>;
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(locale?: string): Entry | undefined;
  export default entry;
}
