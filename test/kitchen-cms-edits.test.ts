import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { differences, tree } from './helpers/dist.ts';
import { kitchen, kitchenId } from './helpers/kitchen.ts';
import {
  defaultLoaders,
  type KitchenServer,
  type KitchenSite,
  kitchenSite,
  startKitchen,
} from './helpers/kitchen-site.ts';

/**
 * What an editor does in the CMS between two builds of the kitchen site, which no developer
 * follows with an edit of the site. A locale added: the repository gains de_DE (falling back to
 * en_GB) and de_CH (falling back to de_DE), with a German title for the pozole; the site's i18n
 * has de-CH (with nothing to show before) and no de. The next build exits 0: de_CH's entries are
 * made, de_DE is left out with one warning, and the build equals a clean build of the same state.
 * A document edited: the warnings of a build that makes only its entries again count the whole
 * site.
 */

let kitchenServer: KitchenServer;
let kept: KitchenSite;
let clean: KitchenSite;
/** One alias alone, in one locale: its count line speaks of one document in one locale. */
const loaders = { ...defaultLoaders, about: "{ alias: 'about', locales: ['en_GB'] }" };

beforeAll(async () => {
  kitchenServer = await startKitchen();
  [kept, clean] = await Promise.all([kitchenSite('kitchen-cms-kept'), kitchenSite('kitchen-cms-clean')]);
  for (const site of [kept, clean]) {
    await site.loaders(loaders);
    const config = join(site.dir, 'astro.config.mjs');
    const text = await readFile(config, 'utf8');
    await writeFile(
      config,
      text.replace("{ path: 'it-ch', codes: ['it-CH'] }", "$&, { path: 'de-ch', codes: ['de-CH'] }"),
    );
  }
}, 60_000);

afterAll(async () => {
  await Promise.all([kept?.remove(), clean?.remove()]);
  await kitchenServer?.close();
});

/** The kitchen with German in the CMS, and the pozole edited `edits` times more (its title in French). */
function german(edits = 0) {
  const snapshot = kitchen();
  snapshot.repository.locales.push({ key: 'de_DE', fallback: 'en_GB' }, { key: 'de_CH', fallback: 'de_DE' });
  const pozole = snapshot.documents.find((document) => document.meta.id === kitchenId(301))!;
  const title = (pozole.fields as { title: Record<string, string> }).title;
  title.de_DE = 'Rauchiges Pozole';
  if (edits > 0) title.fr_FR = `Pozole fumé, version ${edits}`;
  pozole.meta.updatedAt = new Date(Date.UTC(2030, 0, 1, 0, 0, edits)).toISOString();
  pozole.meta.revision += 1 + edits;
  return snapshot;
}

/** Lines of a build's output that contain `text`. */
const lines = (output: string, text: string) => output.split('\n').filter((line) => line.includes(text));
const leftOut = "The repository's locale";

/** The kept site built incrementally and the clean one from nothing; their dist/ trees must be the same. */
async function buildBoth(): Promise<{ output: string; dist: Map<string, Buffer> }> {
  await Promise.all(
    ['dist', 'node_modules', '.astro'].map((folder) => rm(join(clean.dir, folder), { recursive: true, force: true })),
  );
  const incremental = await kept.astro(kitchenServer.server);
  expect(incremental.code, incremental.output).toBe(0);
  const fresh = await clean.astro(kitchenServer.server);
  expect(fresh.code, fresh.output).toBe(0);
  const dist = await tree(kept.dir);
  expect(differences(dist, await tree(clean.dir))).toEqual([]);
  return { output: incremental.output, dist };
}

