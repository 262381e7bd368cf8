import type { Loader, LoaderContext } from 'astro/loaders';
import { hash, type SourceOptions } from '../sync/config.ts';
import { packageVersion } from '../sync/engine.ts';
import type { Manifest } from '../sync/cache.ts';
import { type Entry, entryOf } from '../sync/entries.ts';
import type { StoredRecord } from '../sync/records.ts';
import { sharedSync } from '../sync/shared.ts';
import { loaderRegistry } from './registry.ts';
import { createEntrySchema } from './schema.ts';

/** What an entry id is made from. */
export interface EntryIdInput {
  id: string;
  locale: string;
  contentType: string;
  fields: Record<string, unknown>;
}

export interface ComfortableLoaderOptions {
  /** Load a collection of the repository, by its API id. */
  collection?: string;
  /** Load the document an alias points to (one entry per locale). */
  alias?: string;
  /** Load the documents of several aliases. */
  aliases?: string[];
  /** Load every document of a content type. */
  contentType?: string;
  /** Request options for the source (includes, filters, sorting, …); fetched with every locale. */
  options?: SourceOptions;
  /** Locales that get entries. Default: every locale of the repository. */
  locales?: string[];
  /**
   * The entry id. Default `<locale>/<document id>`. References to this collection use it too
   * when the loader is for a content type.
   * @example ({ locale, fields }) => `${locale}/${fields.slug}`
   */
  entryId?: (entry: EntryIdInput) => string;
}

/** The `data` of an entry in the content store. */
export interface ComfortableEntryData {
  /** The document id. */
  id: string;
  locale: string;
  contentType: string;
  /** Field values in this locale; relations are `{ collection, id }` references (or `{ id, contentType }` when no collection holds the target); assets are images. */
  fields: Record<string, unknown>;
  /** Localized fields whose value is not this locale's own → the locale it came from (null: no locale has one). */
  fallbacks: Record<string, string | null>;
  meta: Entry['meta'];
  /** Changes when the document changes. */
  digest: string;
  /** Changes when the document or any record it includes changes: use it as `cacheKey` for incremental builds. */
  dependencyDigest: string;
}

export const defaultEntryId = ({ id, locale }: EntryIdInput) => `${locale}/${id}`;

function sourcesOf(options: ComfortableLoaderOptions): { kind: 'collection' | 'alias' | 'query'; name: string; options: SourceOptions & { contentType?: string } }[] {
  const given = [options.collection, options.alias, options.aliases, options.contentType].filter((v) => v !== undefined);
  if (given.length !== 1) {
    throw new Error('comfortableLoader() needs exactly one of collection, alias, aliases or contentType, for example comfortableLoader({ collection: "posts" })');
  }
  const extra = options.options ?? {};
  if (options.collection) return [{ kind: 'collection', name: options.collection, options: extra }];
  if (options.contentType) return [{ kind: 'query', name: `type:${options.contentType}`, options: { ...extra, contentType: options.contentType } }];
  const aliases = options.aliases ?? [options.alias!];
  if (aliases.length === 0 || aliases.some((a) => typeof a !== 'string' || a === '')) throw new Error('comfortableLoader({ aliases }) needs a list of alias API ids');
  return aliases.map((name) => ({ kind: 'alias' as const, name, options: extra }));
}

/**
 * A content loader for `src/content.config.ts`. Every loader shares one sync per Astro sync.
 *
 * @example
 * export const collections = {
 *   posts: defineCollection({ loader: comfortableLoader({ collection: 'posts', options: { includes: 2 } }) }),
 *   authors: defineCollection({ loader: comfortableLoader({ contentType: 'author' }) }),
 *   pages: defineCollection({ loader: comfortableLoader({ aliases: ['home', 'about'] }) }),
 * };
 */
export function comfortableLoader(options: ComfortableLoaderOptions) {
  const shared = sharedSync();
  const sources = sourcesOf(options);
  const keys = sources.map((s) => shared.register(s.kind, s.name, s.options));
  const name = `comfortable:${keys.join('+')}`;
  const entryId = options.entryId ?? defaultEntryId;
  loaderRegistry().add({ name, sources: keys, contentType: options.contentType, entryId: options.entryId });

  return {
    name,
    createSchema: async () => {
      const result = await shared.current();
      return createEntrySchema(result.manifest, keys, (contentType) => loaderRegistry().collectionFor(contentType)?.collection);
    },
    async load(context: LoaderContext) {
      // In a refresh from the dev endpoint, its sync has just run: read that, start no other.
      const refreshed = (context.refreshContextData as { comfortable?: unknown } | undefined)?.comfortable !== undefined;
      const result = await (refreshed ? shared.current() : shared.acquire(`load:${name}`));
      await loadEntries(context, result.manifest, result.reader, keys, options, entryId);
    },
  } satisfies Loader;
}

