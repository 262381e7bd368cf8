import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Plugin } from 'vite';
import type { VirtualEntry } from '../entries/entries.ts';
import type { ComfortableViteApi } from './plugin.ts';

/** What `entryPages` makes a page of, and how. */
export interface EntryPagesOptions {
  /** The entries, as `virtual:comfortable/<from>` gives them: `collections/posts`, `collections/posts/en_US`, … */
  from: string;
  /** The page's file, relative to the output folder, such as `${post.locale}/posts/${post.id}/index.html`. */
  path: (entry: VirtualEntry) => string;
  /** The page: a whole HTML document. */
  page: (entry: VirtualEntry) => string | Promise<string>;
}

/**
 * A page per entry, from one rule for both: `vite build` writes each page next to the site's
 * own, and `vite dev` serves it at the same URL (`/en_US/posts/7/` for `en_US/posts/7/index.html`),
 * with Vite's client in it, so the page reloads when the CMS changes what it shows, as the rest
 * of dev does.
 *
 * @example
 * const content = comfortable({ collections: { posts: {} } });
 * export default defineConfig({
 *   plugins: [content, entryPages(content, { from: 'collections/posts', path: (post) =>
 *     `${post.locale}/posts/${post.id}/index.html`, page: (post) => `<h1>${post.fields.title}</h1>` })],
 * });
 */
export function entryPages(content: { api: ComfortableViteApi }, options: EntryPagesOptions): Plugin {
  return {
    name: 'comfortable-loader:entry-pages',
    async generateBundle() {
      for (const entry of await content.api.entries(options.from))
        this.emitFile({ type: 'asset', fileName: options.path(entry), source: await options.page(entry) });
    },
    configureServer(server) {
      const base = server.config.base;
      server.middlewares.use((request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) => {
        if (request.method !== 'GET' && request.method !== 'HEAD') return next();
        const url = request.url ?? '/';
        const path = decodeURIComponent(url.split(/[?#]/)[0]!);
        if (!path.startsWith(base)) return next();
        const file = path.slice(base.length);
        const wanted = new Set([file, file.endsWith('/') || file === '' ? `${file}index.html` : `${file}/index.html`]);
        void (async () => {
          // The entries of the sync dev serves now: a page asked after a refresh shows it.
          const entry = (await content.api.entries(options.from)).find((e) => wanted.has(options.path(e)));
          if (!entry) return next();
          const html = await server.transformIndexHtml(path, await options.page(entry), url);
          response.setHeader('content-type', 'text/html; charset=utf-8');
          response.end(request.method === 'HEAD' ? undefined : html);
        })().catch(next);
      });
    },
  };
}
