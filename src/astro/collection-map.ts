import type { CacheReader } from '../cache/index.ts';
import { showingAny } from '../entries/page-keys.ts';
import { fingerprintOf } from '../model/digests.ts';
import type { Changeset } from '../sync/changeset.ts';
import type { LocaleMap } from './i18n.ts';
import type { SourceSpec } from '../sync/config.ts';
import type { ComfortableLoaderOptions } from './loader-options.ts';

/**
 * Which collection each loader fills, and what the integration maps, for one sync round: what
 * references are made from (the collection a content type maps to, the ids its loader gives),
 * what a refresh reaches, and what every entry's fingerprint covers.
 */

/**
 * A `comfortableLoader()`: what its options say, whichever evaluation of the content config made it; its
 * `locales` and `entryId` options (undefined: every locale of the repository, the default `<locale>/<id>`).
 */
export type LoaderDeclaration = Pick<ComfortableLoaderOptions, 'locales' | 'entryId'> & {
  /** Its name for Astro (`comfortable:collection:posts`), which names its sources. */
  name: string;
  /** A hash of everything the loader's options decide of its entries. */
  signature: string;
  sources: SourceSpec[];
  /** Source keys such as `collection:posts`. */
  keys: string[];
  /** The error of the loader's options, named after its collection; undefined when they are right. */
  problem?: ((collection?: string) => Error) | undefined;
};

/** What the integration says of the site: `contentTypes`, and Astro's locales when it has `i18n`. */
export interface SiteSettings {
  contentTypes: Readonly<Record<string, string>>;
  locales: LocaleMap | undefined;
}

export class CollectionMap {
  /** Collection → the loader that fills it. */
  readonly loaders: ReadonlyMap<string, LoaderDeclaration>;
  readonly site: SiteSettings;

  constructor(loaders: ReadonlyMap<string, LoaderDeclaration>, site: SiteSettings) {
    this.loaders = loaders;
    this.site = site;
  }

  /**
   * The collection a content type maps to (the integration's `contentTypes`), with the loader
   * that fills it, or `loader: undefined` when no comfortableLoader() fills it.
   */
  collectionFor(contentType: string) {
    const collection = this.site.contentTypes[contentType];
    return collection === undefined ? undefined : { collection, loader: this.loaders.get(collection) };
  }

  /** The collections whose loaders' sources `holds` accepts (for hints). */
  collectionsHolding(holds: (sources: string[]) => boolean): string[] {
    return [...this.loaders].filter(([, loader]) => holds(loader.keys)).map(([collection]) => collection);
  }

  /** Content types the integration's `contentTypes` maps to a collection. */
  contentTypesIn(collection: string): string[] {
    return Object.entries(this.site.contentTypes)
      .filter(([, c]) => c === collection)
      .map(([type]) => type);
  }

  /**
   * Names of the loaders whose entries a sync changed: those of the sources whose members it
   * changed, and those holding a document that shows a changed record (a reference whose id is
   * made from the target's fields) or that an alias came to, or left; all of them when the
   * content model changed (a field the CMS added changes the shape of every entry of its type).
   */
  loadersChangedBy(cache: CacheReader, changeset: Changeset, remodelled = false): string[] {
    const { records, sources } = changeset;
    const aliased = Object.entries(sources).flatMap(([key, c]) =>
      key.startsWith('alias:') ? [...c.added, ...c.removed] : [],
    );
    const showing = showingAny(cache, [...records.added, ...records.updated, ...records.removed, ...aliased]);
    const changed = Object.entries(sources)
      .filter(([, c]) => c.added.length + c.updated.length + c.removed.length > 0)
      .map(([source]) => source);
    const holding = [...this.loaders.values()].filter(
      (loader) =>
        remodelled ||
        loader.keys.some((key) => changed.includes(key) || cache.members(key).some((member) => showing.has(member.id))),
    );
    return [...new Set(holding.map((loader) => loader.name))];
  }

  /**
   * What decides the entries of every collection: the `contentTypes` mapping, Astro's locales and
   * each loader's options with the collection it fills. A reference's id comes from its target's
   * loader, so an option of one loader can change the entries of another.
   */
  fingerprint(): string {
    const byKey = <T>(entries: [string, T][]) => entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return fingerprintOf({
      contentTypes: byKey(Object.entries(this.site.contentTypes)),
      locales: this.site.locales?.signature() ?? null,
      loaders: byKey([...this.loaders].map(([collection, l]) => [`${collection}|${l.name}`, l.signature])),
    });
  }
}
