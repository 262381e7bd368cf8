import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ContentLayer } from '../node_modules/astro/dist/content/content-layer.js';
import { MutableDataStore } from '../node_modules/astro/dist/content/mutable-data-store.js';
import { globalContentConfigObserver } from '../node_modules/astro/dist/content/utils.js';
import { AstroLogger } from '../node_modules/astro/dist/core/logger/core.js';
import { z } from 'astro/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocaleMap } from '../src/astro/i18n.ts';
import { comfortableLoader } from '../src/astro/loader.ts';
import { loaderRegistry } from '../src/astro/registry.ts';
import type { ComfortableLoaderOptions } from '../src/astro/loader-options.ts';
import { closeAllPools } from '../src/api/transport.ts';
import { changedSources, sharedSync } from '../src/sync/shared.ts';
import { kitchenKey } from './helpers/kitchen.ts';
import { pozoleEditor } from './helpers/kitchen-dev.ts';
import { type KitchenServer, startKitchen } from './helpers/kitchen-site.ts';
import { mulberry32 } from './helpers/random.ts';

/**
 * Astro's own content layer (its sync queue, `createSchema` then `load` for every collection at
 * once, its content config observer) driving the loaders through schedules a site builder's dev
 * session makes: the content config evaluated again and again (a `.json` save), some evaluations
 * followed by a sync (its text changed) and others not, evaluations in the page runner that Astro
 * never loads, the collections in any order, some with a schema of their own, refreshes after
 * edits in the CMS. After any schedule, the store equals that of a fresh start on the same
 * config (entry ids, references, everything else), and a poll would sync the same sources.
 */

const lang = (astroLocale = '') => astroLocale.toLowerCase();
const bySlug: ComfortableLoaderOptions['entryId'] = ({ astroLocale, fields }) => `${lang(astroLocale)}/${fields.slug}`;
const byIdAndSlug: ComfortableLoaderOptions['entryId'] = ({ id, astroLocale, fields }) =>
  `${lang(astroLocale)}/${id.slice(-3)}-${fields.slug}`;

/** The content configs a session goes through: the loaders of each collection. */
const variants: Record<string, ComfortableLoaderOptions>[] = [
  {
    recipes: { collection: 'recipes', options: { includes: 1 }, entryId: bySlug },
    chefs: { contentType: 'chef', entryId: bySlug },
    cuisines: { contentType: 'cuisine' },
    pages: { aliases: ['home', 'about'], entryId: bySlug },
  },
  {
    recipes: { collection: 'recipes', options: { includes: 1 }, entryId: byIdAndSlug },
    chefs: { contentType: 'chef', entryId: bySlug },
    cuisines: { contentType: 'cuisine' },
    pages: { aliases: ['home', 'about'], entryId: bySlug },
  },
  {
    recipes: { collection: 'recipes', options: { includes: 1 }, entryId: bySlug },
    chefs: { contentType: 'chef', entryId: bySlug, locales: ['en_GB', 'fr_FR'] },
    pages: { aliases: ['home', 'about'], entryId: bySlug },
  },
];
// Not cuisine: a content config without cuisines would map it to no collection, which fails.
const contentTypes = { recipe: 'recipes', chef: 'chefs', page: 'pages' };
const i18n = {
  locales: ['en', 'fr', 'it', { path: 'it-ch', codes: ['it-CH'] }],
  defaultLocale: 'en',
} as ConstructorParameters<typeof LocaleMap>[0];
const looseEntry = z.looseObject({ id: z.string(), fields: z.looseObject({}) });

let kitchen: KitchenServer;
let dir: string;
beforeAll(async () => {
  kitchen = await startKitchen();
  dir = await mkdtemp(join(tmpdir(), 'schedules-'));
}, 60_000);
afterAll(async () => {
  await closeAllPools();
  await kitchen?.close();
  await rm(dir, { recursive: true, force: true });
});

/** What Astro and the loaders logged, shown when a schedule fails. */
const logged: string[] = [];
const logger = new AstroLogger({
  destination: {
    write: (event: { label: string | null; message: string }) => logged.push(`[${event.label}] ${event.message}`),
  },
  level: 'info',
});

