import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kitchenKey } from './helpers/kitchen.ts';
import {
  defaultLoaders,
  type KitchenServer,
  type KitchenSite,
  kitchenSite,
  startKitchen,
} from './helpers/kitchen-site.ts';

/**
 * Options are checked where they are written, and `astro build` fails on a wrong one: an unknown
 * or misspelt option of the integration, of a loader or of a loader's request options names the
 * key as written, the collection it is in (as named in src/content.config.ts), and the nearest
 * valid key. One checker answers for all three places.
 */

let kitchen: KitchenServer;
let site: KitchenSite;
let astroConfig: string;

beforeAll(async () => {
  kitchen = await startKitchen();
  site = await kitchenSite('kitchen-options');
  astroConfig = await readFile(join(site.dir, 'astro.config.mjs'), 'utf8');
}, 60_000);

afterAll(async () => {
  await site?.remove();
  await kitchen?.close();
});

const recipes = (edit: (options: string) => string) => ({ ...defaultLoaders, recipes: edit(defaultLoaders.recipes!) });
const where = 'of comfortableLoader() for the collection "recipes" in src/content.config.ts';

const loaderCases: [string, Record<string, string>, string][] = [
  [
    'locale for locales',
    recipes((o) => o.replace('{ collection:', "{ locale: ['en_GB'], collection:")),
    `Unknown option locale ${where}: did you mean locales?`,
  ],
  [
    'colection for collection',
    recipes((o) => o.replace('collection:', 'colection:')),
    `Unknown option colection ${where}: did you mean collection?`,
  ],
  [
    'include for includes',
    recipes((o) => o.replace('includes: 1', 'include: 2')),
    `Unknown option options.include ${where}: did you mean options.includes?`,
  ],
  [
    'filter for filters',
    recipes((o) => o.replace('includes: 1', "filter: [{ '*.fields.slug': { equal: 'polenta' } }]")),
    `Unknown option options.filter ${where}: did you mean options.filters?`,
  ],
  [
    'a locale the repository lacks',
    recipes((o) => o.replace('{ collection:', "{ locales: ['en_US'], collection:")),
    `Invalid option locales ${where}: the repository has no locale "en_US" (en_GB, fr_FR, it_IT, it_CH): did you mean "en_GB"?`,
  ],
  [
    'an entryId that is no function',
    recipes((o) => o.replace(/entryId: .*\}$/, "entryId: 'slug' }")),
    `Invalid option entryId ${where}: expected a function`,
  ],
  [
    'includes as a string',
    recipes((o) => o.replace('includes: 1', "includes: '2'")),
    `Invalid option options.includes ${where}: expected a level from 0 to 5, or a map of fields`,
  ],
  [
    'alias given a list',
    { ...defaultLoaders, pages: defaultLoaders.pages!.replace('aliases:', 'alias:') },
    'Invalid option alias of comfortableLoader() for the collection "pages" in src/content.config.ts: expected the API id of one alias, such as "home" (aliases takes a list of them)',
  ],
  [
    'an entryId that gives two entries one id',
    recipes((o) => o.replace('`${lang(astroLocale)}/${fields.slug}`', '`${fields.slug}`')),
    `Invalid option entryId ${where}: it gives the id "green-mole" to two entries (document 700000000000000303 in en_GB and document 700000000000000303 in fr_FR); ids must be unique`,
  ],
  [
    'two sources',
    recipes((o) => o.replace('{ collection:', "{ contentType: 'recipe', collection:")),
    `Invalid options ${where}: give exactly one of collection, alias, aliases or contentType (got collection and contentType)`,
  ],
];

