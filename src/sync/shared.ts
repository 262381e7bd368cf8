import { MemoryEtagStore } from '../api/transport.ts';
import { CacheError } from '../cache/index.ts';
import { type Changeset, noChanges } from './changeset.ts';
import {
  parseSyncConfig,
  type SourceKind,
  type SourceSpec,
  sourceSpecs,
  type SyncConfig,
  type SyncConfigInput,
} from './config.ts';
import { sync, type SyncHints, type SyncLogger, type SyncResult } from './engine.ts';

/**
 * One sync shared by every consumer in a process: all content loaders of an Astro sync and the
 * Vite plugin get the same result, from one fetch plan, one concurrency limit and one cache.
 *
 * The sources are the configuration's and those its `loaderSources` give at the start of each
 * round (the loaders of Astro's content config). A round belongs to what asked for it (one sync
 * of Astro, whose loaders all ask with the same token): the first ask starts it, the others get
 * it. A round started outside them (a poll, a refresh) is told to the listeners, which make
 * what is served follow it: no sync changes the cache unseen.
 */

/** The shared sync's options: a sync config, whose sources may all come from the loaders (each is optional). */
export type SharedConfig = SyncConfigInput;

/** How a round came about, as its listeners are told. */
export interface RoundKind {
  /** Started by a poll (which may have found nothing). */
  polled: boolean;
  /** Started outside the consumers' rhythm (a poll, a refresh, a rebuild): what is served must follow it. */
  outside: boolean;
}

export class SharedSync {
  #config: SharedConfig | undefined;
  #logger: SyncLogger | undefined;
  /** The snapshot file served in place of the CMS, if one is (for errors' hints). */
  #snapshot: string | undefined;
  /** The sources of the loaders, read at the start of each round; throws when a loader's options are wrong. */
  #loaderSources: () => readonly SourceSpec[] = () => [];
  #round: Promise<SyncResult> | undefined;
  /** The last round that completed. */
  #latest: SyncResult | undefined;
  /** The round each token asked for. */
  #rounds = new WeakMap<object, Promise<SyncResult>>();
  readonly #listeners = new Set<(result: SyncResult, kind: RoundKind) => void>();
  /** The answers to listings of stamps of this configuration's syncs, so the next one asks them conditionally. */
  #listingEtags = new MemoryEtagStore();

  /**
   * Sets the connection, cache options and configured sources (from the Astro integration or the
   * Vite plugin). A new configuration (a restarted dev server) replaces the last one whole.
   */
  configure(
    config: SharedConfig,
    logger?: SyncLogger,
    snapshot?: string,
    loaderSources: () => readonly SourceSpec[] = () => [],
  ): void {
    this.#config = config;
    this.#logger = logger;
    this.#snapshot = snapshot;
    this.#loaderSources = loaderSources;
    this.#round = undefined;
    this.#rounds = new WeakMap();
    this.#latest = undefined;
    this.#listingEtags = new MemoryEtagStore();
  }

  get configured(): boolean {
    return this.#config !== undefined;
  }

  /** The snapshot file served in place of the CMS (the integration's `snapshot` option), if one is. */
  get snapshot(): string | undefined {
    return this.#snapshot;
  }

  /** The sync config of the next round: the configured options plus every registered source. */
  config(): SyncConfig {
    if (!this.#config) {
      throw new Error(
        'comfortable-loader is not configured: add the comfortable() integration to astro.config (or the ' +
          'comfortable() Vite plugin), with CMFT_REPOSITORY and CMFT_API_KEY in .env or the environment (or ' +
          'the repository and apiKey options)',
      );
    }
    // A loader's options for a source win over the configuration's (its integration's or Vite plugin's options).
    const named = [...sourceSpecs(this.#config), ...this.#loaderSources()];
    const sources = new Map(named.map((source) => [`${source.kind}:${source.name}`, source]));
    const pick = (kind: SourceKind) =>
      Object.fromEntries([...sources.values()].filter((s) => s.kind === kind).map((s) => [s.name, s.options]));
    return parseSyncConfig({
      ...this.#config,
      collections: pick('collection'),
      aliases: pick('alias'),
      queries: pick('query'),
    });
  }

  /**
   * The result of the round `token` asked for (the token of one sync of Astro, say): started at
   * its first ask, the same for every ask after, whatever ran meanwhile.
   */
  acquire(token: object): Promise<SyncResult> {
    let round = this.#rounds.get(token);
    if (!round) {
      round = this.#start(() => sync(this.config(), this.#logger, { listingEtags: this.#listingEtags }), {
        polled: false,
        outside: false,
      });
      this.#rounds.set(token, round);
      this.#round = round;
    }
    return round;
  }