async function loadEntries(
  { store, meta, logger, parseData, generateDigest }: LoaderContext,
  manifest: Manifest,
  reader: { get(id: string): Promise<StoredRecord | undefined> },
  keys: string[],
  options: ComfortableLoaderOptions,
  entryId: (input: EntryIdInput) => string,
): Promise<void> {
  const locales = options.locales ?? manifest.locales.locales.map((l) => l.key);
  // Options or a new package version change what entries look like: start clean.
  const fingerprint = hash({ packageVersion, keys, locales, source: manifest.fingerprint, entryId: options.entryId ? String(options.entryId) : 'default', references: loaderRegistry().referenceFingerprint() });
  if (meta.get('fingerprint') !== fingerprint) {
    store.clear();
    meta.set('fingerprint', fingerprint);
  }
  const members: { id: string; dependencyDigest: string }[] = [];
  const seenMembers = new Set<string>();
  for (const key of keys) {
    const state = manifest.sources[key];
    state?.members.forEach((id, i) => {
      if (seenMembers.has(id) || !manifest.records.has(id)) return;
      seenMembers.add(id);
      members.push({ id, dependencyDigest: state.digests[i]! });
    });
  }

  const live = new Set<string>();
  const reported = new Set<string>();
  let changed = 0;
  const records = new Map<string, StoredRecord>();
  const read = async (id: string) => {
    let record = records.get(id);
    if (!record) {
      record = await reader.get(id);
      if (record) records.set(id, record);
    }
    return record;
  };
  for (const { id, dependencyDigest } of members) {
    const entry = manifest.records.get(id)!;
    const custom = options.entryId !== undefined;
    const record = custom ? await read(id) : undefined;
    for (const locale of locales) {
      const localized = record && entryOf(record, locale, manifest.locales, () => undefined);
      const storeId = entryId({ id, locale, contentType: entry.t, fields: localized?.fields ?? {} });
      live.add(storeId);
      const digest = generateDigest(`${entry.d}|${dependencyDigest}|${locale}|${fingerprint}`);
      // The digest is checked before reading or parsing: unchanged entries cost nothing.
      if (store.get(storeId)?.digest === digest) continue;
      const full = record ?? (await read(id))!;
      for (let i = 1; i < entry.f.length; i += 2) if (manifest.records.get(entry.f[i]!)?.t === '_asset') await read(entry.f[i]!);
      const view = entryOf(full, locale, manifest.locales, (assetId) => records.get(assetId));
      const data: ComfortableEntryData = {
        id,
        locale,
        contentType: view.contentType,
        fields: await referencesToCollections(view, manifest, read, reported, logger),
        fallbacks: view.fallbacks,
        meta: view.meta,
        digest: entry.d,
        dependencyDigest,
      };
      const parsed = await parseData({ id: storeId, data: data as unknown as Record<string, unknown> });
      store.set({ id: storeId, data: parsed, digest });
      changed++;
    }
    if (!custom) records.clear(); // keep memory flat for large collections
  }
  let removed = 0;
  for (const id of [...store.keys()]) {
    if (!live.has(id)) {
      store.delete(id);
      removed++;
    }
  }
  logger.info(`${members.length} documents × ${locales.length} locales: ${changed} updated, ${removed} removed, ${live.size - changed} unchanged`);
}

/** Relation fields become Astro references `{ collection, id }`; a target no collection holds stays `{ id, contentType }` and is reported once. */
async function referencesToCollections(
  entry: Entry,
  manifest: Manifest,
  read: (id: string) => Promise<StoredRecord | undefined>,
  reported: Set<string>,
  logger: LoaderContext['logger'],
): Promise<Record<string, unknown>> {
  const model = manifest.model[entry.contentType] ?? {};
  const registry = loaderRegistry();
  const fields: Record<string, unknown> = { ...entry.fields };
  // The target's id as its own collection makes it: a custom entryId may use the target's fields (a slug).
  const targetId = async (ref: { id: string; contentType: string }, entryId: ((input: EntryIdInput) => string) | undefined) => {
    const input = { id: ref.id, locale: entry.locale, contentType: ref.contentType, fields: {} };
    if (!entryId) return defaultEntryId(input);
    const record = await read(ref.id);
    return entryId({ ...input, fields: record ? entryOf(record, entry.locale, manifest.locales, () => undefined).fields : {} });
  };
  for (const [name, value] of Object.entries(fields)) {
    if (model[name]?.kind !== 'relation' || value === null || value === undefined) continue;
    const convert = async (ref: { id: string; contentType: string }) => {
      const target = registry.collectionFor(ref.contentType);
      const exists = manifest.records.has(ref.id);
      if (target && exists) return { collection: target.collection, id: await targetId(ref, target.entryId) };
      const why = !exists ? `${ref.id} is not in the synced content (dangling, or beyond the includes depth)` : `no collection holds content type "${ref.contentType}" (map it with the integration's contentTypes option)`;
      const key = `${entry.id}.${name}.${ref.id}`;
      if (!reported.has(key)) {
        reported.add(key);
        logger.warn(`Reference from document ${entry.id}, field ${name}: ${why}`);
      }
      return ref;
    };
    fields[name] = Array.isArray(value) ? await Promise.all(value.map(convert)) : await convert(value as { id: string; contentType: string });
  }
  return fields;
}
