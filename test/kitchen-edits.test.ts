import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { differences, tree } from './helpers/dist.ts';
import {
  defaultLoaders,
  type KitchenServer,
  type KitchenSite,
  kitchenSite,
  startKitchen,
} from './helpers/kitchen-site.ts';

/**
 * A page is rendered again when anything this package decides of what it shows changes, not only
 * the content: after each edit a site builder makes to the options (a content type mapped and
 * unmapped, `render` changed, `entryId` added and changed, `locales` narrowed, `includes`
 * changed), an incremental build of the kitchen site (Astro's incremental cache and dist/ kept)
 * gives the whole dist/ tree of a clean build, every file and its bytes.
 */

let kitchen: KitchenServer;
let kept: KitchenSite;
let clean: KitchenSite;
const loaders = { ...defaultLoaders };
const contentTypes: Record<string, string> = { recipe: 'recipes', chef: 'chefs', page: 'pages' };

beforeAll(async () => {
  kitchen = await startKitchen();
  [kept, clean] = await Promise.all([kitchenSite('kitchen-kept'), kitchenSite('kitchen-clean')]);
}, 60_000);

afterAll(async () => {
  await Promise.all([kept?.remove(), clean?.remove()]);
  await kitchen?.close();
});

/** The pages a build rendered and those it reused, from its log. */
function pages(output: string): { rendered: number; reused: number } {
  const lines = [...output.matchAll(/[├└]─ \/\S+\.html( \((?:cached|restored)\))?/g)];
  return { rendered: lines.filter((line) => !line[1]).length, reused: lines.filter((line) => line[1]).length };
}

/** Writes the options to both sites, builds the kept one incrementally and the clean one from nothing, and compares them. */
async function rebuild(): Promise<{ output: string; rendered: number; reused: number }> {
  for (const site of [kept, clean]) {
    await site.loaders(loaders);
    await site.contentTypes(contentTypes);
  }
  await Promise.all(
    ['dist', 'node_modules', '.astro'].map((folder) => rm(join(clean.dir, folder), { recursive: true, force: true })),
  );
  const incremental = await kept.astro(kitchen.server);
  expect(incremental.code, incremental.output).toBe(0);
  const fresh = await clean.astro(kitchen.server);
  expect(fresh.code, fresh.output).toBe(0);
  expect(differences(await tree(kept.dir), await tree(clean.dir))).toEqual([]);
  return { output: incremental.output, ...pages(incremental.output) };
}

const page = async (site: KitchenSite, path: string) => (await tree(site.dir)).get(path)?.toString('utf8') ?? '';

describe('an incremental build after an option edit equals a clean build', () => {
  it('the first build, then one with nothing changed, which reuses every page', async () => {
    await rebuild();
    const again = await rebuild();
    expect(again.rendered).toBe(1); // /index.html, which has no cacheKey
    expect(again.reused).toBeGreaterThan(40);
  }, 180_000);

  it('a content type mapped: recipe pages link their cuisine, the cuisine index lists them', async () => {
    contentTypes.cuisine = 'cuisines';
    const { rendered } = await rebuild();
    expect(rendered).toBeGreaterThan(40);
    expect(await page(kept, 'en/recipes/smoky-pozole/index.html')).toContain(
      '<p class="cuisine"><a href="/en/cuisines/">Mexican</a></p>',
    );
    expect(await page(kept, 'fr/cuisines/index.html')).toContain('Pozole fumé');
  }, 180_000);

  it('render changed to another richtext field', async () => {
    loaders.recipes = loaders.recipes!.replace('options: {', "render: 'notes', options: {");
    await rebuild();
    expect(await page(kept, 'en/recipes/smoky-pozole/index.html')).toContain('Keeps for two days.');
  }, 180_000);

  it('an entryId added to a content-type loader', async () => {
    loaders.cuisines =
      "{ contentType: 'cuisine', entryId: ({ astroLocale, fields }) => `${lang(astroLocale)}/${fields.slug}` }";
    await rebuild();
    expect(await page(kept, 'it/recipes/polenta/index.html')).toContain('Italiana');
  }, 180_000);

  it('an entryId changed on a collection loader that others refer to', async () => {
    loaders.recipes = loaders
      .recipes!.replace(
        '`${lang(astroLocale)}/${fields.slug}`',
        '`${lang(astroLocale)}/${id.slice(-3)}-${fields.slug}`',
      )
      .replace('({ astroLocale, fields })', '({ id, astroLocale, fields })');
    await rebuild();
    expect(await page(kept, 'en/home/index.html')).toContain('<a href="/en/recipes/smoky-pozole/">Smoky pozole</a>');
  }, 180_000);

  it('locales narrowed on a collection loader: its pages and the references into it go', async () => {
    loaders.recipes = loaders.recipes!.replace('{ collection:', "{ locales: ['en_GB', 'fr_FR', 'it_IT'], collection:");
    const { output } = await rebuild();
    expect(await page(kept, 'it-ch/recipes/polenta/index.html')).toBe('');
    expect(await page(kept, 'it-ch/home/index.html')).not.toContain('/recipes/');
    expect(output).toContain('has no entries in it_CH (the locales option of its comfortableLoader())');
  }, 180_000);

  it('includes changed on a loader', async () => {
    loaders.recipes = loaders.recipes!.replace('includes: 1', 'includes: 0');
    await rebuild();
  }, 180_000);

  it('a content type unmapped again', async () => {
    delete contentTypes.cuisine;
    await rebuild();
    expect(await page(kept, 'en/recipes/smoky-pozole/index.html')).not.toContain('class="cuisine"');
  }, 180_000);
});
