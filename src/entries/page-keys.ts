import type { CacheReader, Link } from '../cache/index.ts';
import { digest } from '../model/digests.ts';

/**
 * Keys for Astro's incremental builds (`experimental.incrementalBuild`): a page is rendered again
 * only when its `cacheKey` changes, so a key must change whenever anything the page shows does.
 *
 * The key of a document covers, whatever the sync's `includes`:
 * - the document, everything it references, and everything those reference (two relations
 *   away: a post, its related posts, and the authors of those), and
 * - every document that references it, with what those reference (an author and the posts
 *   that name that author, with their covers and categories).
 * A reference to a record the cache does not hold counts too, so the key changes when it comes.
 * Assets count like documents: an asset edited changes the keys of the pages that show it.
 */

/** The reference graph of one committed cache, with the keys worked out from it so far. */
class KeyGraph {
  readonly #links: Map<string, Link>;
  readonly #referrers = new Map<string, string[]>();
  readonly #near = new Map<string, string>();
  readonly #keys = new Map<string, string>();

  constructor(links: Map<string, Link>) {
    this.#links = links;
    for (const [id, link] of links) {
      for (const target of new Set(link.targets)) {
        const list = this.#referrers.get(target);
        if (list) list.push(id);
        else this.#referrers.set(target, [id]);
      }
    }
    for (const list of this.#referrers.values()) list.sort();
  }

  /** A record and what it references: the record's digest and each target's (`-` when missing). */
  #nearDigest(id: string): string {
    let near = this.#near.get(id);
    if (near === undefined) {
      const link = this.#links.get(id);
      near = link
        ? digest(
            `${id}:${link.digest}>${link.targets.map((t) => `${t}:${this.#links.get(t)?.digest ?? '-'}`).join(',')}`,
          )
        : `${id}:-`;
      this.#near.set(id, near);
    }
    return near;
  }

  /** The records that reference `id`. */
  referrers(id: string): readonly string[] {
    return this.#referrers.get(id) ?? [];
  }

  key(id: string): string {
    let key = this.#keys.get(id);
    if (key === undefined) {
      const targets = this.#links.get(id)?.targets ?? [];
      const referrers = this.#referrers.get(id) ?? [];
      key = digest(
        `${this.#nearDigest(id)}>${targets.map((t) => this.#nearDigest(t)).join(',')}<${referrers.map((r) => this.#nearDigest(r)).join(',')}`,
      );
      this.#keys.set(id, key);
    }
    return key;
  }
}

/** The graph of each reader, made again after each sync (each commits another `lastSync`). */
const graphs = new WeakMap<CacheReader, { lastSync: string; graph: KeyGraph }>();

function graphOf(cache: CacheReader): KeyGraph {
  const { lastSync } = cache.head;
  let held = graphs.get(cache);
  if (held?.lastSync !== lastSync) graphs.set(cache, (held = { lastSync, graph: new KeyGraph(cache.links()) }));
  return held.graph;
}

/**
 * The incremental-build key of each document of `ids`, from the committed cache. `salt` stands for
 * what else decides the entries (the options they were made with), so that it changes them all.
 */
export function cacheKeys(cache: CacheReader, ids: Iterable<string>, salt = ''): Map<string, string> {
  const graph = graphOf(cache);
  const keys = new Map<string, string>();
  for (const id of ids) keys.set(id, salt ? digest(`${graph.key(id)}|${salt}`) : graph.key(id));
  return keys;
}

/**
 * The documents whose entries show something of these records: the records themselves and those
 * that reference them (a reference's id may be made from its target's fields).
 */
export function showingAny(cache: CacheReader, ids: Iterable<string>): Set<string> {
  const graph = graphOf(cache);
  const showing = new Set<string>();
  for (const id of ids) {
    showing.add(id);
    for (const referrer of graph.referrers(id)) showing.add(referrer);
  }
  return showing;
}

/** Anything `pageKey` takes: an entry of a collection, an entry of a virtual module, a key, or lists of those. */
export type KeyPart =
  | string
  | { cacheKey: string }
  | { data: { cacheKey: string } }
  | readonly KeyPart[]
  | null
  | undefined;

/**
 * The `cacheKey` of a page that shows several entries (a list, a tag page, a home page with
 * the newest posts): one key over theirs, in the order given. A page that shows one entry and
 * what it references can use the entry's own `data.cacheKey`.
 *
 * @example
 * export async function getStaticPaths() {
 *   return locales.map((locale) => {
 *     const list = posts.filter((post) => post.data.locale === locale);
 *     return { params: { locale }, props: { list }, cacheKey: pageKey(list) };
 *   });
 * }
 */
export function pageKey(...parts: KeyPart[]): string {
  const keys: string[] = [];
  const add = (part: KeyPart): void => {
    if (part === null || part === undefined) return;
    if (typeof part === 'string') keys.push(part);
    else if (Array.isArray(part)) for (const inner of part) add(inner);
    else if ('cacheKey' in part && typeof part.cacheKey === 'string') keys.push(part.cacheKey);
    else if ('data' in part && typeof part.data?.cacheKey === 'string') keys.push(part.data.cacheKey);
    else
      throw new TypeError(
        'pageKey() takes entries of comfortableLoader() collections or of virtual:comfortable modules, ' +
          'their keys, or lists of those',
      );
  };
  for (const part of parts) add(part);
  return digest(`${keys.length}:${keys.join(',')}`);
}
