/**
 * What the loaders and the Vite plugin rewrite in an entry when the site is built from a copy
 * (see src/astro/copy-files.ts): links to the in-process server become paths of the site.
 */
export interface FileLinks {
  /** The fields with each file asset's `src` and the links in richtext HTML made paths of the site. */
  fields(fields: Record<string, unknown>): Record<string, unknown>;
  /** The rendered HTML with its links made paths of the site, but the images Astro optimises. */
  rendered<T extends { html: string }>(rendered: T | undefined): T | undefined;
}

/** The links of content not served from a copy: left as they are. */
const unchanged: FileLinks = { fields: (fields) => fields, rendered: (rendered) => rendered };

const key = Symbol.for('comfortable-loader.copy-files');

/**
 * The links of the copy served in this process, set by the integration (none when it asks the
 * CMS). On `globalThis`: the loaders are loaded with the content config, through another module
 * graph than the integration's.
 */
export function useFileLinks(links: FileLinks | undefined): void {
  (globalThis as { [key]?: FileLinks })[key] = links;
}

/** What the loaders rewrite in entries: the served copy's links, or nothing. */
export function fileLinks(): FileLinks {
  return (globalThis as { [key]?: FileLinks })[key] ?? unchanged;
}
