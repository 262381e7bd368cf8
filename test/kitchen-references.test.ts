import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Random } from './helpers/random.ts';
import {
  defaultLoaders,
  type KitchenServer,
  type KitchenSite,
  kitchenSite,
  startKitchen,
} from './helpers/kitchen-site.ts';

/**
 * A reference into a collection takes that collection's entry ids, whatever the source of its
 * loader and whatever order Astro runs the loaders in. Astro loads collections at once, and one
 * with a schema of its own before one whose schema is made from the content, so the order the
 * loaders learn their collections in varies from sync to sync. Twenty syncs of the kitchen site
 * (custom ids on a collection loader, a content-type loader and an aliases loader), each after
 * an edit of the content config that shuffles its loaders and the schemas, give the same ids.
 */

let kitchen: KitchenServer;
let site: KitchenSite;

beforeAll(async () => {
  kitchen = await startKitchen();
  site = await kitchenSite('kitchen-references');
}, 60_000);

afterAll(async () => {
  await site?.remove();
  await kitchen?.close();
});

type Data = Record<string, unknown>;
const isReference = (value: unknown): value is { collection: string | null; id: string } =>
  typeof value === 'object' &&
  value !== null &&
  'collection' in value &&
  'id' in value &&
  Object.keys(value).every((key) => ['collection', 'id', 'contentType'].includes(key));

/** Every entry id of every collection, and every reference in the entries' fields, as sorted lines. */
async function idsAndReferences(): Promise<{ ids: string[]; references: string[] }> {
  const ids: string[] = [];
  const references: string[] = [];
  const walk = (from: string, value: unknown, path: string): void => {
    if (isReference(value)) references.push(`${from} ${path} → ${value.collection}:${value.id}`);
    else if (Array.isArray(value))
      value.forEach((item, i) => {
        walk(from, item, `${path}[${i}]`);
      });
    else if (typeof value === 'object' && value !== null)
      for (const [key, item] of Object.entries(value)) walk(from, item, `${path}.${key}`);
  };
  for (const [collection, entries] of await site.store()) {
    for (const [id, entry] of entries) {
      ids.push(`${collection}:${id}`);
      walk(`${collection}:${id}`, (entry.data as Data).fields, 'fields');
    }
  }
  return { ids: ids.sort(), references: references.sort() };
}

describe('references into collections with custom entry ids', () => {
  it('are the same in twenty syncs, whatever order Astro loads the collections in, and none dangles', async () => {
    const random = new Random(29);
    let first: { ids: string[]; references: string[] } | undefined;
    let last = '';
    for (let sync = 0; sync < 20; sync++) {
      const order = Object.keys(defaultLoaders).sort(() => random.next() - 0.5);
      const schemas = order.filter(() => random.chance(0.5));
      const edited = last !== '' && last !== `${order}|${schemas}`;
      last = `${order}|${schemas}`;
      await site.loaders(defaultLoaders, order, schemas);
      const { code, output } = await site.astro(kitchen.server, ['sync']);
      const what = `sync ${sync}, order ${order.join(', ')}, own schemas ${schemas.join(', ') || 'none'}:\n${output}`;
      expect(code, what).toBe(0);
      expect(output, what).not.toContain('Invalid content reference');
      if (edited) expect(output, what).toContain('Content config changed');
      const now = await idsAndReferences();
      if (first) expect(now, what).toEqual(first);
      first ??= now;
    }
    // As the content config says: recipes, chefs and pages by slug per language, cuisines by default.
    expect(first!.references).toContain('pages:en/home fields.pairsWith[0] → recipes:en/smoky-pozole');
    expect(first!.references).toContain('pages:it-ch/home fields.pairsWith[1] → recipes:it-ch/saffron-risotto');
    expect(first!.references).toContain('recipes:fr/green-mole fields.chef → chefs:fr/ana-ruiz');
    // contentTypes does not map cuisine: those relations stay unresolved, and say so.
    expect(first!.references).toContain('recipes:en/green-mole fields.cuisine → null:700000000000000601');
    expect(first!.ids.filter((id) => id.startsWith('cuisines:'))).toContain('cuisines:en_GB/700000000000000601');
  }, 600_000);
});
