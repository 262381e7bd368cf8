import type { LoaderContext } from 'astro/loaders';
import type { CacheReader, Member } from '../cache/index.ts';
import { type Entry, entryOf, mapRelations } from '../sync/entries.ts';
import type { StoredRecord } from '../sync/records.ts';
import { defaultEntryId, type EntryIdInput } from './loader.ts';
import { loaderRegistry } from './registry.ts';

/**
 * Relation fields as Astro references. A relation becomes `{ collection, id }` when the
 * integration's `contentTypes` maps its target's content type to a collection that holds the
 * target; otherwise it stays `{ id, contentType }` and is reported once, so Astro never meets a
 * reference to an entry that does not exist.
 */

/** What the conversion needs of the entries being made: their relation targets. */
export interface TargetLookup {
  /** The content type of each relation target the cache holds. */
  targets: Map<string, string>;
  /** A target's record, for a custom entry id made from its fields. */
  target(id: string): StoredRecord | undefined;
}

const referenceKey = (from: string, field: string, to: string) => `${from}.${field}.${to}`;

/** References reported since the last sync, by every loader: each is told once per build. */
const reportedSince = { lastSync: '', keys: new Set<string>() };

export class ReferenceConverter {
  readonly #cache: CacheReader;
  readonly #logger: LoaderContext['logger'];
  readonly #reported: Set<string>;
  /** The documents each Astro collection holds, by what its loaders' sources list. */
  readonly #held = new Map<string, Set<string> | undefined>();

  constructor(cache: CacheReader, logger: LoaderContext['logger']) {
    this.#cache = cache;
    this.#logger = logger;
    if (reportedSince.lastSync !== cache.head.lastSync) {
      // The sync has warned of the references the server cannot resolve already.
      const dangling = cache.dangling().map((ref) => referenceKey(ref.from, ref.field, ref.id));
      Object.assign(reportedSince, { lastSync: cache.head.lastSync, keys: new Set(dangling) });
    }
    this.#reported = reportedSince.keys;
  }

  /** The entry's fields with its relations converted. */
  fields(entry: Entry, lookup: TargetLookup): Record<string, unknown> {
    return mapRelations(entry.fields, this.#cache.head.model[entry.contentType], (ref, field) => this.#convert(entry, field, ref, lookup));
  }

  #convert(entry: Entry, field: string, ref: { id: string; contentType: string }, lookup: TargetLookup): unknown {
    const target = loaderRegistry().collectionFor(ref.contentType);
    let why: string | undefined;
    if (!lookup.targets.has(ref.id)) why = `${ref.id} is not in the synced content (dangling, or beyond the includes depth)`;
    else if (!target) why = `no collection holds content type "${ref.contentType}" (map it with the integration's contentTypes option)`;
    else if (this.#holds(target.collection, ref.id) === false) why = `the collection "${target.collection}", to which contentTypes maps "${ref.contentType}", does not hold ${ref.id}`;
    if (why === undefined) return { collection: target!.collection, id: this.#targetId(entry, ref, target!.entryId, lookup) };
    const key = referenceKey(entry.id, field, ref.id);
    if (!this.#reported.has(key)) {
      this.#reported.add(key);
      this.#logger.warn(`Reference from document ${entry.id}, field ${field}: ${why}`);
    }
    return ref;
  }

  /** Whether a collection holds a document; undefined while no loader of it has loaded (it is then taken to hold it). */
  #holds(collection: string, id: string): boolean | undefined {
    if (!this.#held.has(collection)) {
      const sources = loaderRegistry().sourcesOfCollection(collection);
      this.#held.set(collection, sources && new Set(sources.flatMap((source) => this.#cache.members(source).map((member) => member.id))));
    }
    return this.#held.get(collection)?.has(id);
  }

  /** The target's id as its own collection makes it: a custom entryId may use the target's fields (a slug). */
  #targetId(entry: Entry, ref: { id: string; contentType: string }, entryId: ((input: EntryIdInput) => string) | undefined, lookup: TargetLookup): string {
    const input = { id: ref.id, locale: entry.locale, contentType: ref.contentType, fields: {} };
    if (!entryId) return defaultEntryId(input);
    const record = lookup.target(ref.id);
    return entryId({ ...input, fields: record ? entryOf(record, entry.locale, this.#cache.head.locales, () => undefined).fields : {} });
  }
}

/**
 * Warns when `contentTypes` maps a content type to this collection but the collection holds only
 * some of the synced documents of that type: references to the others cannot point into it.
 */
export function warnPartialMappings(cache: CacheReader, collection: string, members: Iterable<Member>, logger: LoaderContext['logger']): void {
  for (const type of loaderRegistry().contentTypesIn(collection)) {
    let held = 0;
    for (const member of members) if (member.contentType === type) held++;
    const synced = cache.countOfType(type);
    if (held >= synced) continue;
    logger.warn(
      `contentTypes maps "${type}" to the collection "${collection}", which holds ${held} of the ${synced} synced "${type}" documents: ` +
        `references to the other ${synced - held} stay { id, contentType } (each reported once). To hold every "${type}", ` +
        `map it to a collection loaded with comfortableLoader({ contentType: '${type}' }).`,
    );
  }
}
