import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AstroDev } from './helpers/astro.ts';
import { kitchenKey } from './helpers/kitchen.ts';
import { devPages, pozoleEditor } from './helpers/kitchen-dev.ts';
import {
  contentConfig,
  defaultLoaders,
  type KitchenServer,
  type KitchenSite,
  kitchenDev,
} from './helpers/kitchen-site.ts';
import { askToolbar, pageQuery } from './helpers/toolbar.ts';

/**
 * `astro dev` on the kitchen site (i18n, custom ids, references between four collections) through
 * the saves a site builder makes while it runs. Astro evaluates the content config again at each
 * save of a `.json` or `.md` file anywhere in the project, and syncs only when the config's text
 * changed; none of it may stop dev following the CMS. After each save, an edit in the CMS shows
 * within one poll period, with the recipe's link to its chef, the chef's list of recipes and the
 * home page's recipes intact.
 */

const poll = 2_000;
/** One poll period, and the time a poll's sync and Astro's refresh take on a busy machine. */
const within = poll + 8_000;

let kitchen: KitchenServer;
let site: KitchenSite;
let dev: AstroDev;
let stop: (() => Promise<void>) | undefined;

/** The content config with `lang` from a module it imports, so that a test can edit that module. */
const configWithModule = () =>
  contentConfig(defaultLoaders).replace(
    "const lang = (astroLocale = '') => astroLocale.toLowerCase();",
    "import { lang } from './content/ids';",
  );
const idsModule = (comment: string) =>
  `// ${comment}\nexport const lang = (astroLocale = ''): string => astroLocale.toLowerCase();\n`;

beforeAll(async () => {
  ({ kitchen, site, dev, stop } = await kitchenDev('kitchen-saves', {
    env: { CMFT_POLL_INTERVAL: String(poll) },
    prepare: async (prepared) => {
      await save('src/content/ids.ts', idsModule('ids by the Astro locale'), prepared.dir);
      await save('src/content.config.ts', configWithModule(), prepared.dir);
    },
  }));
}, 120_000);

afterAll(async () => stop?.());

afterEach(({ task }) => {
  if (task.result?.state === 'fail') console.log(`astro dev output:\n${dev.output()}`);
});

async function save(path: string, text: string, root = site.dir): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const pages = () => devPages(dev);
const nextEdit = pozoleEditor();
/** Publishes a new English title of the smoky pozole in the CMS; returns it. */
async function editTitle(): Promise<string> {
  const { snapshot, title } = nextEdit();
  await kitchen.server.replaceSnapshot(snapshot);
  return title;
}

/** An edit in the CMS shows within one poll period, on the recipe's page and on the pages that reference it. */
async function followsTheCms(): Promise<void> {
  const mark = dev.output().length;
  const title = await editTitle();
  expect(await pages().pageWith('/en/recipes/smoky-pozole/', `<h1>${title}`, within)).toContain(`<h1>${title}`);
  await pages().expectReferencesIntact(title);
  const printed = dev.output().slice(mark);
  expect(printed).not.toMatch(/Invalid content reference|no collection loaded it|which no comfortableLoader\(\) fills/);
  expect(printed).not.toContain(kitchenKey);
}

describe('astro dev follows the CMS through the saves of a site builder', () => {
  it('before any save', async () => {
    await followsTheCms();
  }, 60_000);

  it('a translation file created and saved once', async () => {
    await save('src/i18n/labels.json', '{ "by": "By" }\n');
    await wait(1_000);
    await followsTheCms();
  }, 60_000);

  it('the translation file saved three times', async () => {
    for (const word of ['Written by', 'From', 'By']) {
      await save('src/i18n/labels.json', `{ "by": "${word}" }\n`);
      await wait(400);
    }
    await wait(1_000);
    await followsTheCms();
  }, 60_000);

  it('the toolbar app opened right after an edit: the edit still shows', async () => {
    const title = await editTitle();
    const report = await askToolbar(dev, 'comfortable:page', await pageQuery(dev, '/en/chefs/ana-ruiz/'));
    expect(report.error).toBeUndefined();
    expect(await pages().pageWith('/en/recipes/smoky-pozole/', `<h1>${title}`, within)).toContain(`<h1>${title}`);
    await pages().expectReferencesIntact(title);
  }, 60_000);

  it('a Markdown page created, then saved', async () => {
    await save('src/pages/notes.md', '---\ntitle: Notes\n---\n\n# Notes\n');
    await wait(1_000);
    await save('src/pages/notes.md', '---\ntitle: Notes\n---\n\n# Kitchen notes\n');
    await wait(1_000);
    await followsTheCms();
  }, 60_000);

  it('the content config edited (Astro syncs it)', async () => {
    const mark = dev.output().length;
    await save('src/content.config.ts', `${configWithModule()}// edited while dev runs\n`);
    const deadline = Date.now() + 60_000;
    while (!/Synced content/.test(dev.output().slice(mark)) && Date.now() < deadline) await wait(200);
    await wait(1_000);
    await followsTheCms();
  }, 120_000);

  it('a module the content config imports edited', async () => {
    await save('src/content/ids.ts', idsModule('ids by the Astro locale, in lower case'));
    await wait(1_000);
    await followsTheCms();
  }, 60_000);

  it('"sync now" pressed before the poll sees an edit: the page shows it at once', async () => {
    const title = await editTitle();
    const report = await askToolbar(dev, 'comfortable:sync', await pageQuery(dev, '/en/recipes/smoky-pozole/'));
    expect(report.error).toBeUndefined();
    expect(report.documents.some((d) => d.collection === 'recipes' && d.title === title)).toBe(true);
    expect((await pages().page('/en/recipes/smoky-pozole/')).html).toContain(`<h1>${title}`);
    await pages().expectReferencesIntact(title);
    // And dev goes on following.
    await followsTheCms();
  }, 60_000);
});
