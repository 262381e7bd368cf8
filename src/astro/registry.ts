import { hash } from '../sync/config.ts';
import { sharedSync } from '../sync/shared.ts';
import type { EntryIdInput } from './loader-options.ts';
import type { LocaleMap } from './i18n.ts';

/**
 * What the loaders of the content config are and which collections hold which content types,
 * so references point at the right collection and id, and a refresh reaches the right loaders.
 *
 * Loaders are known in generations: the loaders one evaluation of the content config makes.
 * Astro evaluates it once per build, and again in dev when it changes; once a generation's
 * loaders have started loading, the next loader made starts a new generation, which replaces
 * the last (and its sources in the shared sync), so nothing of an edited config outlives it.
 *
 * Which Astro collection a loader fills is known only when Astro loads it. A reference is made
 * with the entry id of the collection it points into, so every loader waits, before it makes
 * references, until each loader of its generation has said which collection it fills: the ids
 * do not depend on the order Astro runs the loaders in.
 */
export interface RegisteredLoader {
  name: string;
  /** Source keys such as `collection:posts`. */
  sources: string[];
  /** A hash of everything the loader's options decide of its entries. */
  signature: string;
  /** Its source's content type, for a `contentType` loader. */
  contentType?: string | undefined;
  /** The loader's `locales` option; undefined for every locale of the repository. */
  locales?: string[] | undefined;
  /** The error of the loader's options, named after the collection once it is known; undefined when they are right. */
  problem?: ((collection?: string) => Error) | undefined;
  /** The loader's own `entryId` option; undefined for the default `<locale>/<id>`. */
  entryId?: ((entry: EntryIdInput) => string) | undefined;
  /** The Astro collection it fills, once it has loaded. */
  collection?: string | undefined;
}

/** How long a loader waits for the other loaders of its config to start loading, once its content is synced. */
const settleMs = 3_000;

class Generation {
  readonly loaders: RegisteredLoader[] = [];
  /** Set when one of its loaders starts loading: a loader made later belongs to a new generation. */
  sealed = false;
  readonly #waiters = new Set<() => void>();

  get unbound(): RegisteredLoader[] {
    return this.loaders.filter((l) => l.collection === undefined);
  }

  bound(): void {
    if (this.unbound.length > 0) return;
    for (const wake of this.#waiters) wake();
    this.#waiters.clear();
  }

  /** Resolves with the loaders still unbound: none once all are bound, else those left when the wait ends. */
  settled(ms: number): Promise<RegisteredLoader[]> {
    if (this.unbound.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(this.unbound);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(wake);
        resolve(this.unbound);
      }, ms);
      this.#waiters.add(wake);
    });
  }
}

export class LoaderRegistry {
  #generation = new Generation();
  /** The generation each loader was made in. */
  readonly #generationOf = new WeakMap<RegisteredLoader, Generation>();
  #contentTypes: Record<string, string> = {};
  /** Generations made so far in this process: the content config was evaluated again after the first. */
  #generations = 1;
  /** Loaders told of as never loaded, so the warning comes once per generation. */
  #told = new WeakSet<Generation>();

  /** Adds a loader (when `comfortableLoader()` is called) to the current generation, or to a new one. */
  add(loader: RegisteredLoader): void {
    if (this.#generation.sealed) {
      this.#generation = new Generation();
      this.#generations++;
      sharedSync().newGeneration();
    }
    this.#generation.loaders.push(loader);
    this.#generationOf.set(loader, this.#generation);
  }

  /** A loader of `loader`'s generation whose options are wrong: no loader of it syncs. */
  broken(loader: RegisteredLoader): RegisteredLoader | undefined {
    return this.#generationOf.get(loader)?.loaders.find((l) => l.problem);
  }

  /** Whether the content config was evaluated again since the first time (an edit in dev). */
  get reevaluated(): boolean {
    return this.#generations > 1;
  }

