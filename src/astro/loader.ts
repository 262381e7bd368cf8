import type { Loader, LoaderContext } from 'astro/loaders';
import type { CacheHead, CacheReader, Member } from '../cache/index.ts';
import { z } from 'zod';
import { canonicalOptions, ConfigError, type SourceSpec } from '../sync/config.ts';
import { fingerprintOf } from '../model/digests.ts';
import type { SyncResult } from '../sync/engine.ts';
import { packageVersion } from '../sync/run.ts';
import { type Entry, entryOf } from '../entries/entries.ts';
import { fallbackChains } from '../wire/locales.ts';
import { referenceList, type StoredRecord } from '../model/records.ts';
import { sharedSync } from '../sync/shared.ts';
import { cacheKeys } from '../entries/page-keys.ts';
import { contentConfigDigest } from './config-modules.ts';
import { fileLinks } from '../entries/file-links.ts';
import { describe, loaderError } from './errors.ts';
import type { ComfortableLiveRecord } from './live-entries.ts';
import { ReferenceConverter, warnPartialMappings } from './references.ts';
import { FieldRenderer, type RenderedMarkdown } from './renderer.ts';
import { type ComfortableLoaderOptions, defaultEntryId, loaderSources } from './loader-options.ts';
import type { CollectionMap, LoaderDeclaration } from './collection-map.ts';
import { loaderNamePrefix } from './content-config.ts';
import { loaderRegistry } from './registry.ts';
import { createEntrySchema } from './schema.ts';
import { astroSideOf } from './i18n.ts';
import { checkContentTypeKeys, checkLoaderNames } from './names.ts';

/**
 * The `data` of an entry in the content store: a document in one locale, as a live entry shows it too, with its
 * digests, cache key and aliases.
 */
export interface ComfortableEntryData extends ComfortableLiveRecord {
  /** Changes when the document changes. */
  digest: string;
  /**
   * The `cacheKey` of a page that shows this document: changes when the document changes, or
   * anything it references, or anything those reference, or any document that references it
   * (see docs/astro.md, "Incremental builds"). For a page of several entries, `pageKey(entries)`.
   */
  cacheKey: string;
  /** The API ids of the synced aliases that point to this document, such as `['home']`. */
  aliases: string[];
  /**
   * With the loader's `markdown` option: each Markdown field it names, by its path, rendered by the
   * site's Markdown pipeline (empty where the entry has no value). `<RichText field={entry.data.markdown.intro} />`
   * shows it, images of the repository's assets optimised.
   */
  markdown?: Record<string, RenderedMarkdown>;
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
  const registry = loaderRegistry();
  let sources: SourceSpec[] = [];
  let problem: LoaderDeclaration['problem'];
  try {
    sources = loaderSources(options);
  } catch (error) {
    // Told when Astro loads the collection, whose name the message then gives.
    problem = (collection) => {
      try {
        loaderSources(options, collection);
      } catch (named) {
        return named as Error;
      }
      return error as Error;
    };
  }
  const keys = sources.map((s) => `${s.kind}:${s.name}`);
  const name = `${loaderNamePrefix}${keys.join('+') || 'invalid'}`;
  // The same options in another evaluation of the content config are the same declaration.
  const declaration = registry.declare({
    name,
    signature: fingerprintOf({
      sources: sources.map((s) => [s.kind, s.name, canonicalOptions(s.options)]),
      locales: options.locales,
      render: options.render,
      markdown: options.markdown,
      entryId: options.entryId ? String(options.entryId) : 'default',
      problem: problem?.().message,
    }),
    sources,
    keys,
    locales: options.locales,
    entryId: options.entryId,
    problem,
  });

  return {
    name,
    createSchema: async () => {
      // Bad options, or a sync that failed, fail the load, which names the collection and, in
      // dev, tells the error itself: the schema waits for it.
      const unknownEntries = { schema: z.unknown(), types: 'export type Entry = unknown;' };
      if (problem) return unknownEntries;
      try {
        // The content served, when it holds this loader's sources (not in a refresh's sync, which this is
        // called in too, for every collection): else the sync of the round under way.
        const latest = shared.latest;
        const held = latest && new Set(latest.cache.sources().map((source) => source.key));
        const result = held && keys.every((key) => held.has(key)) ? latest! : await shared.acquire(registry.round());
        const { site } = registry;
        return createEntrySchema(
          result.cache,
          keys,
          (contentType) => site.contentTypes[contentType],
          site.locales !== undefined,
          options.markdown,
        );
      } catch {
        return unknownEntries;
      }
    },
    async load(context: LoaderContext) {
      try {
        // Which collection this is, in this sync of Astro: references into it take its entry ids.
        const { round, mapping } = registry.join(declaration, context);
        if (problem) throw problem(context.collection);
        // A refresh reads the sync it follows; a sync of Astro, the round all its loaders share.
        const result = await (round && !round.refreshed ? shared.acquire(round) : shared.current());
        const collections = await mapping;
        await shared.read(result, (read) => {
          // A name the sync shows misspelt (a content type, a locale) fails as a misspelt key does.
          const warn = registry.warnOnce(context.logger);
          checkLoaderNames(options, read.cache.head, context.collection, warn);
          checkContentTypeKeys(collections.site.contentTypes, read.cache.head, warn);
          return storeEntries(context, read.cache, collections, schemaDigest(read, context.config), keys, options);
        });
      } catch (error) {
        const failure = loaderError(error, shared); // with a hint naming the option to check
        // Astro tells a failed sync in dev (after a content config edit, a refresh) as an unhandled
        // rejection, without the hint: tell it here too.
        if (context.watcher) context.logger.error(describe(failure));
        throw failure;
      }
    },
  } satisfies Loader;
}

