import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type AstroDev, copyFixture, freePort, startAstroDev } from './helpers/astro.ts';
import { fixture, rewrite } from './helpers/server.ts';

/**
 * `astro dev` on a snapshot served in-process (CMFT_SNAPSHOT): no key, no CMS, and an edit of the
 * snapshot file (a new pull) shows on the page without a restart.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let dev: AstroDev;
let site: { dir: string; remove(): Promise<void> };
let snapshot: Json;
const file = () => join(site.dir, 'content', 'tiny.json');

beforeAll(async () => {
  site = await copyFixture('astro-site', 'pull-dev-test');
  snapshot = JSON.parse(await readFile(fixture('tiny.json'), 'utf8'));
  snapshot.repository.apiKeys = ['local-dev-key'];
  await mkdir(join(site.dir, 'content'));
  await writeFile(file(), JSON.stringify(snapshot, null, 2));
  dev = await startAstroDev(site.dir, await freePort(), {
    CMFT_SNAPSHOT: 'content/tiny.json',
    CMFT_API_KEY: undefined,
    CMFT_BASE_URL: undefined,
  });
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  await site?.remove();
});

/** The news titles the page shows, by document id. */
async function titles(): Promise<Record<string, string>> {
  const html = await (await fetch(`${dev.url}/`)).text();
  return Object.fromEntries([...html.matchAll(/<li data-id="(\d+)"[^>]*>([^<]*)<\/li>/g)].map((m) => [m[1]!, m[2]!]));
}

it('serves the snapshot, and shows an edit of the file without a restart', async () => {
  expect(dev.output()).toContain('Serving the snapshot content/tiny.json in-process');
  const before = await titles();
  expect(before['102']).toBe(snapshot.documents.find((d: Json) => d.meta.id === '102').fields.title.en_US);

  const edited = structuredClone(snapshot);
  const doc = edited.documents.find((d: Json) => d.meta.id === '102');
  doc.fields.title.en_US = 'Pulled again';
  doc.meta.revision += 1;
  rewrite(file(), JSON.stringify(edited, null, 2));
  // Wait for the refresh, then load the page as a user would. (Page requests made while Astro
  // swaps its data store can keep the old store until the next change: Astro's dev server, not
  // ours; so this test does not ask for the page until the refresh is done.)
  for (let attempt = 0; attempt < 150 && !dev.output().includes('Refreshed'); attempt++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  expect(dev.output()).toContain('Refreshed');
  await new Promise((resolve) => setTimeout(resolve, 1_000)); // Astro saves its store 500 ms after the last change
  const seen = await titles();
  expect(seen['102'], dev.output()).toBe('Pulled again');
  expect(seen['100']).toBe(before['100']);
}, 60_000);