  /** Marks the loader's generation as loading (Astro asked a loader for its schema or its entries). */
  seal(loader: RegisteredLoader): void {
    const generation = this.#generationOf.get(loader);
    if (generation) generation.sealed = true;
  }

  /** Content type → the Astro collection that holds its entries (the integration's `contentTypes`). */
  setContentTypes(map: Record<string, string>): void {
    this.#contentTypes = { ...map };
  }

  /** The CMS locales' Astro locales, when astro.config has `i18n` (see i18n.ts). */
  locales: LocaleMap | undefined;

  get loaders(): readonly RegisteredLoader[] {
    return this.#generation.loaders;
  }

  /** The Astro collection a loader fills, as its load context says. */
  bind(loader: RegisteredLoader, collection: string): void {
    loader.collection = collection;
    this.seal(loader);
    this.#generationOf.get(loader)?.bound();
  }

  /**
   * Waits until every loader of the config has said which collection it fills. Loaders that
   * Astro never loads (made, but in no collection) are waited for a few seconds, then told of.
   */
  async settled(loader: RegisteredLoader, warn: (message: string) => void): Promise<void> {
    const generation = this.#generationOf.get(loader);
    if (!generation) return;
    const left = await generation.settled(settleMs);
    if (left.length === 0 || this.#told.has(generation)) return;
    this.#told.add(generation);
    warn(
      `${left.map((l) => `comfortableLoader() of ${l.sources.join(', ')}`).join('; ')} was made but no ` +
        `collection loaded it: ` +
        'give each comfortableLoader() to a collection of src/content.config.ts. References into ' +
        'collections are made without it.',
    );
  }

  /**
   * The collection a content type maps to (the integration's `contentTypes`), with the entry ids
   * of the loader that fills it, or `loader: undefined` when no comfortableLoader() fills it.
   */
  collectionFor(contentType: string): { collection: string; loader: RegisteredLoader | undefined } | undefined {
    const collection = this.#contentTypes[contentType];
    if (!collection) return undefined;
    return { collection, loader: this.loaders.find((l) => l.collection === collection) };
  }

  /** The collections of the loaders whose sources hold a document of a content type, as the members say (for hints). */
  collectionsHolding(holds: (sources: string[]) => boolean): string[] {
    return this.loaders.filter((l) => l.collection !== undefined && holds(l.sources)).map((l) => l.collection!);
  }

  /** The sources of the loaders that fill an Astro collection; undefined while none has loaded. */
  sourcesOfCollection(collection: string): string[] | undefined {
    const loaders = this.loaders.filter((l) => l.collection === collection);
    return loaders.length === 0 ? undefined : loaders.flatMap((l) => l.sources);
  }

  /** Content types the integration's `contentTypes` maps to an Astro collection. */
  contentTypesIn(collection: string): string[] {
    return Object.entries(this.#contentTypes)
      .filter(([, c]) => c === collection)
      .map(([type]) => type);
  }

  /** Names of the loaders that read any of these sources. */
  loadersFor(sources: readonly string[]): string[] {
    return this.loaders.filter((l) => l.sources.some((s) => sources.includes(s))).map((l) => l.name);
  }

  /**
   * What decides the entries of every collection: the `contentTypes` mapping and each loader's
   * options with the collection it fills. A reference's id comes from its target's loader, so
   * an option of one loader can change the entries of another.
   */
  fingerprint(): string {
    const byKey = <T>(entries: [string, T][]) => entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return hash({
      contentTypes: byKey(Object.entries(this.#contentTypes)),
      locales: this.locales?.signature() ?? null,
      loaders: byKey(this.loaders.map((l) => [`${l.collection ?? ''}|${l.name}`, l.signature])),
    });
  }
}

const key = Symbol.for('comfortable-loader.loader-registry');

export function loaderRegistry(): LoaderRegistry {
  const holder = globalThis as { [key]?: LoaderRegistry };
  return (holder[key] ??= new LoaderRegistry());
}
