import packageJson from '../../package.json' with { type: 'json' };
import { createClient, type ReadApiClient } from '../api/client.ts';
import type { EtagStore } from '../api/transport.ts';
import type { CacheHead, CacheReader, CacheTransaction, DanglingReference, Etags } from '../cache/index.ts';
import { checkAhead, completeClosures } from './closures.ts';
import { commitRun } from './commit.ts';
import { configSources, type SyncConfig } from './config.ts';
import { fingerprintOf } from '../model/digests.ts';
import { assetStampsMask, Fetcher, listing, settleAll } from './fetch.ts';
import { Intake } from './intake.ts';
import { type Listed, listSource } from './list.ts';
import { guessedLocalesWarning, guessLocales, type Locales, repositoryLocales } from '../model/locales.ts';
import { planSources } from './plan.ts';
import type { Changeset } from './changeset.ts';

/**
 * One sync inside its cache transaction, phase after phase: plan → list (and fetch) →
 * normalise → closures → digests and commit. engine.ts decides what to do when it fails.
 */

export interface SyncLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface SyncResult {
  changeset: Changeset;
  cacheDir: string;
  /** The committed content, as every consumer reads it. */
  cache: CacheReader;
  /** Sources served from the cache because the server failed (`onError: 'use-cache'`). */
  stale: string[];
  /** References whose target the server does not have. */
  dangling: DanglingReference[];
  warnings: string[];
  /** Requests and bytes of the run, and the records it wrote. */
  stats: { requests: number; notModified: number; bytes: number; ms: number; written: number };
}

/** Hints for one sync run. */
export interface SyncHints {
  /**
   * Ids of documents and assets to fetch again even when their `updatedAt` and revision look unchanged (a webhook's
   * changed ids).
   */
  refetch?: readonly string[];
  /** Why the cache could not be read (a reader found it damaged): it is rebuilt from the CMS. */
  rebuild?: string;
  /**
   * Where the answers to listings of stamps are kept between the syncs of one process, so that
   * the next sync asks them conditionally (dev's asks of the CMS, where nothing changed is a
   * `304`). Without it they are asked in full: the cache keeps no list pages.
   */
  listingEtags?: EtagStore;
}

export const packageVersion: string = packageJson.version;

/** What makes a cache this config's: base URL, repository, package version (never the key). */
export const cacheFingerprint = (config: SyncConfig) =>
  fingerprintOf({
    baseUrl: config.baseUrl.replace(/\/+$/, ''),
    repository: config.repository,
    package: packageVersion,
  });

/**
 * ETags of the repository, alias and asset answers, with their bodies, kept in the cache (never
 * list pages); those of the listings of stamps (small: a few fields per member) in `listings`,
 * when the caller keeps them between syncs.
 */
