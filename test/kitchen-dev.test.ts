import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AstroDev } from './helpers/astro.ts';
import { defaultLoaders, type KitchenSite, kitchenDev } from './helpers/kitchen-site.ts';

/**
 * `astro dev` through the edits a site builder makes to the content config while it runs: each
 * edit makes Astro evaluate the config again and sync; the loaders of the old config, and the
 * sources only they named, must not outlive it, and references must follow the new ids.
 */

let site: KitchenSite;
let dev: AstroDev;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ site, dev, stop } = await kitchenDev('kitchen-dev'));
}, 120_000);

afterAll(async () => stop?.());

// What astro dev printed, when a test fails: the sync the page saw is the first thing to know.
afterEach(({ task }) => {
  if (task.result?.state === 'fail') console.log(`astro dev output:\n${dev.output()}`);
});

const page = async (path: string) => {
  const response = await fetch(`${dev.url}${path}`);
  // Without the source locations astro dev adds to every element.
  return { status: response.status, html: (await response.text()).replace(/ data-astro-source-[a-z]+="[^"]*"/g, '') };
};

/** Edits the content config and waits until Astro has synced it (or failed to). */
async function edit(loaders: Record<string, string>, order?: string[]): Promise<string> {
  const mark = dev.output().length;
  await site.loaders(loaders, order);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const since = dev.output().slice(mark);
    if (/Synced content|Error|error/.test(since)) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return dev.output().slice(mark);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no sync after the edit:\n${dev.output().slice(mark)}`);
}

type Page = Awaited<ReturnType<typeof page>>;

/**
 * The page at `path` once `ready` holds of it, asked every 200 ms for at most 20 s: Astro may sync
 * an edited config more than once (its watcher can see one write as two changes), and a page asked
 * between two syncs sees a store that is being filled again.
 */
async function pageWhen(path: string, ready: (seen: Page) => boolean): Promise<Page> {
  const deadline = Date.now() + 20_000;
  let seen = await page(path);
  while (!ready(seen) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    seen = await page(path);
  }
  return seen;
}

describe('astro dev through content config edits', () => {
  it('serves the pages with references into collections with custom ids', async () => {
    expect((await page('/en/home/')).html).toContain('<a href="/en/recipes/smoky-pozole/">Smoky pozole</a>');
  }, 60_000);

  it('a new entryId of the referenced collection, in another order: references take the new ids', async () => {
    const recipes = defaultLoaders
      .recipes!.replace('({ astroLocale, fields })', '({ id, astroLocale, fields })')
      .replace('`${lang(astroLocale)}/${fields.slug}`', '`${lang(astroLocale)}/${id.slice(-3)}-${fields.slug}`');
    const mark = dev.output().length;
    await edit({ ...defaultLoaders, recipes }, ['pages', 'recipes', 'cuisines', 'chefs']);
    const link = '<a href="/fr/recipes/smoky-pozole/">Pozole fumé</a>';
    expect((await pageWhen('/fr/home/', (seen) => seen.html.includes(link))).html).toContain(link);
    expect(dev.output().slice(mark)).not.toContain('Invalid content reference');
    expect((await pageWhen('/it/recipes/polenta/', (seen) => seen.status === 200)).status).toBe(200);
  }, 90_000);

  it('a loader removed: its source is no longer synced, the others keep theirs', async () => {
    const { cuisines: _, ...rest } = defaultLoaders;
    const output = await edit(rest);
    expect(output).not.toMatch(/\[comfortable:query:type:cuisine\]/);
    expect(output).toMatch(/Synced kitchen: \d+ records/);
    expect((await pageWhen('/en/recipes/green-mole/', (seen) => seen.status === 200)).status).toBe(200);
  }, 90_000);

  it('a wrong collection id fails the sync with its hint, and the fix recovers without a restart', async () => {
    const failed = await edit({
      ...defaultLoaders,
      recipes: defaultLoaders.recipes!.replace("collection: 'recipes'", "collection: 'recipe'"),
    });
    expect(failed).toMatch(
      /\[ERROR\] \[comfortable:collection:recipe\] GET \S+\/collections\/recipe\S* answered 404: No collection "recipe" in repository "kitchen"[^\n]*\n\s+Hint: The repository "kitchen" has no collection "recipe"\. Check the collection API id in src\/content\.config\.ts/,
    );
    const fixed = await edit(defaultLoaders);
    expect(fixed).not.toMatch(/collections\/recipe\b/);
    const link = '<a href="/en/recipes/smoky-pozole/">Smoky pozole</a>';
    expect((await pageWhen('/en/home/', (seen) => seen.html.includes(link))).html).toContain(link);
  }, 120_000);
});
