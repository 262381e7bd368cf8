import { fileURLToPath } from 'node:url';
import type { CacheReader } from '../cache/index.ts';
import { entryOf } from '../entries/entries.ts';
import { language, normal } from './i18n.ts';
import type { CollectionMap } from './collection-map.ts';

/**
 * The dev toolbar app "Comfortable" (components/toolbar-app.js): for the page in view, the
 * documents it shows, in which locale, with their revision, last update and the fields that fell
 * back; and a button that syncs now. Astro tells an integration nothing of what a page read, so
 * "shows" is what the page says: a document whose slug is a segment of the page's path, or whose
 * title is in the page's text, in the locale of the page's `lang`.
 */

export const toolbarApp = {
  id: 'comfortable',
  name: 'Comfortable',
  icon: '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2"><path d="M4 6h16M4 12h16M4 18h10"/></svg>',
  // components/ beside src/ and dist/: the same path from the sources and from the package.
  entrypoint: fileURLToPath(new URL('../../components/toolbar-app.js', import.meta.url)),
};

/** What the app sends of the page in view. */
interface PageQuery {
  path: string;
  /** The `lang` of the page's `<html>`. */
  lang: string;
  /** The page's text, as the reader sees it. */
  text: string;
}

/** What the app shows: the page's documents, how the content got here, and why it could not sync, if so. */
export type PageReport = ReturnType<typeof pageReport> & { error?: string | undefined };

const listed = 40;
/** A value that names rather than reads (`smoky-pozole`): not a title. */
const slugLike = /^[a-z0-9]+(?:-[a-z0-9]+)+$/;

/** The documents of the loaded collections that the page shows, in the page's locale. */
function pageReport(cache: CacheReader, collections: CollectionMap, query: PageQuery, syncedAt: Date | undefined) {
  const { locales } = cache.head;
  const keys = locales.locales.map((l) => l.key);
  const map = collections.site.locales?.mapOf(locales);
  const lang = query.lang.toLowerCase();
  const segments = query.path.split('/').filter(Boolean).map(decodeURIComponent);
  const locale =
    keys.find((key) => normal(key) === lang) ??
    keys.find((key) => String(map?.get(key) || '').toLowerCase() === (segments[0] ?? '').toLowerCase()) ??
    keys.find((key) => language(key) === lang.split('-')[0]);
  const found = [];
  if (locale) {
    for (const [collection, loader] of collections.loaders) {
      if (loader.locales && !loader.locales.includes(locale)) continue;
      const ids = loader.keys.flatMap((source) => cache.members(source).map((member) => member.id));
      for (const record of cache.records(new Set(ids)).values()) {
        const entry = entryOf(record, locale, locales, () => undefined);
        const strings = Object.values(entry.fields).filter((value): value is string => typeof value === 'string');
        const slug = strings.find((value) => value.length >= 3 && segments.includes(value));
        const title = strings.find((value) => value !== slug && !slugLike.test(value) && value.trim().length >= 4);
        const by = slug ? 'path' : title && query.text.includes(title.trim()) ? 'text' : undefined;
        if (!by) continue;
        found.push({
          collection,
          id: entry.id,
          locale,
          astroLocale: map?.get(locale) || undefined,
          contentType: entry.contentType,
          title: title ?? slug ?? entry.id,
          revision: entry.meta.revision,
          updatedAt: entry.meta.updatedAt,
          // The fields whose value came from another locale → that locale (null: none has one).
          fallbacks: entry.fallbacks,
          by, // how the page shows it: its slug is in the path, or its title in the text
        });
      }
    }
  }
  found.sort((a, b) => (a.by === b.by ? 0 : a.by === 'path' ? -1 : 1));
  return {
    path: query.path,
    locale,
    documents: found.slice(0, listed),
    more: Math.max(0, found.length - listed), // more documents matched than are listed
    syncedAt: syncedAt?.toISOString(),
  };
}

/** What the integration's `astro:server:setup` gives the app's server side. */
interface ToolbarServer {
  on<T>(event: string, callback: (data: T, client?: { send(event: string, payload: unknown): void }) => void): void;
  send<T>(event: string, payload: T): void;
}

/**
 * Answers the app: `comfortable:page` with the page's report, `comfortable:sync` by syncing
 * first (what changed is refreshed, as the dev polls do). The answer goes to the tab that asked.
 */
export function serveToolbar(
  toolbar: ToolbarServer,
  content: {
    /** What is served now, without syncing; undefined before the first sync. */
    served(): { cache: CacheReader; collections: CollectionMap; syncedAt: Date } | undefined;
    sync(): Promise<unknown>;
  },
): void {
  const answer = async (query: PageQuery, sync: boolean) => {
    let error: string | undefined;
    if (sync) await content.sync().catch((failure: Error) => (error = failure.message));
    const served = content.served();
    if (!served) return { path: query.path, error: error ?? 'Nothing is synced yet: the content is still loading' };
    return { ...pageReport(served.cache, served.collections, query, served.syncedAt), error };
  };
  for (const [event, sync] of [
    ['comfortable:page', false],
    ['comfortable:sync', true],
  ] as const) {
    toolbar.on<PageQuery>(event, (query, client) => {
      if (typeof query?.path !== 'string' || typeof query.lang !== 'string' || typeof query.text !== 'string') return;
      const to = client ?? toolbar;
      void answer(query, sync).then(
        (report) => to.send('comfortable:report', report),
        (failure: Error) => to.send('comfortable:report', { path: query.path, error: failure.message }),
      );
    });
  }
}
