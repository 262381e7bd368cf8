// Declarations of the virtual:comfortable/... modules for plain Vite projects.
// Reference it from your tsconfig: "types": ["comfortable-loader/virtual"].
declare module 'virtual:comfortable/collections/*' {
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
  /** The entry in the default locale, or in the locale of a `.../<locale>` import. */
  export const entry: Entry;
  export const entries: Record<string, Entry>;
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(locale?: string): Entry | undefined;
  export default entry;
}