/** A process of `astro dev`, as far as the loaders see it: Astro's content layer, store and observer. */
function session(name: string) {
  // A new process: its own registry and shared sync.
  for (const key of ['comfortable-loader.loader-registry', 'comfortable-loader.shared-sync'])
    delete (globalThis as Record<symbol, unknown>)[Symbol.for(key)];
  const root = pathToFileURL(join(dir, `${name}/`));
  const store = new MutableDataStore();
  const layer = new ContentLayer({
    settings: {
      config: { root, srcDir: new URL('src/', root), cacheDir: new URL('cache/', root), experimental: {}, legacy: {} },
      dotAstroDir: new URL('.astro/', root),
      contentEntryTypes: [],
      dataEntryTypes: [],
    },
    logger,
    store,
  } as never);
  const registry = loaderRegistry();
  registry.configure({ contentTypes, locales: new LocaleMap(i18n) }, globalContentConfigObserver as never);
  sharedSync().configure(
    { baseUrl: kitchen.server.url, repository: 'kitchen', apiKey: kitchenKey, cacheDir: join(dir, name, 'cache') },
    { info: () => {}, warn: () => {} },
    undefined,
    () => registry.sources(),
  );
  let synced: string | undefined;
  /** Evaluates a variant (collections in `order`, `own` with a schema of their own), as Astro's or a page's runner does. */
  const evaluate = (variant: number, order: string[], own: string[]) => {
    const loaders = order.map(
      (collection) => [collection, comfortableLoader(variants[variant]![collection]!)] as const,
    );
    return Object.fromEntries(
      loaders.map(([collection, loader]) => [
        collection,
        {
          type: 'content_layer',
          // What Astro's config parser keeps of a loader: new functions around the loader's own.
          loader: { name: loader.name, load: (c: never) => loader.load(c), createSchema: () => loader.createSchema() },
          ...(own.includes(collection) ? { schema: looseEntry } : {}),
        },
      ]),
    );
  };
  return {
    store,
    /** Astro evaluates the config (a save anywhere) and syncs when its text changed, as its content layer does. */
    async astroEvaluates(variant: number, order: string[], own: string[]) {
      const digest = `${variant}|${[...own].sort().join(',')}`;
      globalContentConfigObserver.set({ status: 'loading' });
      globalContentConfigObserver.set({
        status: 'loaded',
        config: { collections: evaluate(variant, order, own), digest },
      } as never);
      if (digest !== synced) {
        synced = digest;
        await layer.sync();
      }
    },
    /** A page's runner evaluates the config: loader objects Astro never loads. */
    pageEvaluates: (variant: number, order: string[], own: string[]) => void evaluate(variant, order, own),
    /** A poll or a refresh, as dev's loop follows it: the loaders whose sources changed load again. */
    async refresh() {
      const result = await sharedSync().refresh();
      const sources = changedSources(result.changeset);
      const loaders = registry.current?.loadersChangedBy(result.cache, result.changeset) ?? [];
      if (loaders.length > 0) await layer.sync({ loaders, context: { comfortable: { loaders, sources } } });
    },
    polled: () =>
      registry
        .sources()
        .map((source) => `${source.kind}:${source.name}`)
        .sort(),
  };
}

type Store = InstanceType<typeof MutableDataStore>;
/**
 * Every collection's entries, without Astro's own meta, and without their page keys: a refresh in
 * dev makes again the entries whose content changed, and a page key also covers what its entry does
 * not show (two relations away); keys serve builds, which load every collection.
 */
function entries(store: Store): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const collection of store.collections().keys()) {
    if (collection.startsWith('meta:')) continue;
    out[collection] = Object.fromEntries(
      [...store.entries(collection)].map(([id, entry]) => {
        const { cacheKey: _, ...data } = entry.data as Record<string, unknown>;
        return [id, { data, rendered: entry.rendered }];
      }),
    );
  }
  return out;
}

describe('any schedule of evaluations, loads and refreshes', () => {
  it.each(Array.from({ length: 8 }, (_, i) => i + 1))(
    'ends with the store of a fresh start (seed %i)',
    async (seed) => {
      const random = mulberry32(seed);
      const shuffle = <T>(list: T[]) =>
        list
          .map((v) => [random(), v] as const)
          .sort((a, b) => a[0] - b[0])
          .map(([, v]) => v);
      const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)]!;
      const nextEdit = pozoleEditor();
      logged.length = 0;
      const dev = session(`dev-${seed}`);
      let variant = 0;
      let own: string[] = [];
      const order = () => shuffle(Object.keys(variants[variant]!));
      await dev.astroEvaluates(variant, order(), own);
      const steps: string[] = [];
      for (let step = 0; step < 7; step++) {
        const kind = pick(['save', 'save', 'page', 'edit-config', 'cms']);
        steps.push(kind);
        if (kind === 'save') await dev.astroEvaluates(variant, order(), own);
        else if (kind === 'page') dev.pageEvaluates(variant, order(), own);
        else if (kind === 'edit-config') {
          variant = Math.floor(random() * variants.length);
          own = Object.keys(variants[variant]!).filter(() => random() < 0.4);
          await dev.astroEvaluates(variant, order(), own);
        } else {
          await kitchen.server.replaceSnapshot(nextEdit().snapshot);
          await dev.refresh();
        }
      }

      const fresh = session(`fresh-${seed}`);
      await fresh.astroEvaluates(variant, order(), own);
      expect(entries(dev.store), `after ${steps.join(', ')}\n${logged.join('\n')}`).toEqual(entries(fresh.store));
      expect(dev.polled()).toEqual(fresh.polled());
    },
    120_000,
  );
});
