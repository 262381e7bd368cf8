import { hash } from '../sync/config.ts';
import type { EntryIdInput } from './loader.ts';

/**
 * What the loaders of this process are and which collections hold which content types, so
 * references point at the right collection and id, and a refresh reaches the right loaders.
 */
export interface RegisteredLoader {
  name: string;
  /** Source keys such as `collection:posts`. */
  sources: string[];
  contentType?: string | undefined;
  /** The loader's own `entryId` option; undefined for the default `<locale>/<id>`. */
  entryId?: ((entry: EntryIdInput) => string) | undefined;
  /** The Astro collection it fills, once it has loaded. */
  collection?: string | undefined;
}

export class LoaderRegistry {
  readonly loaders = new Map<string, RegisteredLoader>();
  #contentTypes: Record<string, string> = {};

  add(loader: RegisteredLoader): void {
    this.loaders.set(loader.name, loader);
  }

  /** Content type → the Astro collection that holds its entries (the integration's `contentTypes`). */
  setContentTypes(map: Record<string, string>): void {
    this.#contentTypes = { ...map };
  }

  /** The collection a content type maps to, with the entry ids of its loader (the one filling it, or else one for that content type). */
  collectionFor(contentType: string): { collection: string; entryId: RegisteredLoader['entryId'] } | undefined {
    const collection = this.#contentTypes[contentType];
    if (!collection) return undefined;
    const loaders = [...this.loaders.values()];
    const loader = loaders.find((l) => l.collection === collection) ?? loaders.find((l) => l.contentType === contentType);
    return { collection, entryId: loader?.entryId };
  }

  /** The Astro collection a loader fills, as its load context says (known once it has loaded). */
  bind(loader: string, collection: string): void {
    const registered = this.loaders.get(loader);
    if (registered) registered.collection = collection;
  }

  /** The sources of the loaders that fill an Astro collection; undefined while none has loaded. */
  sourcesOfCollection(collection: string): string[] | undefined {
    const loaders = [...this.loaders.values()].filter((l) => l.collection === collection);
    return loaders.length === 0 ? undefined : loaders.flatMap((l) => l.sources);
  }

  /** Content types the integration's `contentTypes` maps to an Astro collection. */
  contentTypesIn(collection: string): string[] {
    return Object.entries(this.#contentTypes).filter(([, c]) => c === collection).map(([type]) => type);
  }

  /** Names of the loaders that read any of these sources. */
  loadersFor(sources: readonly string[]): string[] {
    return [...this.loaders.values()].filter((l) => l.sources.some((s) => sources.includes(s))).map((l) => l.name);
  }

  referenceFingerprint(): string {
    // In key order: the same mapping written in another order is the same.
    return hash(Object.entries(this.#contentTypes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }
}

const key = Symbol.for('comfortable-loader.loader-registry');

export function loaderRegistry(): LoaderRegistry {
  const holder = globalThis as { [key]?: LoaderRegistry };
  return (holder[key] ??= new LoaderRegistry());
}