/** The digest of the content config's modules, worked out once per sync round for all its loaders. */
const schemaDigests = new WeakMap<SyncResult, string>();
function schemaDigest(round: SyncResult, config: LoaderContext['config']): string {
  let digest = schemaDigests.get(round);
  if (digest === undefined) schemaDigests.set(round, (digest = contentConfigDigest(config.root, config.srcDir)));
  return digest;
}

/** Documents read from the cache at once: enough to keep statements few, few enough to keep memory flat. */
const readBatch = 500;

async function storeEntries(
  { store, meta, logger, parseData, generateDigest, renderMarkdown, collection }: LoaderContext,
  cache: CacheReader,
  mapping: CollectionMap,
  schemas: string,
  keys: string[],
  options: ComfortableLoaderOptions,
): Promise<void> {
  const head = cache.head;
  const asked = options.locales ?? head.locales.locales.map((l) => l.key);
  // With Astro's i18n: each locale's Astro locale; a locale mapped to false, or to nothing, is left out.
  const astroLocales = mapping.site.locales?.resolve(head.locales, options.locales, collection, (m) => logger.warn(m));
  const locales = astroLocales ? asked.filter((locale) => typeof astroLocales.get(locale) === 'string') : asked;
  // Options (of any loader: a reference takes its target's id), a new package version, a changed
  // model (a field seen localized), the locales loaded with their fallback chains and Astro locales
  // (a locale added in the CMS is a new alternate of every page) change what entries look like, and
  // an edited schema module what they must pass: start clean. The same key goes into every page
  // key, so such pages render again. A locale left out and on no chain changes nothing.
  const chains = fallbackChains(head.locales);
  const fingerprint = fingerprintOf({
    packageVersion,
    source: head.fingerprint,
    loaders: mapping.fingerprint(),
    model: head.model,
    locales: locales.map((locale) => (chains.get(locale) ?? [locale]).map((l) => [l, astroLocales?.get(l) ?? null])),
    schemas,
  });
  const before = new Set(store.keys());
  if (meta.get('fingerprint') !== fingerprint) {
    store.clear();
    meta.set('fingerprint', fingerprint);
  }
  const members = new Map<string, Member>();
  for (const key of keys)
    for (const member of cache.members(key)) if (!members.has(member.id)) members.set(member.id, member);

  warnPartialMappings(cache, mapping, collection, members.values(), logger);
  const references = new ReferenceConverter(cache, mapping, collection, logger);
  const renderer = new FieldRenderer(head.model, options, renderMarkdown, () => cache.assetFiles(), logger);
  const links = fileLinks(); // a copy's files as files of the site
  const aliasesOf = aliasesByDocument(cache);
  const custom = options.entryId !== undefined;
  const entryId = options.entryId ?? defaultEntryId;
  /** Each entry id made, with the document and locale it stands for. */
  const live = new Map<string, string>();
  let changed = 0;
  let added = 0;
  const list = [...members.values()];
  for (let start = 0; start < list.length; start += readBatch) {
    const batch = list.slice(start, start + readBatch);
    const pageKeys = cacheKeys(
      cache,
      batch.map((member) => member.id),
      fingerprint,
    );
    // The digest is checked before anything is read or parsed: unchanged entries cost nothing. The page
    // key covers the document, what it shows and the options (the fingerprint): one key for both.
    const digestOf = (member: Member, locale: string) =>
      generateDigest(`${pageKeys.get(member.id)}|${aliasesOf.get(member.id)?.join(',') ?? ''}|${locale}`);
    const records = custom ? cache.records(batch.map((m) => m.id)) : new Map<string, StoredRecord>();
    const pending: { member: Member; locale: string; storeId: string; digest: string | number }[] = [];
    for (const member of batch) {
      const record = records.get(member.id);
      for (const locale of locales) {
        const localized = record && entryOf(record, locale, head.locales, () => undefined);
        const storeId = entryId({
          id: member.id,
          locale,
          astroLocale: astroLocales?.get(locale) || undefined,
          contentType: member.contentType,
          fields: localized?.fields ?? {},
        });
        const taken = live.get(storeId);
        if (taken !== undefined) throw duplicateId(collection, storeId, taken, `document ${member.id} in ${locale}`);
        live.set(storeId, `document ${member.id} in ${locale}`);
        const digest = digestOf(member, locale);
        if (store.get(storeId)?.digest !== digest) pending.push({ member, locale, storeId, digest });
      }
    }
    if (pending.length === 0) continue;
    const view = new EntryView(cache, custom ? records : cache.records(new Set(pending.map((p) => p.member.id))));
    const made = pending.map((p) => ({ ...p, entry: view.entry(p.member.id, p.locale) }));
    const renders = await renderer.render(made.map((m) => m.entry));
    for (const [i, { member, locale, storeId, digest, entry }] of made.entries()) {
      const { rendered, markdown, unfetched } = renders[i]!;
      const data: ComfortableEntryData = {
        id: member.id,
        locale,
        contentType: entry.contentType,
        fields: links.fields(references.fields(entry, view, storeId)),
        fallbacks: entry.fallbacks,
        meta: entry.meta,
        digest: member.digest,
        // A page showing an image left unoptimised is made again once it can be fetched: its key says so.
        cacheKey:
          unfetched.length > 0 ? generateDigest(`${pageKeys.get(member.id)}|unfetched`) : pageKeys.get(member.id)!,
        aliases: aliasesOf.get(member.id) ?? [],
        ...(markdown && { markdown }),
        ...(astroLocales && astroSideOf(locale, entry.fallbacks, astroLocales)),
      };
      const parsed = await parseData({ id: storeId, data: data as unknown as Record<string, unknown> });
      // An image left unoptimised because it could not be fetched: a digest no build computes makes
      // the next build make this entry again, which asks for the image again (and warns again).
      const stored = unfetched.length > 0 ? `${digest}|unfetched` : digest;
      // Astro optimises the images of rendered HTML only for entries with a file path: this one names the entry.
      store.set({
        id: storeId,
        data: parsed,
        digest: stored,
        ...(rendered ? { rendered: links.rendered(rendered), filePath: `comfortable/${collection}/${storeId}` } : {}),
      });
      changed++;
      if (!before.has(storeId)) added++;
    }
  }
  let removed = 0;
  for (const id of [...store.keys()]) {
    if (!live.has(id)) {
      store.delete(id);
      removed++;
    }
  }
  references.report(live, meta);
  // Markdown is counted where the loader renders it, so a build shows how much it rendered again.
  const markdown = renderer.rendersMarkdown(new Set(list.map((member) => member.contentType)))
    ? `; ${renderer.markdownRendered} Markdown value${renderer.markdownRendered === 1 ? '' : 's'} rendered`
    : '';
  const documents = `${members.size} document${members.size === 1 ? '' : 's'}`;
  logger.info(
    `${documents} × ${locales.length} locale${locales.length === 1 ? '' : 's'}: ${added} added, ` +
      `${changed - added} updated, ${removed} removed, ${live.size - changed} unchanged${markdown}`,
  );
}

