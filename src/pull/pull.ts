import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createClient } from '../api/client.ts';
import {
  countLocales,
  guessedLocalesWarning,
  guessLocales,
  type Locales,
  repositoryLocales,
} from '../model/locales.ts';
import { scrub } from '../api/errors.ts';
import { localFilePath, mapImageSources, parseSnapshot } from '../wire/snapshot.ts';
import type { SnapshotRecord } from '../wire/snapshot-format.ts';
import type { SyncConfig } from '../sync/config.ts';
import type { ApiRecord } from '../wire/schemas.ts';
import { type FileOutcome, filePaths, syncFiles } from './files.ts';
import { contentTypesOf, sightFields } from './infer.ts';
import { byId, snapshotDocument } from './records.ts';
import { confirmSections } from './sections.ts';
import { newLocalKey, readPrevious, snapshotText, stageFile } from './snapshot-file.ts';
import { PullError, aliasTargets, memberLists, referencedAssets, unchangedWhilePulled } from './reads.ts';

/**
 * `comfortable-loader pull`: a repository copied into a snapshot file (spec §1) that the local
 * server serves as it is. Every document with every locale, the assets they reference, the
 * config's collections as member lists and its aliases, content types inferred from the data,
 * a local API key (never the real one). The file is written whole or not at all, and not at all
 * when nothing changed.
 */

interface PullOptions {
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
  const listed = repositoryLocales(meta);
  const listedKeys = listed && new Set(listed.locales.map((l) => l.key));
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
    if (listedKeys) for (const record of page.data) take(record, listedKeys);
    else raw.push(...page.data);
    options.progress?.('documents', documents.length + raw.length, page.meta.total);
  }
  const locales = listed ?? guessed(meta.defaultLocale, raw, warn);
  const localeKeys = listedKeys ?? new Set(locales.locales.map((l) => l.key));
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

/**
 * When the repository lists no locales: the keys seen in localized values (the most common the
 * default), with a warning.
 */
function guessed(defaultLocale: string | undefined, records: ApiRecord[], warn: (m: string) => void): Locales {
  const counts = new Map<string, number>();
  for (const record of records) countLocales(record.fields, counts);
  const locales = guessLocales(counts, { defaultLocale });
  warn(guessedLocalesWarning(locales, 'the snapshot has'));
  return locales;
}
