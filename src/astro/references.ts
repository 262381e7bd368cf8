import type { LoaderContext } from 'astro/loaders';
import type { CacheReader, Member } from '../cache/index.ts';
import { type Entry, entryOf, mapRelations } from '../entries/entries.ts';
import type { StoredRecord } from '../model/records.ts';
import { defaultEntryId } from './loader-options.ts';
import type { CollectionMap, LoaderDeclaration } from './collection-map.ts';

/**
 * Relation fields as Astro references. A relation becomes `{ collection, id }` when the
 * integration's `contentTypes` maps its target's content type to a collection that a
 * comfortableLoader() fills and that holds the target; the id is the one that collection's loader
 * gives the target (its `entryId`, or `<locale>/<id>`), whatever its source. Otherwise it is
 * `{ collection: null, id, contentType }`, so Astro never meets a reference to an entry that does
 * not exist. Such references are told in one warning per cause and collection, with the number
 * of places in the whole collection after the load (those of the entries it did not make again
 * too); each once per sync.
 */

/** What the conversion needs of the entries being made: their relation targets. */
interface TargetLookup {
  /** The content type of each relation target the cache holds. */
  targets: Map<string, string>;
  /** A target's record, for a custom entry id made from its fields. */
  target(id: string): StoredRecord | undefined;
}

const referenceKey = (from: string, field: string, to: string) => `${from}.${field}.${to}`;

/**
 * Warnings told since the last sync, by collection and cause (`<collection>|<cause>`), and the
 * references the sync told as dangling: a dev refresh, which loads a collection again, tells
 * none twice.
 */
const reportedSince = { lastSync: '', keys: new Set<string>(), dangling: new Set<string>() };

/** Places shown in a warning; the rest are counted. */
const shownPlaces = 3;

/** An entry's reference that stays unresolved: why, the target's content type, and its place. */
type Unresolved = [cause: string, contentType: string, from: string, field: string, to: string];

/**
 * The collection's meta key of its entries' unresolved references (entry id → list), kept from
 * load to load: a load that makes some entries again counts those of the others from it.
 */
const unresolvedKey = 'unresolved-references';

export class ReferenceConverter {
  readonly #cache: CacheReader;
  readonly #mapping: CollectionMap;
  readonly #logger: LoaderContext['logger'];
  readonly #collection: string;
  /** The documents each Astro collection holds, by what its loaders' sources list. */
  readonly #held = new Map<string, Set<string> | undefined>();
  /** The unresolved references of each entry this load made, by entry id. */
  readonly #made = new Map<string, Unresolved[]>();

  constructor(cache: CacheReader, mapping: CollectionMap, collection: string, logger: LoaderContext['logger']) {
    this.#cache = cache;
    this.#mapping = mapping;
    this.#collection = collection;
    this.#logger = logger;
    if (reportedSince.lastSync !== cache.head.lastSync) {
      // The sync has warned of the references the server cannot resolve already.
      const dangling = cache.dangling().map((ref) => referenceKey(ref.from, ref.field, ref.id));
      Object.assign(reportedSince, { lastSync: cache.head.lastSync, keys: new Set(), dangling: new Set(dangling) });
    }
  }

  /** The fields of the entry `id` with its relations converted. */
  fields(entry: Entry, lookup: TargetLookup, id: string): Record<string, unknown> {
    const unresolved: Unresolved[] = [];
    this.#made.set(id, unresolved);
    return mapRelations(entry.fields, this.#cache.head.model[entry.contentType], (ref, field) =>
      this.#convert(entry, field, ref, lookup, unresolved),
    );
  }

