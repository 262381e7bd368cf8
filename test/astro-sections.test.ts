import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { copyFixture, runAstro } from './helpers/astro.ts';
import { fixture, tinyKey } from './helpers/server.ts';

/**
 * A site whose content types have sections (test/fixtures/astro-sections, on the lessons
 * snapshot): its page reads `fields.<section>.<field>` of lessons and of the teachers their
 * sections reference, with no cast. `astro check` finds no error in it (the schemas type each
 * field inside a section), and the built pages show each locale its own values, the fallback's
 * where it has none, the teacher a section names as an Astro reference, and the images of an
 * asset field inside a section optimised.
 */

let server: ReadApiServer;
let site: { dir: string; remove(): Promise<void> };
let cacheDir: string;
const env = () => ({ CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey, FIXTURE_CACHE_DIR: cacheDir });

beforeAll(async () => {
  server = await startServer({ paths: [fixture('sections.json')], watch: false });
  site = await copyFixture('astro-sections', 'sections-site');
  cacheDir = await mkdtemp(join(tmpdir(), 'sections-site-cache-'));
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  await site?.remove();
  await rm(cacheDir, { recursive: true, force: true });
});

describe('a site that reads fields inside sections', () => {
  it('passes astro check with 0 errors', { timeout: 180_000 }, async () => {
    const { code, output } = await runAstro(site.dir, ['check'], env());
    expect(output).toMatch(/- 0 errors/);
    expect(code, output).toBe(0);
  });

  it('builds a page per lesson and locale from the fields inside its sections', { timeout: 180_000 }, async () => {
    const { code, output } = await runAstro(site.dir, ['build'], env());
    expect(code, output).toBe(0);
    const page = (path: string) => readFile(join(site.dir, 'dist', path, 'index.html'), 'utf8');
    const knots = await page('fr_FR/101');
    expect(knots).toContain('<h1 data-from="fr_FR">Nœuds</h1>');
    expect(knots).toContain('<p class="introduction">A knot a day</p>'); // no French one: the English
    expect(knots).toContain('<p class="teacher">Ada: Marin</p>');
    expect(knots).toContain('<li>Voiles</li>');
    expect(knots).toContain('<p class="quiz">2 questions, pass with 2</p>');
    expect(knots).toContain('<p>Les nouer vite</p>');
    expect(knots).toMatch(/<img[^>]+src="\/_astro\/apples[^"]*"/);
    const sails = await page('de/102');
    expect(sails).toContain('<h1 data-from="en_GB">Sails</h1>');
    expect(sails).toContain('<p class="introduction">-</p>');
    expect(sails).toContain('<p class="teacher">Grace: Seglerin</p>');
    expect(await page('en_GB/103')).toContain('<h1 data-from="en_GB">Rope</h1>');
  });
});
