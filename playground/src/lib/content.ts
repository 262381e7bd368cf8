import { type CollectionEntry, type CollectionKey, getCollection, getEntry } from 'astro:content';
import { getPathByLocale } from 'astro:i18n';
import { type KeyPart, pageKey } from 'comfortable-loader/astro';
import { locales } from './i18n';

/** A relation field's value: a reference, or `{ collection: null, id, contentType }` when no collection holds its target (dangling). */
export type Relation = { collection: string; id: string } | { collection: null; id: string; contentType: string };

/** An asset field's item: an image (with its size), another file, or an asset that was not synced. */
export type ImageItem =
  | { kind: 'image'; id: string; src: string; width: number; height: number; alt: string }
  | { kind: 'file'; id: string; src: string; alt: string }
  | { kind: 'unresolved'; id: string; contentType: string };

export type Post = CollectionEntry<'posts'>;

/** Resolves a reference with `getEntry`; a dangling relation resolves to nothing instead of failing. */
export async function resolve<C extends CollectionKey>(
  collection: C,
  relation: Relation | null | undefined,
): Promise<CollectionEntry<C> | undefined> {
  if (relation?.collection !== collection) return undefined;
  return (await getEntry(relation as { collection: C; id: string })) as CollectionEntry<C> | undefined;
}

/** Resolves a list of references, skipping the ones that point nowhere. */
export async function resolveAll<C extends CollectionKey>(
  collection: C,
  relations: Relation[] | null | undefined,
): Promise<CollectionEntry<C>[]> {
  const entries: CollectionEntry<C>[] = [];
  for (const relation of relations ?? []) {
    const entry = await resolve(collection, relation);
    if (entry) entries.push(entry);
  }
  return entries;
}

/** The posts of one Astro locale, newest first. */
export async function postsIn(locale: string): Promise<Post[]> {
  const posts = await getCollection('posts', (post) => post.data.astroLocale === locale);
  return posts.sort((a, b) => (b.data.fields.publishedAt ?? '').localeCompare(a.data.fields.publishedAt ?? ''));
}

/** The events of one Astro locale, soonest first: their date stands in the section `details`. */
export async function eventsIn(locale: string): Promise<CollectionEntry<'events'>[]> {
  const events = await getCollection('events', (event) => event.data.astroLocale === locale);
  return events.sort((a, b) =>
    (a.data.fields.details?.startsAt ?? '').localeCompare(b.data.fields.details?.startsAt ?? ''),
  );
}

/**
 * The repository's code of an Astro locale (`de_CH` for `de-CH`), as the query modules' entries
 * and the default entry ids name it: from an entry, which carries both.
 */
export async function repositoryLocale(locale: string): Promise<string | undefined> {
  return (await getCollection('home', (entry) => entry.data.astroLocale === locale))[0]?.data.locale;
}

/** The first image of an asset field. */
export function firstImage(items: ImageItem[] | null | undefined) {
  return items?.find((item) => item.kind === 'image');
}

/** Props for `<Image>`: the image scaled down to `width`, keeping its aspect ratio. */
export function fit(image: { src: string; width: number; height: number; alt: string }, width: number) {
  const w = Math.min(width, image.width);
  return { src: image.src, width: w, height: Math.round((w * image.height) / image.width), alt: image.alt };
}

/**
 * One path per Astro locale for `getStaticPaths` (its path, such as `de-ch`; the page reads the
 * locale from `Astro.currentLocale`), each with the `cacheKey` of what the page shows in that
 * locale, so an incremental build renders it again exactly when that changes.
 */
export const localePathsShowing = async (shows: (locale: string) => KeyPart | Promise<KeyPart>) =>
  Promise.all(
    locales.map(async (locale) => ({
      params: { locale: getPathByLocale(locale) },
      cacheKey: pageKey(await shows(locale)),
    })),
  );
