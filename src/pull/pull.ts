import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createClient, type ReadApiClient } from '../api/client.ts';
import { NotFoundError, scrub } from '../api/errors.ts';
import { localFilePath, mapImageSources, parseSnapshot } from '../wire/snapshot.ts';
import type { Snapshot } from '../wire/snapshot-format.ts';
import type { SyncConfig } from '../sync/config.ts';
import type { ApiRecord } from '../wire/schemas.ts';
import { type FileOutcome, filePaths, syncFiles } from './files.ts';
import { contentTypesOf, sightFields } from './infer.ts';
import { byId, type SnapshotRecord, snapshotAsset, snapshotDocument } from './records.ts';
import { confirmSections } from './sections.ts';
import { newLocalKey, readPrevious, snapshotText, stageFile } from './snapshot-file.ts';

/**
 * `comfortable-loader pull`: a repository copied into a snapshot file (spec §1) that the local
 * server serves as it is. Every document with every locale, the assets they reference, the
 * config's collections as member lists and its aliases, content types inferred from the data,
 * a local API key (never the real one). The file is written whole or not at all, and not at all
 * when nothing changed.
 */

export interface PullOptions {
  /** The connection and the collections and aliases to copy (the sync config). */
  config: Pick<
    SyncConfig,
    'baseUrl' | 'repository' | 'apiKey' | 'collections' | 'aliases' | 'concurrency' | 'pageSize'
  >;
  /** The folder the snapshot (`<repository>.json`) and its files go into. */
  out: string;
  /** Download the assets' files beside the snapshot. */
  assets?: boolean;
  info?: (message: string) => void;
  warn?: (message: string) => void;
  /** Called as documents (and files) arrive. */
  progress?: (what: 'documents' | 'files', done: number, total: number) => void;
}

export interface PullResult {
  file: string;
  repository: string;
  /** False when the snapshot was already what the pull found. */
  written: boolean;
  documents: number;
  assets: number;
  collections: number;
  aliases: number;
  contentTypes: number;
  /** The key the snapshot is served with, and whether this pull made it. */
  localKey: string;
  newKey: boolean;
  files?: { downloaded: number; kept: number; failed: number };
  warnings: string[];
  /** Bytes of the snapshot file. */
  bytes: number;
  ms: number;
}

/** A problem with what the user asked for (a collection or alias that does not exist): exit 1, nothing written. */
export class PullError extends Error {
  override name = 'PullError';
}

