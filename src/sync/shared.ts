import { MemoryEtagStore } from '../api/transport.ts';
import { CacheError } from '../cache/index.ts';
import type { Changeset } from './changeset.ts';
import { parseSyncConfig, type SourceOptions, type SyncConfig, type SyncConfigInput } from './config.ts';
import { sync, type SyncHints, type SyncLogger, type SyncResult } from './engine.ts';

/**
 * One sync shared by every consumer in a process: all content loaders of an Astro sync and the
 * Vite plugin get the same result, from one fetch plan, one concurrency limit and one cache.
 *
 * Consumers register the sources they need when they are created; the first one to ask for
 * content starts a sync round and the others join it. A consumer asking again (the next Astro
 * sync, or a refresh of some loaders) starts a new round.
 */

export type SourceKind = 'collection' | 'alias' | 'query';
export type SharedConfig = Omit<SyncConfigInput, 'collections' | 'aliases' | 'queries'> &
  Partial<Pick<SyncConfigInput, 'collections' | 'aliases' | 'queries'>>;

interface RegisteredSource {
  kind: SourceKind;
  name: string;
  options: SourceOptions & { contentType?: string };
}

interface Round {
  promise: Promise<SyncResult>;
  consumed: Set<string>;
}

export class SharedSync {
  #config: SharedConfig | undefined;
  #logger: SyncLogger | undefined;
  /** The snapshot file served in place of the CMS, if one is (for errors' hints). */
  #snapshot: string | undefined;
  /** The sources the configuration names (the integration's or the Vite plugin's options). */
  #configSources = new Map<string, RegisteredSource>();
  /** The sources the loaders of the current content config registered. */
  #loaderSources = new Map<string, RegisteredSource>();
  /** Why no sync may run now (see `hold`). */
  #held: Error | undefined;
  #round: Round | undefined;
  /** Everyone who ever acquired a round. */
  readonly #consumers = new Set<string>();
  readonly #listeners = new Set<(result: SyncResult, polled: boolean) => void>();
  /** The answers to listings of stamps of this configuration's syncs, so the next one asks them conditionally. */
  #listingEtags = new MemoryEtagStore();

  /**
   * Sets the connection, cache options and configured sources (from the Astro integration or the
   * Vite plugin). A new configuration (a restarted dev server) replaces the last one whole.
   */
  configure(config: SharedConfig, logger?: SyncLogger, snapshot?: string): void {
    this.#config = config;
    this.#logger = logger;
    this.#snapshot = snapshot;
    const aliases = Array.isArray(config.aliases)
      ? Object.fromEntries(config.aliases.map((a) => [a, {}]))
      : (config.aliases ?? {});
    const sources: RegisteredSource[] = [
      ...Object.entries(config.collections ?? {}).map(([name, options]) => ({
        kind: 'collection' as const,
        name,
        options: options as SourceOptions,
      })),
      ...Object.entries(aliases).map(([name, options]) => ({
        kind: 'alias' as const,
        name,
        options: options as SourceOptions,
      })),
      ...Object.entries(config.queries ?? {}).map(([name, options]) => ({
        kind: 'query' as const,
        name,
        options: options as SourceOptions,
      })),
    ];
    this.#configSources = new Map(sources.map((source) => [`${source.kind}:${source.name}`, source]));
    this.#round = undefined;
    this.#listingEtags = new MemoryEtagStore();
  }

  get configured(): boolean {
    return this.#config !== undefined;
  }

  /** The snapshot file served in place of the CMS (the integration's `snapshot` option), if one is. */
  get snapshot(): string | undefined {
    return this.#snapshot;
  }

  /** Adds a loader's source to the fetch plan; a later registration of the same source with other options wins. */
  register(kind: SourceKind, name: string, options: SourceOptions & { contentType?: string } = {}): string {
    const key = `${kind}:${name}`;
    this.#loaderSources.set(key, { kind, name, options });
    return key;
  }

  /**
   * Forgets the sources of the loaders registered so far: the content config was evaluated again, and its loaders
   * register theirs anew.
   */
  newGeneration(): void {
    this.#loaderSources = new Map();
    this.#held = undefined;
    this.#round = undefined;
  }

