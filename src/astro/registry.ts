import type { LoaderContext } from 'astro/loaders';
import { CollectionMap, type LoaderDeclaration, type SiteSettings } from './collection-map.ts';
import { type AstroCollections, type ContentConfigObserver, collectionsOf } from './content-config.ts';
import type { SourceSpec } from '../sync/config.ts';
import { checkContentTypeValues } from './names.ts';

/**
 * What the loaders of the content config are, which collection each fills, and what the
 * integration maps: derived from what Astro says, never from how often or in what order it calls.
 *
 * - A loader is what its options say: `comfortableLoader()` called again with the same options
 *   (Astro evaluates the content config at every save of a `.json` or `.md` file) is the same
 *   declaration, so an evaluation that Astro does not follow with loads changes nothing.
 * - Which collections a sync of Astro loads is what Astro's content config says
 *   (content-config.ts); which declaration fills each, what its `load()` is given.
 * - One round per sync of Astro: its mapping is complete once every collection that sync loads
 *   has started loading, and only then are references made from it. A refresh this package asks
 *   for loads some collections; the others keep the declarations of the last complete round,
 *   which made what the store holds (`current`).
 */

/** What a refresh this package asks Astro for puts in `refreshContent({ context })`. */
export interface RefreshContext {
  comfortable: { loaders: string[]; sources: string[] };
}

/** The collections one sync of Astro loads, bound to their loaders as each starts loading. */
export class Round {
  readonly bound = new Map<string, LoaderDeclaration>();
  /** The collections this sync of Astro loads. */
  readonly expected: Set<string>;
  /** The loaders of this refresh, or undefined for a whole sync. */
  readonly refreshed: readonly string[] | undefined;
  /** Resolves with the round's mapping once every expected collection is bound. */
  readonly mapping: Promise<CollectionMap>;
  readonly #complete: (bound: ReadonlyMap<string, LoaderDeclaration>) => CollectionMap;
  #resolve!: (mapping: CollectionMap) => void;
  done = false;

