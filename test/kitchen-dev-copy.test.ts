import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AstroDev, freePort, startAstroDev } from './helpers/astro.ts';
import { writeKitchen } from './helpers/kitchen.ts';
import { devPages, pozoleEditor } from './helpers/kitchen-dev.ts';
import { defaultLoaders, type KitchenSite, kitchenSite } from './helpers/kitchen-site.ts';

/**
 * `astro dev` serving a copy that lives inside the project, where `pull` puts it
 * (`content/kitchen.json`, `CMFT_SNAPSHOT`): a save of the copy is also a save of a `.json` file
 * of the project, which makes Astro evaluate the content config again. Each edit of the copy shows
 * on the next page load, with every reference intact, the first edit as the third.
 */

let site: KitchenSite;
let dev: AstroDev;
let copy: string;
const nextEdit = pozoleEditor();

beforeAll(async () => {
  site = await kitchenSite('kitchen-copy');
  await site.loaders(defaultLoaders);
  copy = await writeKitchen(join(site.dir, 'content'));
  dev = await startAstroDev(site.dir, await freePort(), { CMFT_SNAPSHOT: 'content/kitchen.json' });
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  await site?.remove();
});

afterEach(({ task }) => {
  if (task.result?.state === 'fail') console.log(`astro dev output:\n${dev.output()}`);
});

describe('astro dev on a copy inside the project', () => {
  it.each([1, 2, 3])(
    'shows edit %i of the copy on the next page load, references intact',
    async () => {
      const pages = devPages(dev);
      const mark = dev.output().length;
      const { snapshot, title } = nextEdit();
      await writeFile(copy, `${JSON.stringify(snapshot, null, 2)}\n`);
      expect(await pages.pageWith('/en/recipes/smoky-pozole/', `<h1>${title}`, 15_000)).toContain(`<h1>${title}`);
      await pages.expectReferencesIntact(title);
      expect(dev.output().slice(mark)).not.toMatch(/Invalid content reference|which no comfortableLoader\(\) fills/);
    },
    60_000,
  );
});