  /**
   * Warns of the references that stay unresolved in the collection after its load, once per
   * cause (and once a sync), with their number and the first places. `live` has the id of every
   * entry the collection holds now; `meta` keeps those of the entries this load did not make.
   */
  report(live: { has(id: string): boolean }, meta: LoaderContext['meta']): void {
    const kept = JSON.parse(meta.get(unresolvedKey) ?? '{}') as Record<string, Unresolved[]>;
    const all: Record<string, Unresolved[]> = {};
    for (const [id, list] of Object.entries(kept)) if (live.has(id) && !this.#made.has(id)) all[id] = list;
    for (const [id, list] of this.#made) if (list.length > 0) all[id] = list;
    if (Object.keys(all).length > 0) meta.set(unresolvedKey, JSON.stringify(all));
    else meta.delete(unresolvedKey);
    this.#made.clear();
    // Each place once, whatever the locales of the entries that hold it.
    const causes = new Map<string, { contentType: string; places: Map<string, string> }>();
    for (const list of Object.values(all)) {
      for (const [cause, contentType, from, field, to] of list) {
        const reference = referenceKey(from, field, to);
        if (reportedSince.dangling.has(reference)) continue;
        const group = causes.get(cause) ?? { contentType, places: new Map() };
        group.places.set(reference, `document ${from}, field ${field} → ${to}`);
        causes.set(cause, group);
      }
    }
    for (const [cause, { contentType, places }] of causes) {
      const key = `${this.#collection}|${cause}`;
      if (reportedSince.keys.has(key)) continue;
      reportedSince.keys.add(key);
      const shown = [...places.values()];
      const more = shown.length > shownPlaces ? ` and ${shown.length - shownPlaces} more` : '';
      this.#logger.warn(
        `${shown.length} ${shown.length === 1 ? 'reference stays' : 'references stay'} { collection: ` +
          `null, id, contentType }: ${this.#why(cause, contentType)} (${shown.slice(0, shownPlaces).join(', ')}${more})`,
      );
    }
  }

  #convert(
    entry: Entry,
    field: string,
    ref: { id: string; contentType: string },
    lookup: TargetLookup,
    unresolved: Unresolved[],
  ): unknown {
    const target = this.#mapping.collectionFor(ref.contentType);
    let cause: string | undefined;
    if (!lookup.targets.has(ref.id)) cause = 'not-synced';
    else if (!target) cause = `unmapped:${ref.contentType}`;
    // A collection contentTypes names is one a loader fills: the option is checked before any sync.
    else if (!target.loader || !this.#holds(target.collection, ref.id)) cause = `not-held:${target.collection}`;
    else if (target.loader.locales && !target.loader.locales.includes(entry.locale))
      cause = `not-in-locale:${target.collection}:${entry.locale}`;
    if (cause === undefined)
      return { collection: target!.collection, id: this.#targetId(entry, ref, target!.loader!.entryId, lookup) };
    unresolved.push([cause, ref.contentType, entry.id, field, ref.id]);
    return { collection: null, ...ref };
  }

  /** What a warning says of a cause, with the option that decides it. */
  #why(cause: string, contentType: string): string {
    const collection = cause.split(':')[1];
    if (cause === 'not-synced')
      return 'their documents are not in the synced content (beyond the includes depth of the sources)';
    if (cause.startsWith('not-in-locale:')) {
      return (
        `the collection "${collection}", to which contentTypes maps "${contentType}", has no entries ` +
        `in ${cause.split(':')[2]} (the locales option of its comfortableLoader())`
      );
    }
    if (cause.startsWith('not-held:'))
      return (
        `the collection "${collection}", to which contentTypes maps "${contentType}", does not hold ` +
        `their documents`
      );
    const holding = this.#mapping.collectionsHolding((sources) =>
      sources.some((source) => this.#cache.members(source).some((m) => m.contentType === contentType)),
    );
    const suggestion =
      holding.length > 0
        ? ` (the collection${holding.length > 1 ? 's' : ''} ${holding.map((c) => `"${c}"`).join(', ')} ` +
          `${holding.length > 1 ? 'hold' : 'holds'} them: contentTypes: { ${contentType}: '${holding[0]}' })`
        : '';
    return (
      `no collection holds the content type "${contentType}"; map it with the integration's ` +
      `contentTypes option${suggestion}`
    );
  }

  /** Whether the loaders that fill a collection hold a document. */
  #holds(collection: string, id: string): boolean {
    if (!this.#held.has(collection)) {
      const sources = this.#mapping.loaders.get(collection)?.keys;
      this.#held.set(
        collection,
        sources && new Set(sources.flatMap((source) => this.#cache.members(source).map((member) => member.id))),
      );
    }
    return this.#held.get(collection)?.has(id) ?? false;
  }

  /** The target's id as its own collection makes it: a custom entryId may use the target's fields (a slug). */
  #targetId(
    entry: Entry,
    ref: { id: string; contentType: string },
    entryId: LoaderDeclaration['entryId'],
    lookup: TargetLookup,
  ): string {
    const astroLocale = this.#mapping.site.locales?.mapOf(this.#cache.head.locales).get(entry.locale) || undefined;
    const input = { id: ref.id, locale: entry.locale, astroLocale, contentType: ref.contentType, fields: {} };
    if (!entryId) return defaultEntryId(input);
    const record = lookup.target(ref.id);
    return entryId({
      ...input,
      fields: record ? entryOf(record, entry.locale, this.#cache.head.locales, () => undefined).fields : {},
    });
  }
}

/**
 * Warns when `contentTypes` maps a content type to this collection but the collection holds only
 * some of the synced documents of that type: references to the others cannot point into it.
 */
export function warnPartialMappings(
  cache: CacheReader,
  mapping: CollectionMap,
  collection: string,
  members: Iterable<Member>,
  logger: LoaderContext['logger'],
): void {
  const types = mapping.contentTypesIn(collection);
  if (types.length === 0) return;
  const heldOf = new Map<string, number>();
  for (const { contentType } of members) heldOf.set(contentType, (heldOf.get(contentType) ?? 0) + 1);
  for (const type of types) {
    const held = heldOf.get(type) ?? 0;
    const synced = cache.countOfType(type);
    if (held >= synced) continue;
    logger.warn(
      `contentTypes maps "${type}" to the collection "${collection}", which holds ${held} of the ${synced} ` +
        `synced "${type}" documents: ` +
        `references to the other ${synced - held} stay { collection: null, id, contentType }. To hold every ` +
        `"${type}", ` +
        `map it to a collection loaded with comfortableLoader({ contentType: '${type}' }).`,
    );
  }
}