describe('a locale added in the CMS between two builds', () => {
  it('the first build, before the CMS has German', async () => {
    const { code, output } = await kept.astro(kitchenServer.server);
    expect(code, output).toBe(0);
    expect(lines(output, leftOut)).toEqual([]);
    expect(output).toContain('[comfortable:alias:about] 1 document × 1 locale: 1 added, 0 updated, 0 removed');
  }, 180_000);

  it('builds: the locale no Astro locale takes is left out with one warning, and dist/ is that of a clean build', async () => {
    await kitchenServer.server.replaceSnapshot(german());
    const { output, dist } = await buildBoth();
    expect(lines(output, leftOut)).toEqual([
      expect.stringContaining(
        `The repository's locale de_DE matches no locale of i18n.locales in astro.config (en, fr, it, it-CH, de-CH), so it is left out of every collection: add it there, map it with the astroLocales option of comfortable() (astroLocales: { de_DE: '…' }), or leave it out without this warning (astroLocales: { de_DE: false })`,
      ),
    ]);
    const html = (path: string) => dist.get(path)?.toString('utf8') ?? '';
    // de_CH's own pages, the pozole's title from de_DE: named for the note, with no page to link to.
    const pozole = html('de-ch/recipes/smoky-pozole/index.html');
    expect(pozole).toMatch(/<h1>Rauchiges Pozole<small class="fallback"> \(shown in Deutsch/);
    expect(pozole).not.toContain('class="original"');
    expect(html('de-ch/recipes/ratatouille/index.html')).toContain(
      '<a class="original" href="/en/recipes/ratatouille/"',
    );
    expect([...dist.keys()].some((path) => /^de(-de)?\//.test(path))).toBe(false);
    // Every alternate is a page of the site, and none is in German of Germany.
    for (const [path, bytes] of dist) {
      for (const [, lang, href] of bytes.toString('utf8').matchAll(/hreflang="([^"]+)" href="([^"]+)"/g)) {
        expect(dist.has(`${href!.slice(1)}index.html`), `${path}: ${href}`).toBe(true);
        expect(lang).not.toBe('de-DE');
      }
    }
    expect(pozole).toContain('hreflang="fr-FR"');
    const store = await kept.store();
    const swiss = [...store.get('recipes')!.values()].find(
      (entry) => entry.data.id === kitchenId(301) && entry.data.locale === 'de_CH',
    );
    expect([swiss?.data.fallbacks, swiss?.data.astroFallbacks]).toMatchObject([{ title: 'de_DE' }, { title: null }]);
    for (const entries of store.values())
      for (const entry of entries.values()) expect(entry.data.locale).not.toBe('de_DE');
  }, 360_000);

  it("fails when a loader's locales option names it: the site's own option asks for it", async () => {
    await kept.loaders({
      ...loaders,
      chefs: defaultLoaders.chefs!.replace('{ contentType:', "{ locales: ['en_GB', 'de_DE'], contentType:"),
    });
    try {
      const { code, output } = await kept.astro(kitchenServer.server);
      expect(code, output).not.toBe(0);
      expect(output).toContain(
        `The locale de_DE, which the locales option of the collection "chefs" names, matches no locale of i18n.locales in astro.config (en, fr, it, it-CH, de-CH): add it there, map it with the astroLocales option of comfortable() (astroLocales: { de_DE: '…' }), or take it out of that locales option`,
      );
    } finally {
      await kept.loaders(loaders);
    }
  }, 180_000);
});

describe('a document edited in the CMS', () => {
  it('the warnings of a build that makes only its entries again count every reference of the collection', async () => {
    await kitchenServer.server.replaceSnapshot(german(1));
    const { output } = await buildBoth();
    // The pozole, and the recipes whose pages show it, are made again: not all six.
    const [, updated] = /\[comfortable:collection:recipes\] 6 documents × 5 locales: 0 added, (\d+) updated/.exec(
      output,
    )!;
    expect(Number(updated)).toBeGreaterThan(0);
    expect(Number(updated)).toBeLessThan(30);
    expect(lines(output, 'stay { collection: null, id, contentType }')).toEqual([
      expect.stringContaining(
        '[comfortable:collection:recipes] 6 references stay { collection: null, id, contentType }: no collection holds the content type "cuisine"',
      ),
    ]);
    expect(lines(output, leftOut)).toHaveLength(1);
  }, 360_000);
});
