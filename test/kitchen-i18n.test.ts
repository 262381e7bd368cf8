import { access, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KitchenServer, type KitchenSite, kitchenSite, startKitchen } from './helpers/kitchen-site.ts';

/**
 * Astro's i18n config, understood, on the kitchen site (en_GB the default, fr_FR, it_IT, and
 * it_CH falling back to it_IT then en_GB; Astro locales `en`, `fr`, `it` and
 * `{ path: 'it-ch', codes: ['it-CH'] }`), which has no locale map of its own: its pages take
 * `data.astroLocale` and `data.lang` from the entries, Astro's `getRelativeLocaleUrl` for URLs,
 * and `alternates()` for `hreflang` links. Built with `prefixDefaultLocale` true and false: pages
 * at Astro's paths, `lang` attributes, fallback notes, and alternates that all resolve in
 * `dist/`; `astro check` finds nothing; a CMS locale with no Astro locale is left out with a
 * warning naming it, and `astroLocales` leaves it out quietly.
 */

let kitchen: KitchenServer;
let site: KitchenSite;

beforeAll(async () => {
  kitchen = await startKitchen();
  site = await kitchenSite('kitchen-i18n');
}, 60_000);

afterAll(async () => {
  await site?.remove();
  await kitchen?.close();
});

const configFile = () => join(site.dir, 'astro.config.mjs');
async function editConfig(edit: (text: string) => string): Promise<void> {
  await writeFile(configFile(), edit(await readFile(configFile(), 'utf8')));
}