  constructor(
    expected: Set<string>,
    refreshed: readonly string[] | undefined,
    complete: (bound: ReadonlyMap<string, LoaderDeclaration>) => CollectionMap,
  ) {
    this.expected = expected;
    this.refreshed = refreshed;
    this.#complete = complete;
    this.mapping = new Promise((resolve) => (this.#resolve = resolve));
  }

  bind(collection: string, declaration: LoaderDeclaration): void {
    this.bound.set(collection, declaration);
    this.expected.add(collection);
    if ([...this.expected].every((name) => this.bound.has(name))) {
      this.done = true;
      this.#resolve(this.#complete(this.bound));
    }
  }
}

class LoaderRegistry {
  /** Every declaration made in this process, by signature. */
  readonly #declarations = new Map<string, LoaderDeclaration>();
  /** The declaration made last under each loader name: what a loader of that name in Astro's config syncs. */
  readonly #byName = new Map<string, LoaderDeclaration>();
  #site: SiteSettings = { contentTypes: {}, locales: undefined };
  #observer: ContentConfigObserver | Error | undefined;
  /** The last config Astro had loaded, for a moment it is loading the next. */
  #lastCollections: AstroCollections | undefined;
  #current: CollectionMap | undefined;
  #round: Round | undefined;
  /** The warnings said since the integration was configured. */
  readonly #said = new Set<string>();

  /** The declaration of a loader with these options: the one made before with the same signature, if any. */
  declare(declaration: LoaderDeclaration): LoaderDeclaration {
    const known = this.#declarations.get(declaration.signature) ?? declaration;
    this.#declarations.set(known.signature, known);
    this.#byName.set(known.name, known);
    return known;
  }

  /** The integration's settings and Astro's content config observer (or why it could not be read). */
  configure(site: SiteSettings, observer: ContentConfigObserver | Error): void {
    this.#site = site;
    this.#observer = observer;
    this.#round = undefined;
    this.#said.clear();
    this.#current = this.#current && new CollectionMap(this.#current.loaders, site);
  }

  get site(): SiteSettings {
    return this.#site;
  }

  /**
   * `logger.warn` for what holds of the whole site (a content type of no document), said once
   * until the integration is configured again, however many loaders and syncs meet it.
   */
  warnOnce(logger: { warn(message: string): void }) {
    return (message: string) => {
      if (this.#said.has(message)) return;
      this.#said.add(message);
      logger.warn(message);
    };
  }

  /** The mapping of the last complete round: the one the content store was made with. */
  get current(): CollectionMap | undefined {
    return this.#current;
  }

  /** The comfortable collections of Astro's content config, as Astro last loaded it. */
  collections(): AstroCollections {
    if (this.#observer === undefined) {
      throw new Error(
        'comfortable-loader is not configured: add the comfortable() integration to astro.config, with ' +
          'CMFT_REPOSITORY and CMFT_API_KEY in .env or the environment (or the repository and apiKey options)',
      );
    }
    if (this.#observer instanceof Error) {
      throw new Error(
        `comfortable-loader cannot tell which collections Astro loads: the Astro this project runs keeps its ` +
          `content config otherwise than Astro 7.3 (${this.#observer.message}). Install Astro 7.3, or a ` +
          'version of comfortable-loader that supports this Astro',
      );
    }
    const collections = collectionsOf(this.#observer.get());
    if (collections) this.#lastCollections = collections;
    // Before Astro has loaded the content config (the integration's own setup), none.
    return this.#lastCollections ?? new Map();
  }

  /**
   * The sources a sync fetches: those of every loader of Astro's content config. Throws the
   * error of a loader whose options are wrong, naming its collection, or of a `contentTypes`
   * value that names no collection of those loaders: a sync without its sources would drop them,
   * and their last good content, from the cache.
   */
  sources(): SourceSpec[] {
    const sources: SourceSpec[] = [];
    const loaders = this.collections();
    for (const [collection, name] of loaders) {
      const declaration = this.#byName.get(name);
      if (declaration?.problem) throw declaration.problem(collection);
      sources.push(...(declaration?.sources ?? []));
    }
    checkContentTypeValues(this.#site.contentTypes, [...loaders.keys()]);
    return sources;
  }

  /**
   * The round of the sync of Astro under way: the open one, or a new one for a whole sync (a
   * schema asked for before any loader of a sync loads). It is the token of the sync round.
   */
  round(): Round {
    const open = this.#round;
    if (open && !open.done && open.refreshed === undefined) return open;
    return this.#open(undefined);
  }

  /**
   * Binds the collection a `load()` fills to its declaration, in the round of the sync of Astro
   * that called it: the round resolves its mapping once every collection of that sync has
   * started loading. Another integration's refresh (of loaders it named) binds over the last
   * round, at once, and has no round of its own (undefined).
   */
  join(
    declaration: LoaderDeclaration,
    context: Pick<LoaderContext, 'collection' | 'refreshContextData'>,
  ): { round: Round | undefined; mapping: Promise<CollectionMap> } {
    const { collection } = context;
    const data = context.refreshContextData as Partial<RefreshContext> | undefined;
    if (data !== undefined && data.comfortable === undefined) {
      const mapping = this.#overlay(new Map([[collection, declaration]]));
      this.#current = mapping;
      return { round: undefined, mapping: Promise.resolve(mapping) };
    }
    const refreshed = data?.comfortable?.loaders;
    let round = this.#round;
    const sameKind = round && (round.refreshed === undefined) === (refreshed === undefined);
    if (!round || round.done || !sameKind || round.bound.has(collection)) round = this.#open(refreshed);
    round.bind(collection, declaration);
    return { round, mapping: round.mapping };
  }

  /** A new round: of the collections of Astro's config, or of those whose loaders a refresh names. */
  #open(refreshed: readonly string[] | undefined): Round {
    const loaders = this.collections();
    const expected = [...loaders].filter(([, name]) => refreshed === undefined || refreshed.includes(name));
    this.#round = new Round(new Set(expected.map(([collection]) => collection)), refreshed, (bound) => {
      const mapping = refreshed ? this.#overlay(bound) : new CollectionMap(new Map(bound), this.#site);
      this.#current = mapping;
      return mapping;
    });
    return this.#round;
  }

  /** The last round's mapping, but for collections Astro's config no longer has, with `bound` over it. */
  #overlay(bound: ReadonlyMap<string, LoaderDeclaration>): CollectionMap {
    const loaders = this.collections();
    const kept = [...(this.#current?.loaders ?? [])].filter(([collection]) => loaders.has(collection));
    return new CollectionMap(new Map([...kept, ...bound]), this.#site);
  }
}

const key = Symbol.for('comfortable-loader.loader-registry');

/**
 * The process-wide registry. It lives on `globalThis` because Astro loads `astro.config` and
 * `content.config` through different module graphs, which may hold separate copies of this module.
 */
export function loaderRegistry(): LoaderRegistry {
  const holder = globalThis as { [key]?: LoaderRegistry };
  return (holder[key] ??= new LoaderRegistry());
}
