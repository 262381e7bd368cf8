import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AstroDev } from './helpers/astro.ts';
import { kitchenKey } from './helpers/kitchen.ts';
import { kitchenDev } from './helpers/kitchen-site.ts';
import { askToolbar, pageQuery as queryOf } from './helpers/toolbar.ts';

/**
 * The dev toolbar app "Comfortable" in `astro dev` on the kitchen site (Astro i18n, four locales,
 * it_CH falling back to it_IT then en_GB): what its server side answers over Vite's HMR socket,
 * as the app asks it, and the app itself in Chromium.
 */

let dev: AstroDev;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ dev, stop } = await kitchenDev('dev-toolbar'));
}, 120_000);

afterAll(async () => stop?.());

const ask = (event: 'comfortable:page' | 'comfortable:sync', query: unknown) => askToolbar(dev, event, query);
const pageQuery = (path: string) => queryOf(dev, path);

describe("the toolbar app's answers", () => {
  it('a recipe page: the recipe by its slug in the path, first; its chef by the name in the text', async () => {
    const report = await ask('comfortable:page', await pageQuery('/en/recipes/smoky-pozole/'));
    expect(report.locale).toBe('en_GB');
    expect(report.error).toBeUndefined();
    expect(report.syncedAt).toMatch(/^\d{4}-/);
    const [first] = report.documents;
    expect(first).toMatchObject({ collection: 'recipes', locale: 'en_GB', astroLocale: 'en', by: 'path' });
    expect(first!.title).toBe('Smoky pozole');
    expect(first!.revision).toBeGreaterThan(0);
    expect(Date.parse(first!.updatedAt)).not.toBeNaN();
    expect(report.documents.some((d) => d.collection === 'chefs' && d.by === 'text')).toBe(true);
    expect(report.documents.filter((d) => d.by === 'path')).toHaveLength(1);
  }, 60_000);

  it('a Swiss page: the locale from its lang, the fields that fell back and where from', async () => {
    const polenta = await ask('comfortable:page', await pageQuery('/it-ch/recipes/polenta/'));
    expect(polenta.locale).toBe('it_CH');
    expect(polenta.documents[0]).toMatchObject({ astroLocale: 'it-CH', fallbacks: { title: 'it_IT' } });
    const tatin = await ask('comfortable:page', await pageQuery('/it-ch/recipes/tarte-tatin/'));
    expect(tatin.documents[0]).toMatchObject({ fallbacks: { title: 'en_GB' } });
  }, 60_000);

  it('a page that shows no document says so; a malformed ask gets no answer and breaks nothing', async () => {
    const none = await ask('comfortable:page', { path: '/en/nowhere/', lang: 'en-GB', text: 'nothing here' });
    expect(none.documents).toEqual([]);
    await expect(
      Promise.race([
        ask('comfortable:page', { path: 3 }),
        new Promise((resolve) => setTimeout(() => resolve('silent'), 1_500)),
      ]),
    ).resolves.toBe('silent');
    expect(
      (await ask('comfortable:page', await pageQuery('/en/recipes/smoky-pozole/'))).documents.length,
    ).toBeGreaterThan(0);
  }, 60_000);

  it('"sync now" syncs, then answers with the time of that sync', async () => {
    const query = await pageQuery('/en/recipes/smoky-pozole/');
    const before = (await ask('comfortable:page', query)).syncedAt!;
    const mark = dev.output().length;
    const after = await ask('comfortable:sync', query);
    expect(after.error).toBeUndefined();
    expect(Date.parse(after.syncedAt!)).toBeGreaterThan(Date.parse(before));
    expect(dev.output().slice(mark)).toMatch(/Refreshed(: nothing changed| \S+ \(\d+ changed sources?\))/);
    expect(dev.output()).not.toContain(kitchenKey);
  }, 60_000);
});

const chromiumPath = '/usr/bin/chromium';
describe.skipIf(!existsSync(chromiumPath))('the app in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    const args = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-sync'];
    browser = await chromium.launch({ executablePath: chromiumPath, args });
  }, 60_000);
  afterAll(async () => browser?.close());

  it("lists the page's documents when opened, as text; sync now reloads the page and opens it again", async () => {
    const page = await browser.newPage();
    await page.goto(`${dev.url}/it-ch/recipes/polenta/`);
    await page.locator('astro-dev-toolbar [data-app-id="comfortable"]').first().click();
    const panel = page.locator('astro-dev-toolbar-app-canvas[data-app-id="comfortable"] [data-comfortable]');
    await expect
      .poll(() => panel.locator('[data-summary]').textContent(), { timeout: 30_000 })
      .toMatch(/documents on this page, in it_CH/);
    const row = panel.locator('tr[data-document]').first();
    expect(await row.textContent()).toContain('it_CH (it-CH)');
    expect(await row.textContent()).toContain('title ← it_IT');
    // Sync now reloads the page (a refresh reloads it, changed or not), and the app opens again.
    const reloaded = page.waitForEvent('load', { timeout: 30_000 });
    await panel.locator('[data-sync]').click();
    await reloaded;
    await expect
      .poll(() => panel.locator('[data-summary]').textContent(), { timeout: 30_000 })
      .toMatch(/documents on this page, in it_CH/);
    expect(await panel.locator('[data-sync]').textContent()).toBe('Sync now');
    expect(await panel.locator('.error').count()).toBe(0);
  }, 120_000);
});