export async function pull(options: PullOptions): Promise<PullResult> {
  const started = Date.now();
  const { config } = options;
  const warnings: string[] = [];
  const warn = (said: string) => {
    // What the server sends may hold the key (a field name, a URL): no warning repeats it.
    const message = scrub(said, config.apiKey);
    warnings.push(message);
    options.warn?.(message);
  };
  const file = resolve(options.out, `${config.repository}.json`);
  const client = createClient({
    baseUrl: config.baseUrl,
    repository: config.repository,
    apiKey: config.apiKey,
    concurrency: config.concurrency,
    etags: false,
  });
  const previous = await readPrevious(file, options.assets === true);

  const { meta } = await client.repository();
  const listed = listedLocales(meta);
  let documents: SnapshotRecord[] = [];
  const embedded = new Map<string, ApiRecord>();
  const raw: ApiRecord[] = [];
  const referenced = new Set<string>();
  const onAsset = (id: string, record: ApiRecord | undefined) => {
    referenced.add(id);
    if (record) embedded.set(id, record);
  };
  // The repository's id, where its answer leaves it out: each document's meta names it.
  let repositoryId = meta.id;
  const take = (record: ApiRecord, keys: ReadonlySet<string>) => {
    repositoryId ??= record.meta.repository;
    documents.push(snapshotDocument(record, keys, onAsset));
  };
  const totals = new Set<number>();
  for await (const page of client.pages('documents', { locale: 'all', embedAssets: true, pageSize: config.pageSize })) {
    totals.add(page.meta.total);
    // With the locales known, each page is taken while the next ones arrive.
    if (listed) for (const record of page.data) take(record, listed.keys);
    else raw.push(...page.data);
    options.progress?.('documents', documents.length + raw.length, page.meta.total);
  }
  const locales = listed ?? guessLocales(meta, raw, warn);
  const localeKeys = new Set(locales.locales.map((l) => l.key));
  for (const record of raw) take(record, localeKeys);
  documents = documents.sort(byId);
  unchangedWhilePulled(documents, totals);

  const assets = await referencedAssets(client, referenced, embedded, localeKeys, locales.defaultLocale, warn);
  // A file URL the server gave relative is the server's, not a file beside the snapshot: in the copy, only a pull's own
  // downloads are relative.
  for (const asset of assets) {
    const file = asset.fields.file as { url?: unknown } | undefined;
    if (typeof file?.url === 'string' && localFilePath(file.url) !== undefined)
      file.url = new URL(file.url, `${config.baseUrl.replace(/\/$/, '')}/`).href;
  }
  const collections = await memberLists(
    client,
    config.collections,
    locales.locales.map((l) => l.key),
    warn,
  );
  const aliases = await aliasTargets(
    client,
    Array.isArray(config.aliases) ? config.aliases : Object.keys(config.aliases),
  );
  const sightings = sightFields(documents, localeKeys);
  const { contentTypes, warnings: typeWarnings } = contentTypesOf(
    sightings,
    await confirmSections(client, sightings.unconfirmed),
  );
  typeWarnings.forEach(warn);

  let files: FileOutcome | undefined;
  let bytes = 0;
  if (options.assets) {
    files = await syncFiles({
      assets,
      previous: previous?.assets ?? new Map(),
      dir: resolve(options.out),
      serverOrigin: new URL(config.baseUrl).origin,
      repository: config.repository,
      concurrency: config.concurrency,
      onProgress: (done, total) => options.progress?.('files', done, total),
    });
    for (const [id, why] of files.failed)
      warn(`Asset ${id}: its file was not downloaded (${why}); the snapshot keeps its remote URL`);
    relinkRichtext(documents, files.moved);
  }

  const kept = previous?.apiKeys.find((key) => key !== config.apiKey);
  const localKey = kept ?? newLocalKey();
  const snapshot = {
    repository: {
      id: repositoryId ?? '1',
      apiId: meta.apiId,
      name: meta.name ?? meta.apiId,
      defaultLocale: locales.defaultLocale,
      locales: locales.locales,
      apiKeys: [localKey],
    },
    contentTypes,
    documents,
    assets,
    collections,
    aliases,
  };
  try {
    // What `serve` would refuse is never written; nor is the real key, wherever it came from.
    parseSnapshot(snapshot, file);
    const text = snapshotText(snapshot);
    if (text.includes(config.apiKey))
      throw new PullError('the pulled content holds the API key itself; the snapshot was not written');
    const written = text !== previous?.text;
    // The snapshot is written to its temporary file first: what fails most (the folder, the disk) fails before any file
    // moves.
    const staged = written ? await stageFile(file, text) : undefined;
    try {
      await files?.commit();
      await staged?.commit();
    } finally {
      await staged?.discard();
    }
    bytes = Buffer.byteLength(text);
    if (files) await pruneFiles(previous?.assets, files.paths, resolve(options.out));
    return {
      file,
      repository: config.repository,
      written,
      documents: documents.length,
      assets: assets.length,
      collections: collections.length,
      aliases: aliases.length,
      contentTypes: contentTypes.length,
      localKey,
      newKey: kept === undefined,
      ...(files
        ? { files: { downloaded: files.downloaded.length, kept: files.kept.length, failed: files.failed.size } }
        : {}),
      warnings,
      bytes,
      ms: Date.now() - started,
    };
  } catch (error) {
    await files?.discard();
    throw error;
  }
}

/**
 * A list read page by page while documents are added or deleted shifts under the pages: one is
 * then read twice or not at all. Every page must tell the same total, and that many distinct
 * documents must have come, or the copy would silently lack some.
 */
function unchangedWhilePulled(documents: SnapshotRecord[], totals: Set<number>): void {
  const twice = documents.find((document, i) => i > 0 && documents[i - 1]!.meta.id === document.meta.id);
  const [total] = totals;
  if (totals.size > 1 || twice || documents.length !== total) {
    const what = twice
      ? `document ${twice.meta.id} came twice`
      : totals.size > 1
        ? `the total went from ${[...totals].join(' to ')}`
        : `${documents.length} of ${total} documents came`;
    throw new PullError(
      `The repository's documents changed while they were listed (${what}): pull again when it is not being edited`,
    );
  }
}

type Locales = { defaultLocale: string; locales: { key: string; fallback?: string }[] };
type RepositoryMeta = {
  defaultLocale?: string | undefined;
  locales?: { key: string; fallback?: string | null | undefined }[] | undefined;
};

/** The locales the repository lists, if it does. */
function listedLocales(meta: RepositoryMeta): (Locales & { keys: Set<string> }) | undefined {
  if (!meta.defaultLocale || !meta.locales?.length) return undefined;
  const locales = meta.locales.map((l) => (l.fallback ? { key: l.key, fallback: l.fallback } : { key: l.key }));
  return { defaultLocale: meta.defaultLocale, locales, keys: new Set(locales.map((l) => l.key)) };
}

/**
 * When the repository lists no locales: the keys seen in localized values (the most common the default), with a
 * warning.
 */
function guessLocales(meta: RepositoryMeta, records: ApiRecord[], warn: (m: string) => void): Locales {
  const counts = new Map<string, number>();
  const shape = /^[A-Za-z]{2,3}(_[A-Za-z0-9]{2,4})?$/;
  const count = (value: unknown, depth: number): void => {
    if (
      typeof value !== 'object' ||
      value === null ||
      Array.isArray(value) ||
      'meta' in value ||
      'html' in value ||
      'lat' in value
    )
      return;
    const keys = Object.keys(value);
    if (keys.length > 0 && keys.every((k) => shape.test(k)))
      for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
    else if (depth === 0)
      // the localized fields of a section
      for (const inner of Object.values(value)) count(inner, 1);
  };
  for (const record of records) for (const value of Object.values(record.fields)) count(value, 0);
  const keys = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([k]) => k);
  const defaultLocale = meta.defaultLocale ?? keys[0] ?? 'en_US';
  const all = [...new Set([defaultLocale, ...keys])];
  warn(
    "The server did not list the repository's locales; the snapshot has the locale keys seen in the data " +
      `(${all.join(', ')}), default ${defaultLocale}, without fallbacks`,
  );
  return { defaultLocale, locales: all.map((key) => ({ key })) };
}

