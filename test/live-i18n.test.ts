import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { type AstroDev, copyFixture, freePort, startAstroDev } from './helpers/astro.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';

/**
 * Live collections in a site with Astro's i18n (test/fixtures/astro-live-i18n, `astro dev`): the
 * repository's en_US, de_DE and de_CH map to the site's en, de and de-CH with no map written,
 * entries carry the Astro locale and lang, a page asks in `Astro.currentLocale`, and the
 * loader's `astroLocales` leaves a locale out or names a wrong map.
 */

let server: ReadApiServer;
let dev: AstroDev;
let site: { dir: string; remove(): Promise<void> };

beforeAll(async () => {
  server = await startServer({ paths: [demoSnapshot], watch: false });
  site = await copyFixture('astro-live-i18n', 'live-i18n');
  dev = await startAstroDev(site.dir, await freePort(), { CMFT_BASE_URL: server.url, CMFT_API_KEY: demoKey });
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  await server?.close();
  await site?.remove();
});

async function page(path: string): Promise<{ status: number; html: string }> {
  const response = await fetch(`${dev.url}${path}`);
  return { status: response.status, html: await response.text() };
}
const attr = (html: string, pattern: RegExp) => pattern.exec(html)?.[1]?.replaceAll('&quot;', '"');

describe('a live entry in the Astro locale of the page', () => {
  it.each([
    ['/en/posts/night-trains-are-back/', 'en_US', 'en', 'en-US'],
    ['/de/posts/night-trains-are-back/', 'de_DE', 'de', 'de-DE'],
    ['/de-ch/posts/night-trains-are-back/', 'de_CH', 'de-CH', 'de-CH'],
  ])('%s is the post in %s, Astro locale %s, lang %s', async (path, locale, astroLocale, lang) => {
    const { status, html } = await page(path);
    expect(status).toBe(200);
    expect(attr(html, /<article data-locale="([^"]*)"/)).toBe(locale);
    expect(attr(html, /data-astro-locale="([^"]*)" data-fallbacks/)).toBe(astroLocale);
    expect(attr(html, /<html lang="([^"]*)"/)).toBe(lang);
    // The included author carries its locales too; the list link is Astro's URL of the locale.
    expect(attr(html, /<p id="author" data-astro-locale="([^"]*)"/)).toBe(astroLocale);
    expect(attr(html, /<p id="author"[^>]* data-lang="([^"]*)"/)).toBe(lang);
    expect(attr(html, /<a id="list" href="([^"]*)"/)).toBe(`/${path.split('/')[1]}/posts/`);
  });

  it("says a fallback in Astro's locale: the Swiss title is the German one", async () => {
    const { html } = await page('/de-ch/posts/night-trains-are-back/');
    expect(JSON.parse(attr(html, /data-fallbacks="([^"]*)"/)!)).toMatchObject({ title: 'de' });
    const german = await page('/de/posts/night-trains-are-back/');
    expect(JSON.parse(attr(german.html, /data-fallbacks="([^"]*)"/)!)).toEqual({});
  });

  it('still takes a repository locale', async () => {
    const { status, html } = await page('/en/posts/night-trains-are-back/?locale=de_CH');
    expect(status).toBe(200);
    expect(attr(html, /<article data-locale="([^"]*)"/)).toBe('de_CH');
  });

  it('lists a collection in the Astro locale of the page', async () => {
    const { status, html } = await page('/de-ch/posts/');
    expect(status).toBe(200);
    const locales = [...html.matchAll(/<li data-locale="([^"]*)" data-astro-locale="([^"]*)"/g)];
    expect(locales.length).toBeGreaterThan(1);
    expect(new Set(locales.map((match) => `${match[1]} ${match[2]}`))).toEqual(new Set(['de_CH de-CH']));
  });
});

describe("the live loader's astroLocales option", () => {
  it('false leaves a locale out: its entries are not found, saying why; the others are', async () => {
    const swiss = await page('/de-ch/posts/night-trains-are-back/?from=noSwiss');
    expect(swiss.status).toBe(404);
    expect(swiss.html).toContain(
      'has no locale &quot;de-CH&quot;, nor does one map to that Astro locale (en_US → en, de_DE → de, de_CH → left out)',
    );
    const asCms = await page('/de-ch/posts/night-trains-are-back/?from=noSwiss&locale=de_CH');
    expect(asCms.status).toBe(404);
    expect(asCms.html).toContain('de_CH is left out by the astroLocales option of comfortableLiveLoader()');
    const german = await page('/de/posts/night-trains-are-back/?from=noSwiss');
    expect(german.status).toBe(200);
    expect(attr(german.html, /data-astro-locale="([^"]*)" data-fallbacks/)).toBe('de');
  });

  it('a map to a locale the site lacks is an error naming the option and the locales there are', async () => {
    const { status, html } = await page('/en/posts/night-trains-are-back/?from=wrongMap');
    expect(status).toBe(500);
    expect(html.replaceAll('&quot;', '"')).toContain(
      'Invalid option astroLocales.en_US of comfortableLiveLoader(): "fr" is not a locale of i18n.locales in astro.config (en, de, de-CH)',
    );
    expect(html).not.toContain(demoKey);
  });
});

describe('a locale added in the CMS that maps to no Astro locale', () => {
  it('is left out, said once on the console: the pages keep answering, and its entries are not found', async () => {
    const original = JSON.parse(await readFile(demoSnapshot, 'utf8'));
    const french = structuredClone(original);
    french.repository.locales.push({ key: 'fr_FR', fallback: 'en_US' });
    const post = french.documents.find(
      (document: { meta: { id: string } }) => document.meta.id === '100000000000000102',
    );
    post.fields.title.fr_FR = 'Les trains de nuit sont de retour';
    post.meta.updatedAt = '2030-01-01T00:00:00.000Z';
    await server.replaceSnapshot(french);
    try {
      const mark = dev.output().length;
      const english = await page('/en/posts/night-trains-are-back/?from=later');
      expect(english.status, english.html).toBe(200);
      expect(attr(english.html, /<article data-locale="([^"]*)"/)).toBe('en_US');
      const asked = await page('/en/posts/night-trains-are-back/?from=later&locale=fr_FR');
      expect(asked.status).toBe(404);
      expect(asked.html).toContain('fr_FR is left out: it maps to no locale of i18n.locales in astro.config');
      const told = dev
        .output()
        .slice(mark)
        .split('\n')
        .filter((line) => line.includes("The repository's locale fr_FR"));
      expect(told).toEqual([
        expect.stringContaining(
          `The repository's locale fr_FR matches no locale of i18n.locales in astro.config (en, de, de-CH), so it is left out of the collection "later": add it there, map it with the astroLocales option of comfortableLiveLoader() (astroLocales: { fr_FR: '…' }), or leave it out without this warning (astroLocales: { fr_FR: false })`,
        ),
      ]);
    } finally {
      await server.replaceSnapshot(original);
    }
  });
});