class CachedEtags implements EtagStore {
  readonly entries: Etags;
  readonly #listings: EtagStore | undefined;
  constructor(initial: Etags, listings: EtagStore | undefined) {
    this.entries = { ...initial };
    this.#listings = listings;
  }
  get(key: string) {
    return this.entries[key] ?? (key.includes(stampsMask) ? this.#listings?.get(key) : undefined);
  }
  set(key: string, entry: Etags[string]) {
    if (/\/alias\/|\/assets\/|^GET [^?]*\/v1\/[^/?]+(\?|$)/.test(key)) this.entries[key] = entry;
    else if (key.includes(stampsMask)) this.#listings?.set(key, entry);
  }
}

/** What the query of a listing of stamps holds (a listing of members' or of embedded assets' stamps). */
const stampsMask = `fields=${listing}`;

export interface RunContext {
  logger: SyncLogger;
  warn(message: string): void;
  hints: SyncHints;
}

/** One sync inside its transaction: every phase, then the commit. */
export async function run(
  tx: CacheTransaction,
  config: SyncConfig,
  dir: string,
  { logger, warn, hints }: RunContext,
): Promise<SyncResult> {
  const started = Date.now();
  const fingerprint = cacheFingerprint(config);
  let head = tx.head;
  if (head && head.fingerprint !== fingerprint) {
    warn(`The cache in ${dir} was made for ${head.baseUrl} / ${head.repository} by ${head.package}; rebuilding it`);
    tx.clear();
    head = undefined;
  }
  // A fresh sync asks every answer again, whatever it answered before.
  const fresh = config.mode === 'fresh';
  if (fresh) tx.records.clear(); // its changeset still compares with the last committed content
  const stats = { requests: 0, notModified: 0, bytes: 0, ms: 0, written: 0 };
  const etags = new CachedEtags(head && !fresh ? tx.etags() : {}, fresh ? undefined : hints.listingEtags);
  const client: ReadApiClient = createClient({
    baseUrl: config.baseUrl,
    repository: config.repository,
    apiKey: config.apiKey,
    concurrency: config.concurrency,
    etags,
    onResponse: (event) => {
      stats.requests++;
      stats.bytes += event.bytes;
      if (event.notModified) stats.notModified++;
    },
  });
  const model = structuredClone(head?.model ?? {});
  const refetch = new Set(hints.refetch);
  const intake = new Intake(tx.records, model, refetch);
  const fetcher = new Fetcher(client, intake, config.pageSize);

  const syncedAt = new Date().toISOString();
  const sources = configSources(config);
  const stored = tx.sources();
  const plans = planSources(sources, stored, fresh);
  let locales: Locales | undefined;
  // The repository's locales are what records are normalised with: what fetches records waits for them.
  const localesKnown = client.repository().then((info) => {
    locales = repositoryLocales(info.meta);
    if (locales) intake.useLocales(new Set(locales.locales.map((l) => l.key)));
  });
  localesKnown.catch(() => {}); // awaited below

  // Listings by stamps need no locales: they are asked with the repository.
  const members = new Map<string, Listed>();
  const context = {
    fetcher,
    intake,
    records: tx.records,
    safetyMarginMs: config.safetyMarginMs,
    progress: (message: string) => logger.info(message),
    stored: (key: string) => tx.members(key),
    localesKnown,
  };
  const listed = settleAll(plans.map(async (plan) => members.set(plan.source.key, await listSource(plan, context))));
  // Once the listings are asked, what the last sync's closures hold is checked meanwhile.
  await new Promise((resolve) => setImmediate(resolve));
  const incremental = plans.filter((plan) => plan.how === 'incremental').map((plan) => plan.source.key);
  const ahead = checkAhead(
    incremental.flatMap((key) => tx.included(key)),
    incremental.flatMap((key) => tx.dangling(key)),
    {
      records: tx.records,
      fetcher,
      localesKnown,
      assetMask: assetStampsMask(model, head?.locales.locales.map((locale) => locale.key) ?? []),
    },
  );
  // None is left running when one fails; the repository's failure is the one told first.
  await settleAll<unknown>([localesKnown, listed, ahead]);

  // A webhook may name records whose stamps did not move (a snapshot edited by hand), or an asset
  // no document fetched in this run embeds: fetch them anyway (assets one by one, as the API has it).
  const hinted = [...refetch].filter((id) => tx.records.info(id) && !intake.taken.has(id));
  const documents = hinted.filter((id) => !tx.records.isAsset(id));
  if (documents.length > 0) await fetcher.byIds(documents);
  // (An asset a refetched document embeds came with it.)
  await fetcher.assets(hinted.filter((id) => tx.records.isAsset(id) && !intake.taken.has(id)));

  const closures = await completeClosures(sources, members, {
    records: tx.records,
    intake,
    fetcher,
    assetMask: assetStampsMask(model, (locales ?? head?.locales)?.locales.map((locale) => locale.key) ?? []),
    ahead: await ahead,
    stored: (source) => {
      if (stored.get(source.key)?.fingerprint !== source.fingerprint || fresh) return undefined;
      return {
        members: tx.members(source.key).ids,
        included: tx.included(source.key),
        dangling: tx.dangling(source.key),
      };
    },
  });

  if (!locales) {
    // Starting from those guessed before, which a sync that downloads nothing would lose.
    const before = head?.locales.source === 'data' ? head.locales : undefined;
    locales = guessLocales(intake.localeCounts, {
      defaultLocale: before?.defaultLocale,
      keys: before?.locales.map((l) => l.key),
    });
    warn(guessedLocalesWarning(locales, 'using'));
  }
  const newHead: Omit<CacheHead, 'records'> = {
    fingerprint,
    repository: config.repository,
    baseUrl: config.baseUrl.replace(/\/+$/, ''),
    package: `comfortable-loader@${packageVersion}`,
    lastSync: syncedAt,
    locales,
    model,
  };
  const { changeset, cache } = commitRun(tx, intake, {
    sources,
    members,
    closures,
    syncedAt,
    head: newHead,
    etags: etags.entries,
  });
  const dropped = [...stored.keys()].filter((key) => !sources.some((source) => source.key === key));
  if (dropped.length > 0) {
    warn(
      `The cache in ${dir} held sources this config no longer names (${dropped.join(', ')}): they were ` +
        `removed, with the records only they needed, as a source taken out of the config or renamed is. ` +
        'Should another config sync into this folder, give each its own cacheDir (the Astro integration and ' +
        'the comfortable-loader CLI keep apart by default).',
    );
  }
  const dangling = cache.dangling();
  for (const ref of dangling)
    warn(
      `Dangling reference: document ${ref.from}, field ${ref.field} points to ${ref.id}, which the server ` +
        `does not have`,
    );
  stats.written = intake.written;
  stats.ms = Date.now() - started;
  const { added, updated, removed } = changeset.records;
  logger.info(
    `Synced ${config.repository}: ${cache.recordCount()} records (${added.length} added, ${updated.length} ` +
      `updated, ${removed.length} removed) in ${(stats.ms / 1000).toFixed(1)} s, ${stats.requests} requests ` +
      `(${stats.notModified} not modified), ${(stats.bytes / 1024).toFixed(0)} KiB`,
  );
  return { changeset, cacheDir: dir, cache, stale: [], dangling, warnings: [], stats };
}