/**
 * Every asset the documents reference: those embedded in the answers, the others asked one by one (the API lists no
 * assets).
 */
async function referencedAssets(
  client: ReadApiClient,
  ids: Set<string>,
  embedded: Map<string, ApiRecord>,
  locales: ReadonlySet<string>,
  defaultLocale: string,
  warn: (m: string) => void,
): Promise<SnapshotRecord[]> {
  const missing = [...ids].filter((id) => !embedded.has(id));
  const fetched = await Promise.all(
    missing.map((id) =>
      client.asset(id, { locale: 'all' }).then(
        (asset) => asset as ApiRecord,
        (error: unknown) => {
          if (error instanceof NotFoundError) return undefined; // a dangling reference stays one
          throw error;
        },
      ),
    ),
  );
  const dropped = new Set<string>();
  const assets = [...embedded.values(), ...fetched.filter((a): a is ApiRecord => a !== undefined)]
    .filter((asset) => ids.has(asset.meta.id))
    .map((asset) => snapshotAsset(asset, locales, defaultLocale, (name) => dropped.add(name)));
  if (dropped.size > 0)
    warn(`Assets hold fields the snapshot format has no place for (${[...dropped].join(', ')}): they are not kept`);
  return assets.sort(byId);
}

/**
 * The config's collections as member lists, in the order each answers in the default locale.
 * A collection whose stored filters or sorting give another list in another locale is warned about.
 */
async function memberLists(
  client: ReadApiClient,
  collections: Record<string, unknown>,
  locales: string[],
  warn: (m: string) => void,
): Promise<{ apiId: string; members: string[] }[]> {
  const listOf = async (apiId: string, locale: string | undefined): Promise<string[]> => {
    const ids: string[] = [];
    try {
      for await (const page of client.pages(
        { collection: apiId },
        { fields: 'meta(id)', ...(locale ? { locale } : {}) },
      )) {
        for (const record of page.data) ids.push((record as { meta: { id: string } }).meta.id);
      }
    } catch (error) {
      if (error instanceof NotFoundError)
        throw new PullError(
          `The repository has no collection "${apiId}": remove it from the config's collections, or check its API id`,
        );
      throw error;
    }
    return ids;
  };
  const out: { apiId: string; members: string[] }[] = [];
  for (const apiId of Object.keys(collections).sort()) {
    const [members, ...others] = await Promise.all([
      listOf(apiId, undefined),
      ...locales.slice(1).map((locale) => listOf(apiId, locale)),
    ]);
    const differ = locales.slice(1).filter((_, i) => others[i]!.join() !== members!.join());
    if (differ.length > 0) {
      warn(
        `Collection ${apiId} lists other documents, or another order, in ${differ.join(', ')} ` +
          "(its stored filters or sorting read localized values): the snapshot keeps the default locale's list",
      );
    }
    out.push({ apiId, members: members! });
  }
  return out;
}

async function aliasTargets(client: ReadApiClient, aliases: string[]): Promise<{ apiId: string; document: string }[]> {
  return Promise.all(
    [...aliases].sort().map(async (apiId) => {
      try {
        const answer = await client.alias(apiId, { fields: 'meta(id)' });
        return { apiId, document: (answer as { meta: { id: string } }).meta.id };
      } catch (error) {
        if (error instanceof NotFoundError)
          throw new PullError(
            `The repository has no alias "${apiId}": remove it from the config's aliases, or check its API id`,
          );
        throw error;
      }
    }),
  );
}

/** Richtext images that show a downloaded file point at it by its relative path, as the local server has them. */
function relinkRichtext(documents: SnapshotRecord[], moved: Map<string, string>): void {
  if (moved.size === 0) return;
  const relink = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const text = value as { html?: unknown; plain?: unknown };
    if (typeof text.html === 'string' && typeof text.plain === 'string') {
      const html = mapImageSources(text.html, (src) => moved.get(src));
      return html === text.html ? value : { ...value, html };
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, relink(v)]));
  };
  for (const document of documents) {
    for (const [name, value] of Object.entries(document.fields)) document.fields[name] = relink(value);
  }
}

/**
 * Removes the files the previous snapshot's assets had and the new one's do not (only those, and only where a pull may
 * write one).
 */
async function pruneFiles(
  before: Map<string, SnapshotRecord> | undefined,
  now: Set<string>,
  dir: string,
): Promise<void> {
  for (const path of filePaths(before?.values() ?? [])) {
    if (!now.has(path)) await rm(join(dir, ...path.split('/')), { force: true });
  }
}

export type { Snapshot };