/** Every HTML page of dist/, by its path relative to dist/. */
async function pages(): Promise<Map<string, string>> {
  const dist = join(site.dir, 'dist');
  const found = new Map<string, string>();
  for (const entry of await readdir(dist, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.html')) continue;
    const path = join(entry.parentPath, entry.name);
    found.set(path.slice(dist.length + 1), await readFile(path, 'utf8'));
  }
  return found;
}

/** Whether a site-relative URL is a page of dist/. */
const resolves = async (href: string) =>
  access(join(site.dir, 'dist', href, 'index.html')).then(
    () => true,
    () => false,
  );

/** The checks both routings share: lang attributes, fallback notes, alternates that resolve. */
async function checkSite(english: string): Promise<void> {
  const built = await pages();
  const recipe = (prefix: string) => built.get(`${prefix}recipes/saffron-risotto/index.html`);
  expect(recipe(english), 'the English recipe at its path').toContain('<html lang="en-GB">');
  expect(recipe('fr/')).toContain('<html lang="fr-FR">');
  expect(recipe('it/')).toContain('<html lang="it-IT">');
  expect(recipe('it-ch/')).toContain('<html lang="it-CH">');
  // it_CH falls back along its chain: to it_IT (polenta), then to en_GB (tarte tatin). The note
  // names the language from `fallbacks`, the link to the original takes `astroFallbacks`.
  const swiss = (slug: string) => built.get(`it-ch/recipes/${slug}/index.html`) ?? '';
  expect(swiss('polenta')).toMatch(/\(shown in italiano/);
  expect(swiss('polenta')).toContain('<a class="original" href="/it/recipes/polenta/"');
  expect(swiss('tarte-tatin')).toMatch(/\(shown in inglese/);
  expect(swiss('tarte-tatin')).toContain(`<a class="original" href="/${english}recipes/tarte-tatin/"`);
  expect(swiss('saffron-risotto')).not.toContain('shown in');
  let links = 0;
  for (const [path, html] of built) {
    for (const [, lang, href] of html.matchAll(/<link rel="alternate" hreflang="([^"]+)" href="([^"]+)"/g)) {
      links++;
      expect(await resolves(href!), `${path}: hreflang ${lang} → ${href}`).toBe(true);
      expect(lang).not.toContain('_');
    }
  }
  // Each of the recipes' pages links to its three other locales.
  const recipes = [...built.keys()].filter((path) => path.includes('recipes/'));
  expect(recipes.length).toBeGreaterThan(0);
  expect(links).toBe(recipes.length * 3);
  for (const [, href] of recipe(english)!.matchAll(/href="([^"]+)"/g)) {
    if (href!.startsWith('/') && !href!.startsWith('/_')) expect(await resolves(href!), href).toBe(true);
  }
}

describe("Astro's i18n routing, with no locale map of the site's own", () => {
  it('prefixDefaultLocale true: every locale under its path', async () => {
    await expect(access(join(site.dir, 'src/lib/locales.ts'))).rejects.toThrow();
    const { code, output } = await site.astro(kitchen.server);
    expect(code, output).toBe(0);
    await checkSite('en/');
    const store = await site.store();
    const datas = [...store.get('recipes')!.values()].map((entry) => entry.data);
    expect(new Set(datas.map((d) => `${d.locale} ${d.astroLocale} ${d.lang}`))).toEqual(
      new Set(['en_GB en en-GB', 'fr_FR fr fr-FR', 'it_IT it it-IT', 'it_CH it-CH it-CH']),
    );
    // fallbacks in either locale: the CMS's, and Astro's.
    const swiss = (slug: string) =>
      datas.find((d) => d.locale === 'it_CH' && (d.fields as { slug?: string }).slug === slug) ?? {};
    expect([swiss('polenta').fallbacks, swiss('polenta').astroFallbacks]).toMatchObject([
      { title: 'it_IT' },
      { title: 'it' },
    ]);
    expect([swiss('tarte-tatin').fallbacks, swiss('tarte-tatin').astroFallbacks]).toMatchObject([
      { title: 'en_GB' },
      { title: 'en' },
    ]);
  }, 180_000);

  it('astro check finds no error in pages that read astroLocale, lang and alternates', async () => {
    const { code, output } = await site.astro(kitchen.server, ['check']);
    expect(output).toMatch(/0 errors/);
    expect(code, output).toBe(0);
  }, 180_000);

  it("prefixDefaultLocale false, with Astro's fallback routing: the default locale at the root", async () => {
    await editConfig((text) =>
      text.replace(
        'routing: { prefixDefaultLocale: true }',
        "routing: { prefixDefaultLocale: false, fallbackType: 'rewrite' }, fallback: { 'it-ch': 'it', fr: 'en' }",
      ),
    );
    const { code, output } = await site.astro(kitchen.server);
    expect(code, output).toBe(0);
    expect((await pages()).has('en/recipes/saffron-risotto/index.html')).toBe(false);
    await checkSite('');
  }, 180_000);

  it('a CMS locale with no Astro locale is left out with a warning naming it; astroLocales leaves it out quietly', async () => {
    await editConfig((text) =>
      text.replace(", { path: 'it-ch', codes: ['it-CH'] }", '').replace("fallback: { 'it-ch': 'it', ", 'fallback: { '),
    );
    const left = await site.astro(kitchen.server);
    expect(left.code, left.output).toBe(0);
    // it_IT and it_CH both speak Italian; it_CH falls back to it_IT, so "it" is it_IT's.
    const warnings = left.output.split('\n').filter((line) => line.includes("The repository's locale"));
    expect(warnings).toEqual([
      expect.stringContaining(
        `The repository's locale it_CH matches no locale of i18n.locales in astro.config (en, fr, it): "it" is it_IT's, so it is left out of every collection: add it there, map it with the astroLocales option of comfortable() (astroLocales: { it_CH: '…' }), or leave it out without this warning (astroLocales: { it_CH: false })`,
      ),
    ]);
    const built = await pages();
    expect(built.has('it/recipes/saffron-risotto/index.html')).toBe(true);
    expect([...built.keys()].some((path) => path.startsWith('it-ch/'))).toBe(false);
    for (const html of built.values()) expect(html).not.toContain('hreflang="it-CH"');

    await editConfig((text) => text.replace('comfortable({', 'comfortable({ astroLocales: { it_CH: false },'));
    const quiet = await site.astro(kitchen.server);
    expect(quiet.code, quiet.output).toBe(0);
    expect(quiet.output).not.toContain("The repository's locale");
    expect(await pages()).toEqual(built);
  }, 360_000);
});