  /** The current round's result (the last started); starts one when there is none. */
  current(): Promise<SyncResult> {
    return this.#round ?? this.acquire({});
  }

  /** The result of the last round that completed, without starting one (what is served now). */
  get latest(): SyncResult | undefined {
    return this.#latest;
  }

  /** Runs a sync now (a dev refresh). The loaders it refreshes read it with `current()`. */
  refresh(refetch: readonly string[] = []): Promise<SyncResult> {
    return this.#startForAll({ refetch });
  }

  /**
   * One ask of the CMS for changes (dev's polling): a sync after the current round is done, which
   * throws when the CMS fails instead of falling back to the cache, and prints nothing unless it changed something. Its
   * result becomes the round every consumer has had, as a refresh's does; a failure leaves the
   * current round, and so the content served, as it was. Undefined, with no request, when there
   * is nothing to follow yet (no round has loaded content), or when a loader's options are
   * wrong, which its own error already tells (a sync without its sources would drop them).
   */
  async poll(): Promise<SyncResult | undefined> {
    // After every round begun meanwhile (Astro's sync, a refresh), so that two syncs never overlap.
    let previous = this.#round;
    while (previous) {
      await previous.catch(() => {});
      if (this.#round === previous) break;
      previous = this.#round;
    }
    if (!previous || !this.#latest) return undefined;
    let config: SyncConfig;
    try {
      config = this.config();
    } catch {
      return undefined;
    }
    const warnings: string[] = [];
    const quiet = { info: () => {}, warn: (message: string) => warnings.push(message) };
    const round = this.#start(() => sync({ ...config, onError: 'fail' }, quiet, { listingEtags: this.#listingEtags }), {
      polled: true,
      outside: true,
    });
    this.#round = round;
    try {
      const result = await round;
      // What a sync that changed something warns of (a dangling reference, say) is said; an ask
      // that found nothing is not.
      if (changedSources(result.changeset).length > 0) for (const warning of warnings) this.#logger?.warn(warning);
      return result;
    } catch (error) {
      if (this.#round === round) this.#round = previous;
      throw error;
    }
  }

  /**
   * Reads a round's content with `read`. A cache found damaged on the way (SQLite refuses it, a
   * record does not parse) is never served: one sync rebuilds it from the CMS, with a warning,
   * and `read` runs once more on its result.
   */
  async read<T>(result: SyncResult, read: (result: SyncResult) => T | Promise<T>): Promise<T> {
    try {
      return await read(result);
    } catch (error) {
      if (!(error instanceof CacheError && error.code === 'cache_damaged')) throw error;
      this.#logger?.warn(`${error.message}; rebuilding it from the server`);
      return read(await this.#startForAll({ rebuild: error.message }));
    }
  }

  /** Called after every completed round, with how it came about. */
  onResult(listener: (result: SyncResult, kind: RoundKind) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts a round outside the rounds asked for. */
  #startForAll(hints: SyncHints): Promise<SyncResult> {
    this.#round = this.#start(() => sync(this.config(), this.#logger, { ...hints, listingEtags: this.#listingEtags }), {
      polled: false,
      outside: true,
    });
    return this.#round;
  }

  #start(run: () => Promise<SyncResult>, kind: RoundKind): Promise<SyncResult> {
    const config = this.#config;
    const promise = Promise.resolve()
      .then(run)
      .then((result) => {
        // A round of a configuration replaced meanwhile (a restarted dev server) is not told to listeners, which serve
        // the new one.
        if (this.#config !== config) return result;
        this.#latest = result;
        for (const listener of this.#listeners) listener(result, kind);
        return result;
      });
    promise.catch(() => {}); // every consumer awaits it and sees the error
    return promise;
  }
}

const key = Symbol.for('comfortable-loader.shared-sync');

/**
 * The process-wide shared sync. It lives on `globalThis` because Astro loads `astro.config`
 * and `content.config` through different module graphs, which may hold separate copies of
 * this module.
 */
export function sharedSync(): SharedSync {
  const holder = globalThis as { [key]?: SharedSync };
  return (holder[key] ??= new SharedSync());
}

/**
 * The changed ids a refresh webhook names (`{ changed: [ids] }`, the local server's format); none for other payloads.
 */
export function changedIds(payload: unknown): string[] {
  const changed = (payload as { changed?: unknown } | null)?.changed;
  return Array.isArray(changed) ? changed.filter((id): id is string => typeof id === 'string') : [];
}

/** Names the loaders whose sources a changeset touched. */
export function changedSources(changeset: Changeset): string[] {
  return Object.entries(changeset.sources)
    .filter(([, c]) => !noChanges(c))
    .map(([source]) => source);
}