describe('a wrong option fails astro build with the option, where it is, and the nearest valid one', () => {
  it.each(loaderCases)(
    'of a loader: %s',
    async (_, loaders, message) => {
      await site.loaders(loaders);
      const { code, output } = await site.astro(kitchen.server);
      expect(code, output).not.toBe(0);
      expect(output).toContain(message);
      expect(output).not.toContain(kitchenKey);
    },
    120_000,
  );

  const integrationCases: [string, string, string][] = [
    [
      'contentType for contentTypes',
      'contentType: {',
      'Unknown option comfortable.contentType: did you mean comfortable.contentTypes?',
    ],
    [
      'cacheDri for cacheDir',
      "cacheDri: 'cache', contentTypes: {",
      'Unknown option comfortable.cacheDri: did you mean comfortable.cacheDir?',
    ],
    [
      'an option nothing is near',
      "colour: 'blue', contentTypes: {",
      'Unknown option comfortable.colour: the options there are ',
    ],
    [
      'a misspelt option of a configured source',
      'collections: { recipes: { sortng: {} } }, contentTypes: {',
      'Unknown option comfortable.collections.recipes.sortng: did you mean comfortable.collections.recipes.sorting?',
    ],
  ];

  it.each(integrationCases)(
    'of the integration: %s',
    async (_, replacement, message) => {
      await site.loaders(defaultLoaders);
      await writeFile(join(site.dir, 'astro.config.mjs'), astroConfig.replace('contentTypes: {', replacement));
      try {
        const { code, output } = await site.astro(kitchen.server);
        expect(code, output).not.toBe(0);
        expect(output).toContain(message);
      } finally {
        await writeFile(join(site.dir, 'astro.config.mjs'), astroConfig);
      }
    },
    120_000,
  );

  // Values that name something, checked as keys are once the sync has said what there is. The
  // kitchen's content types are recipe, chef, cuisine and page; its collections recipes, chefs,
  // cuisines and pages.
  const valueCases: [string, Record<string, string>, string, string][] = [
    [
      'a content type of a loader',
      { ...defaultLoaders, cuisines: "{ contentType: 'cuisines' }" },
      "contentTypes: { recipe: 'recipes',",
      'Invalid option contentType of comfortableLoader() for the collection "cuisines" in src/content.config.ts: the synced content has no content type "cuisines" (chef, cuisine, page, recipe): did you mean "cuisine"?',
    ],
    [
      'a locale of a loader',
      {
        ...defaultLoaders,
        chefs: defaultLoaders.chefs!.replace('{ contentType:', "{ locales: ['en_GB', 'fr_FF'], contentType:"),
      },
      "contentTypes: { recipe: 'recipes',",
      'Invalid option locales of comfortableLoader() for the collection "chefs" in src/content.config.ts: the repository has no locale "fr_FF" (en_GB, fr_FR, it_IT, it_CH): did you mean "fr_FR"?',
    ],
    [
      'a content type of contentTypes',
      defaultLoaders,
      "contentTypes: { recipes: 'recipes',",
      'Invalid option comfortable.contentTypes.recipes: the synced content has no content type "recipes" (chef, cuisine, page, recipe): did you mean "recipe"?',
    ],
    [
      'a collection of contentTypes',
      defaultLoaders,
      "contentTypes: { recipe: 'recipe',",
      'Invalid option comfortable.contentTypes.recipe: "recipe" is no collection of src/content.config.ts that a comfortableLoader() fills (recipes, chefs, cuisines, pages): did you mean "recipes"?',
    ],
    [
      'an Astro locale of astroLocales',
      defaultLoaders,
      "astroLocales: { it_CH: 'it-CHH' }, contentTypes: { recipe: 'recipes',",
      'Invalid option astroLocales.it_CH of comfortable(): "it-CHH" is not a locale of i18n.locales in astro.config (en, fr, it, it-CH): did you mean "it-CH"?',
    ],
  ];

  it.each(valueCases)(
    'a misspelt value fails with the nearest name: %s',
    async (_, loaders, replacement, message) => {
      await site.loaders(loaders);
      await writeFile(
        join(site.dir, 'astro.config.mjs'),
        astroConfig.replace("contentTypes: { recipe: 'recipes',", replacement),
      );
      try {
        const { code, output } = await site.astro(kitchen.server);
        expect(code, output).not.toBe(0);
        expect(output).toContain(message);
      } finally {
        await writeFile(join(site.dir, 'astro.config.mjs'), astroConfig);
      }
    },
    120_000,
  );

  it('a content type no synced document has, and none is near, is said once and builds: it may have none yet', async () => {
    await site.loaders({ ...defaultLoaders, cuisines: "{ contentType: 'ingredient' }" });
    await writeFile(
      join(site.dir, 'astro.config.mjs'),
      astroConfig.replace("contentTypes: { recipe: 'recipes',", "contentTypes: { tool: 'cuisines', recipe: 'recipes',"),
    );
    try {
      const { code, output } = await site.astro(kitchen.server);
      expect(code, output).toBe(0);
      const said = (text: string) => output.split('\n').filter((line) => line.includes(text));
      expect(said('no synced document has the content type "ingredient"')).toEqual([
        expect.stringContaining(
          '[comfortable:query:type:ingredient] The collection "cuisines" is empty: no synced document has the content type "ingredient", which its comfortableLoader() loads. If that type has no document yet, it fills once one is published; else check the contentType option in src/content.config.ts (the types synced: chef, cuisine, page, recipe)',
        ),
      ]);
      expect(said('maps the content type "tool"')).toEqual([
        expect.stringContaining(
          'The contentTypes option of comfortable() maps the content type "tool", which no synced document has. If that type has no document yet, that is right; else check its API id (the types synced: chef, cuisine, page, recipe)',
        ),
      ]);
    } finally {
      await writeFile(join(site.dir, 'astro.config.mjs'), astroConfig);
    }
  }, 120_000);

  it('builds again once the options are right', async () => {
    await site.loaders(defaultLoaders);
    const { code, output } = await site.astro(kitchen.server);
    expect(code, output).toBe(0);
  }, 120_000);
});

