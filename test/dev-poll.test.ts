import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type ViteDevServer } from 'vite';
import type { ReadApiServer } from '../src/server/index.ts';
import { type AstroDev, copyFixture, freePort, startAstroDev } from './helpers/astro.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

/**
 * Dev follows the CMS by itself: `astro dev` and a plain Vite dev server with the plugin, with no
 * refresh secret and no poll option, show an edit of the CMS's content within 10 s, with no
 * request to the refresh endpoint (it is off). With the CMS stopped, `astro dev` keeps serving
 * the last content and says so once however often it asks; when the CMS is back, the next edit
 * shows.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const tiny = JSON.parse(await readFile(fixture('tiny.json'), 'utf8')) as Json;
let edits = 0;

/** The snapshot with document 102's English title set, as the CMS has an edit: updatedAt moves. */
function edited(snapshot: Json, title: string): Json {
  const next = structuredClone(snapshot);
  const doc = next.documents.find((d: Json) => d.meta.id === '102');
  doc.fields.title.en_US = title;
  doc.meta.updatedAt = new Date(Date.UTC(2030, 0, 1, 0, 0, ++edits)).toISOString();
  return next;
}

/** Asks `read` every 100 ms until it gives `expected`, for at most `ms`; returns what it gave last. */
async function until<T>(read: () => Promise<T>, expected: T, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  let seen = await read();
  while (seen !== expected && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    seen = await read();
  }
  return seen;
}

describe('astro dev with no refresh option', () => {
  let server: ReadApiServer;
  let dev: AstroDev;
  let site: { dir: string; remove(): Promise<void> };
  let port: number;
  let snapshot: Json = tiny;

  beforeAll(async () => {
    site = await copyFixture('astro-site', 'dev-poll');
    server = await startTiny();
    port = Number(new URL(server.url).port);
    dev = await startAstroDev(site.dir, await freePort(), { CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey });
  }, 120_000);

  afterAll(async () => {
    await dev?.stop();
    await server?.close();
    await site?.remove();
  });

  /** Document 102's title on the home page (from the content store). */
  const cherry = async () => {
    const html = await (await fetch(`${dev.url}/`)).text();
    return /<li data-id="102"[^>]*>([^<]*)<\/li>/.exec(html)?.[1];
  };

  it('shows an edit of the CMS within 10 s, with the refresh endpoint off', async () => {
    expect(await cherry()).toBe('cherry season');
    expect(dev.output()).toMatch(/Dev refresh is off/);
    snapshot = edited(snapshot, 'Cherry season, followed');
    await server.replaceSnapshot(snapshot);
    expect(await until(cherry, 'Cherry season, followed', 10_000)).toBe('Cherry season, followed');
    expect(dev.output()).toMatch(/The CMS changed: refreshed comfortable:collection:news/);
    expect(dev.output()).not.toMatch(/Refreshed \d+ changed sources/); // the endpoint's line
  }, 30_000);

  it('keeps the last content with the CMS stopped, says so once, and follows it again when it is back', async () => {
    await server.close();
    // Asks 5 s apart, then 10 s apart after a failure: by 16 s at least two asks have failed.
    await new Promise((resolve) => setTimeout(resolve, 16_000));
    expect(await cherry()).toBe('Cherry season, followed');
    const failures = dev.output().match(/Could not ask the CMS for changes/g) ?? [];
    expect(failures).toHaveLength(1);

    snapshot = edited(snapshot, 'Cherry season, after the outage');
    server = await startTiny({ port, snapshots: [snapshot], paths: [] });
    expect(await until(cherry, 'Cherry season, after the outage', 30_000)).toBe('Cherry season, after the outage');
    expect(dev.output()).toMatch(/The CMS answers again/);
    expect(dev.output().match(/Could not ask the CMS for changes/g)).toHaveLength(1);
  }, 60_000);
});

describe('a plain Vite dev server with the plugin and no refresh option', () => {
  let server: ReadApiServer;
  let dev: ViteDevServer;
  let work: string;

  beforeAll(async () => {
    server = await startTiny();
    work = await mkdtemp(join(tmpdir(), 'comfortable-vite-poll-'));
    Object.assign(process.env, {
      CMFT_BASE_URL: server.url,
      CMFT_API_KEY: tinyKey,
      FIXTURE_VITE_CACHE: join(work, 'vite-cache'),
    });
    const app = fixture('vite-app');
    dev = await createServer({ root: app, configFile: join(app, 'vite.config.ts'), server: { port: 0 } });
    await dev.listen();
  }, 60_000);

  afterAll(async () => {
    await dev?.close();
    await server?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('gives the virtual modules an edit of the CMS within 10 s', async () => {
    const cherry = async () => {
      const module = await dev.ssrLoadModule('virtual:comfortable/collections/news');
      return (module.getEntry('102') as Json).fields.title as string;
    };
    expect(await cherry()).toBe('cherry season');
    await server.replaceSnapshot(edited(tiny, 'Cherry season, in Vite'));
    expect(await until(cherry, 'Cherry season, in Vite', 10_000)).toBe('Cherry season, in Vite');
  }, 30_000);
});