/** Two entries given one id: Astro would keep only the last, and a page would silently go missing. */
function duplicateId(collection: string, id: string, first: string, second: string): ConfigError {
  return new ConfigError(
    'entryId',
    `Invalid option entryId of comfortableLoader() for the collection "${collection}" in ` +
      `src/content.config.ts: it gives the id "${id}" to two entries (${first} and ${second}); ids must be ` +
      `unique, so include what tells them apart, such as the locale: ({ locale, fields }) => ` +
      `\`\${locale}/\${fields.slug}\``,
  );
}

/** Document id → the API ids of the synced aliases pointing to it, sorted. */
function aliasesByDocument(cache: CacheReader): Map<string, string[]> {
  const aliases = new Map<string, string[]>();
  for (const source of cache.sources()) {
    if (source.kind !== 'alias') continue;
    for (const { id } of cache.members(source.key)) aliases.set(id, [...(aliases.get(id) ?? []), source.name].sort());
  }
  return aliases;
}

/**
 * The records of a batch of entries, with the assets they embed and the targets of their
 * relations read in one statement each, so an entry is made without reading record by record.
 */
class EntryView {
  readonly #head: CacheHead;
  readonly #cache: CacheReader;
  readonly #records: Map<string, StoredRecord>;
  readonly #assets: Map<string, StoredRecord>;
  /** The content type of each relation target that exists. */
  readonly targets: Map<string, string>;
  readonly #targetRecords = new Map<string, StoredRecord | undefined>();

  constructor(cache: CacheReader, records: Map<string, StoredRecord>) {
    this.#cache = cache;
    this.#head = cache.head;
    this.#records = records;
    const references = [...records.values()].flatMap((record) => referenceList(record));
    this.#assets = cache.records(new Set(references.filter((ref) => ref.asset).map((ref) => ref.id)));
    this.targets = cache.contentTypesOf(new Set(references.filter((ref) => !ref.asset).map((ref) => ref.id)));
  }

  entry(id: string, locale: string): Entry {
    return entryOf(
      this.#records.get(id)!,
      locale,
      this.#head.locales,
      (assetId) => this.#assets.get(assetId),
      this.#head.model,
    );
  }

  /** A relation target's record, for a custom entry id made from its fields. */
  target(id: string): StoredRecord | undefined {
    if (!this.#targetRecords.has(id)) this.#targetRecords.set(id, this.#records.get(id) ?? this.#cache.record(id));
    return this.#targetRecords.get(id);
  }
}