  /**
   * Holds every sync back with `problem` (a loader's options are wrong) until the content config
   * is evaluated again: a sync without that loader's sources would drop them from the cache, and
   * with them the last good content of the next build.
   */
  hold(problem: Error): void {
    this.#held = problem;
    this.#round = undefined;
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
    // A loader's options for a source win over the configuration's.
    const sources = new Map([...this.#configSources, ...this.#loaderSources]);
    const pick = (kind: SourceKind) =>
      Object.fromEntries([...sources.values()].filter((s) => s.kind === kind).map((s) => [s.name, s.options]));
    return parseSyncConfig({
      ...this.#config,
      collections: pick('collection'),
      aliases: pick('alias'),
      queries: pick('query'),
    });
  }

  /** The current round's result for a consumer; starts a round when this consumer already had the current one. */
  acquire(consumer: string): Promise<SyncResult> {
    this.#consumers.add(consumer);
    if (!this.#round || this.#round.consumed.has(consumer))
      this.#round = this.#start(() => sync(this.config(), this.#logger, { listingEtags: this.#listingEtags }));
    this.#round.consumed.add(consumer);
    return this.#round.promise;
  }

  /** The current round's result without consuming it (for schemas); starts one when there is none. */
  current(): Promise<SyncResult> {
    return this.#round?.promise ?? this.acquire('current');
  }

  /**
   * Runs a sync now (a dev refresh). The loaders it refreshes read it with `current()`; every
   * consumer counts as having had it, so the next full Astro sync starts one new round that all
   * its loaders share, instead of some reading this one and the rest starting another.
   */
  refresh(refetch: readonly string[] = []): Promise<SyncResult> {
    return this.#startForAll({ refetch });
  }

  /**
   * One ask of the CMS for changes (dev's polling): a sync after the current round is done, which
   * throws when the CMS fails instead of falling back to the cache, and prints nothing unless it changed something. Its
   * result becomes the round every consumer has had, as a refresh's does; a failure leaves the
   * current round, and so the content served, as it was. Undefined, with no request, when there
   * is nothing to follow yet: no round since the content config was (re)evaluated, whose loaders
   * may not all have registered their sources (a sync without them would drop them from the
   * cache), or loaders whose options are wrong (`hold`), which their own error already tells.
   */
  async poll(): Promise<SyncResult | undefined> {
    // After every round begun meanwhile (Astro's sync, a refresh), so that two syncs never overlap.
    let previous = this.#round;
    while (previous) {
      await previous.promise.catch(() => {});
      if (this.#round === previous) break;
      previous = this.#round;
    }
    if (!previous || this.#held) return undefined;
    const warnings: string[] = [];
    const quiet = { info: () => {}, warn: (message: string) => warnings.push(message) };
    const round = this.#start(
      () => sync({ ...this.config(), onError: 'fail' }, quiet, { listingEtags: this.#listingEtags }),
      true,
    );
    for (const consumer of this.#consumers) round.consumed.add(consumer);
    this.#round = round;
    try {
      const result = await round.promise;
      // What a sync that changed something warns of (a dangling reference, say) is said; an ask that found nothing is not.
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

  /** Called after every completed round; `polled` when it was a poll's (which may have found nothing). */
  onResult(listener: (result: SyncResult, polled: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Starts a round outside the Astro sync's rhythm, which every consumer counts as having had. */
  #startForAll(hints: SyncHints): Promise<SyncResult> {
    this.#round = this.#start(() => sync(this.config(), this.#logger, { ...hints, listingEtags: this.#listingEtags }));
    for (const consumer of this.#consumers) this.#round.consumed.add(consumer);
    return this.#round.promise;
  }

  #start(run: () => Promise<SyncResult>, polled = false): Round {
    const config = this.#config;
    const held = this.#held;
    const promise = (held ? Promise.reject(held) : run()).then((result) => {
      // A round of a configuration replaced meanwhile (a restarted dev server) is not told to listeners, which serve
      // the new one.
      if (this.#config === config) for (const listener of this.#listeners) listener(result, polled);
      return result;
    });
    promise.catch(() => {}); // every consumer awaits it and sees the error
    return { promise, consumed: new Set() };
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
    .filter(([, c]) => c.added.length + c.updated.length + c.removed.length > 0)
    .map(([source]) => source);
}
