import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kitchen as kitchenSnapshot, kitchenId } from './helpers/kitchen.ts';
import {
  defaultLoaders,
  type KitchenServer,
  type KitchenSite,
  kitchenSite,
  startKitchen,
} from './helpers/kitchen-site.ts';

/**
 * An alias re-pointed in the CMS between two builds, Astro's store kept: the entries of the
 * document it left lose it from `data.aliases`, those of the document it came to gain it, in
 * every collection that holds them (not only the one the alias loads).
 */

let kitchen: KitchenServer;
let site: KitchenSite;

beforeAll(async () => {
  kitchen = await startKitchen();
  site = await kitchenSite('kitchen-aliases');
  await site.loaders(defaultLoaders);
}, 60_000);

afterAll(async () => {
  await site?.remove();
  await kitchen?.close();
});

/** Re-points the `about` alias to a document, as an editor does in the CMS. */
async function pointAbout(id: string): Promise<void> {
  const snapshot = kitchenSnapshot();
  snapshot.aliases = snapshot.aliases.map((alias) => (alias.apiId === 'about' ? { ...alias, document: id } : alias));
  await kitchen.server.replaceSnapshot(snapshot);
}

/** The aliases of the English entry of a recipe, by its slug. */
async function aliasesOf(slug: string): Promise<unknown> {
  const recipes = (await site.store()).get('recipes')!;
  return (recipes.get(`en/${slug}`)!.data as { aliases: string[] }).aliases;
}

describe('an alias re-pointed between two builds', () => {
  it('moves from the entries of the document it left to those of the one it came to', async () => {
    await pointAbout(kitchenId(301));
    const first = await site.astro(kitchen.server);
    expect(first.code, first.output).toBe(0);
    expect(await aliasesOf('smoky-pozole')).toEqual(['about']);
    expect(await aliasesOf('saffron-risotto')).toEqual([]);

    await pointAbout(kitchenId(302));
    const second = await site.astro(kitchen.server);
    expect(second.code, second.output).toBe(0);
    expect(await aliasesOf('smoky-pozole')).toEqual([]);
    expect(await aliasesOf('saffron-risotto')).toEqual(['about']);
  }, 180_000);
});
