import { z } from 'zod';
import type { CacheReader } from '../cache/index.ts';
import { entrySchemaFor } from '../entries/entries.ts';
import { toTypeScript } from '../entries/typescript.ts';

/**
 * Declarations of the `virtual:comfortable/...` modules. The generic ones type every entry's
 * fields as `Record<string, unknown>` (shipped as `comfortable-loader/virtual`); the precise ones
 * type each synced source's entries from what the cache holds of its content types, so a page
 * reads `entry.fields.title` without a cast and a misspelt field fails to compile. Astro injects
 * both; the Vite plugin writes the precise ones to a file of the project (`declarationFile`).
 */

/** The package entry the Vite declarations import `VirtualEntry` from: it reaches neither astro nor its types. */
const viteTypesEntry = 'comfortable-loader/vite';

/** The exports of a module of `folder` (`collections`, `aliases`, `queries`), whose entry type is `Entry`. */
function moduleExports(folder: string): string {
  return folder === 'aliases'
    ? `  /** The entry in the default locale, or in the locale of a \`.../<locale>\` import. */
  export const entry: Entry;
  export const entries: Record<string, Entry>;
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(locale?: string): Entry | undefined;
  export default entry;
`
    : `  export const entries: Entry[];
  export const locales: string[];
  export const defaultLocale: string;
  export function getEntry(id: string, locale?: string): Entry | undefined;
  export default entries;
`;
}

/**
 * Generic declarations, their entry type imported from `from` (an entry of this package that exports `VirtualEntry`).
 */
export function genericDeclarations(from: string): string {
  return ['collections', 'queries', 'aliases']
    .map(
      (folder) => `declare module 'virtual:comfortable/${folder}/*' {
  import type { VirtualEntry as Entry } from '${from}';
${moduleExports(folder)}}
`,
    )
    .join('');
}

const folders = { collection: 'collections', alias: 'aliases', query: 'queries' } as const;

/**
 * Precise declarations of the modules of every source the cache holds, and of their locale
 * variants (`.../<apiId>/*`, which TypeScript prefers to the generic `.../*` as the longer
 * match). A source whose entries have no content type yet gets `VirtualEntry` from `from`.
 */
export function sourceDeclarations(cache: CacheReader, from: string): string {
  let text = '';
  for (const { key, kind, name } of cache.sources()) {
    // A module's entries are the sync's, with a page's cacheKey: relations are { id, contentType }.
    const variants = cache
      .contentTypes([key])
      .map((type) => toTypeScript(entrySchemaFor(cache.head.model, type).extend({ cacheKey: z.string() }), '  '));
    const entryType = variants.length ? variants.map((v) => `(${v})`).join(' | ') : `import('${from}').VirtualEntry`;
    const module = `virtual:comfortable/${folders[kind]}/${name}`;
    // A locale variant has the same exports as the whole module.
    text +=
      `declare module '${module}' {\n  type Entry = ${entryType};\n${moduleExports(folders[kind])}}\n` +
      `declare module '${module}/*' {\n  export * from '${module}';\n  export { default } from '${module}';\n}\n`;
  }
  return text;
}

/**
 * The declaration file the Vite plugin writes: the precise declarations over the generic ones,
 * which it references rather than repeats, so a project that also lists `comfortable-loader/virtual`
 * in its tsconfig `types` declares nothing twice.
 */
export function declarationFile(cache: CacheReader): string {
  return (
    '// Written by the comfortable-loader Vite plugin after each sync: the types of the\n' +
    '// virtual:comfortable/... modules of the synced content. Do not edit it; include it in\n' +
    "// tsconfig.json. The plugin's dts option moves it or turns it off.\n" +
    '/// <reference types="comfortable-loader/virtual" />\n' +
    sourceDeclarations(cache, viteTypesEntry)
  );
}