describe('a CMS error names the setting to fix, in one sentence each', () => {
  const cases: [string, (base: string) => Record<string, string>, RegExp][] = [
    [
      'a base URL without its version',
      (base) => ({ CMFT_BASE_URL: base.replace(/\/v1$/, '') }),
      /GET http:\/\/127\.0\.0\.1:\d+\/kitchen answered 404[\s\S]*Hint:\s+Check the baseUrl option of comfortable\(\) \(http:\/\/127\.0\.0\.1:\d+, CMFT_BASE_URL by default\): the Read API's base URL ends in its version/,
    ],
    [
      'a wrong key',
      () => ({ CMFT_API_KEY: 'not-a-key-of-kitchen' }),
      /Hint:\s+The Read API at \S+ refused the API key\. Check the apiKey option of comfortable\(\)/,
    ],
    [
      'a wrong repository',
      () => ({ CMFT_REPOSITORY: 'kitchn' }),
      /Hint:\s+Check the repository option of comfortable\(\) \("kitchn"\)/,
    ],
    [
      'the CMS down in CI',
      () => ({ CMFT_BASE_URL: 'http://127.0.0.1:9/v1', CI: 'true' }),
      /could not be reached\.[^\n]*with onError: 'use-cache' in comfortable\(\) it builds from the content of the last sync/,
    ],
  ];

  it.each(cases)(
    '%s',
    async (_, env, hint) => {
      await site.loaders(defaultLoaders);
      const { code, output } = await site.astro(kitchen.server, ['build'], env(kitchen.server.url));
      expect(code, output).not.toBe(0);
      expect(output).toMatch(hint);
      expect(output).not.toMatch(/\.\.(\s|$)/);
      expect(output).not.toContain('//kitchen');
    },
    120_000,
  );
});

describe('a build that fails on its options leaves the last good content as it was', () => {
  it('syncs nothing, so the next build with the CMS down still has every source', async () => {
    await site.loaders(defaultLoaders);
    const good = await site.astro(kitchen.server);
    expect(good.code, good.output).toBe(0);
    await site.loaders(recipes((o) => o.replace('includes: 1', 'include: 2')));
    const failed = await site.astro(kitchen.server);
    expect(failed.code, failed.output).not.toBe(0);
    expect(failed.output).not.toMatch(/Synced kitchen|no longer names/);
    await site.loaders(defaultLoaders);
    const { url } = kitchen.server;
    await kitchen.server.close();
    const { code, output } = await site.astro({ url } as typeof kitchen.server);
    expect(code, output).toBe(0);
    expect(output).toMatch(/using the cached content of \S+, stale: /);
    expect(output).toMatch(/\[comfortable:collection:recipes\] 6 documents × 4 locales/);
  }, 180_000);
});
