import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createServer, type Logger, type ViteDevServer } from 'vite';
import type { ReadApiServer } from '../src/server/index.ts';
import { type AstroDev, copyFixture, freePort, startAstroDev } from './helpers/astro.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

/**
 * Dev follows the CMS by itself: `astro dev` and a plain Vite dev server with the plugin, with no
 * refresh secret and no poll option, show an edit of the CMS's content within 10 s, with no
 * request to the refresh endpoint (it is off). Asking often (a short `pollInterval`), an ask
 * that finds nothing costs only conditional requests and refreshes nothing; with the CMS
 * stopped, dev keeps serving the last content and says so once however often it asks; when the
 * CMS is back, the next edit shows.
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

/** Document 102's title on the home page of an `astro dev` (from the content store). */
async function cherryOn(dev: AstroDev): Promise<string | undefined> {
  const html = await (await fetch(`${dev.url}/`)).text();
  return /<li data-id="102"[^>]*>([^<]*)<\/li>/.exec(html)?.[1];
}

/** Document 102's title in a Vite dev server's virtual module. */
async function cherryIn(dev: ViteDevServer): Promise<string> {
  const module = await dev.ssrLoadModule('virtual:comfortable/collections/news');
  return (module.getEntry('102') as Json).fields.title as string;
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const requestLine = /^[A-Z]+ \//;
const isStampListing = (line: string) => line.includes('fields=meta(id,updatedAt,revision)');
const failureLine = /Could not ask the CMS for changes/g;
/** What astro dev printed but the lines of the pages it served: what a failed expectation shows. */
const logOf = (dev: AstroDev) => dev.output().replace(/^.*\[\d{3}\] \/.*\n/gm, '');

describe('astro dev with no refresh option', () => {
  let server: ReadApiServer;
  let dev: AstroDev;
  let site: { dir: string; remove(): Promise<void> };

  beforeAll(async () => {
    site = await copyFixture('astro-site', 'dev-poll');
    server = await startTiny();
    dev = await startAstroDev(site.dir, await freePort(), { CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey });
  }, 120_000);

  afterAll(async () => {
    await dev?.stop();
    await server?.close();
    await site?.remove();
  });

  it('shows an edit of the CMS within 10 s, with the refresh endpoint off', async () => {
    const cherry = () => cherryOn(dev);
    expect(await cherry()).toBe('cherry season');
    expect(dev.output()).toMatch(/Dev asks the CMS for changes every 5 s/);
    await server.replaceSnapshot(edited(tiny, 'Cherry season, followed'));
    expect(await until(cherry, 'Cherry season, followed', 10_000)).toBe('Cherry season, followed');
    expect(dev.output()).toMatch(/The CMS changed: refreshed comfortable:collection:news/);
    expect(dev.output()).not.toMatch(/Refreshed /); // the endpoint's line
  }, 30_000);
});

describe('astro dev asking every second (CMFT_POLL_INTERVAL=1000)', () => {
  let server: ReadApiServer;
  let dev: AstroDev;
  let site: { dir: string; remove(): Promise<void> };
  let port: number;
  const requests: string[] = [];
  const log = (line: string) => void (requestLine.test(line) && requests.push(line));
  const cherry = () => cherryOn(dev);

  beforeAll(async () => {
    site = await copyFixture('astro-site', 'dev-poll-often');
    server = await startTiny({ log });
    port = Number(new URL(server.url).port);
    dev = await startAstroDev(site.dir, await freePort(), {
      CMFT_BASE_URL: server.url,
      CMFT_API_KEY: tinyKey,
      CMFT_POLL_INTERVAL: '1000',
    });
  }, 120_000);

  afterAll(async () => {
    await dev?.stop();
    await server?.close();
    await site?.remove();
  });

  it('asks its listings of stamps conditionally while nothing changes, and refreshes nothing', async () => {
    expect(await cherry()).toBe('cherry season');
    // The first ask lists the stamps in full (the dev server's first sync fetched whole pages).
    const listed = async () => requests.some(isStampListing);
    expect(await until(listed, true, 10_000)).toBe(true);
    const before = { requests: requests.length, output: dev.output().length };
    await wait(4_000); // several asks
    const listings = requests.slice(before.requests).filter(isStampListing);
    expect(listings.length).toBeGreaterThan(1);
    expect(listings.filter((line) => !/ 304 /.test(line))).toEqual([]);
    expect(dev.output().slice(before.output)).not.toMatch(/The CMS changed|Refreshed|Could not ask/);
  }, 30_000);

  it('keeps the last content with the CMS stopped, says so once, and follows it again when it is back', async () => {
    await server.close();
    await wait(12_000); // a dozen periods: at least two asks fail, however long their retries take
    expect(await cherry()).toBe('cherry season');
    expect(dev.output().match(failureLine)).toHaveLength(1);

    server = await startTiny({ port, snapshots: [edited(tiny, 'Cherry season, after the outage')], paths: [], log });
    // The asks back off while the CMS is down: the next may come some seconds after it is back.
    expect(await until(cherry, 'Cherry season, after the outage', 60_000), logOf(dev)).toBe(
      'Cherry season, after the outage',
    );
    expect(dev.output()).toMatch(/The CMS answers again/);
    expect(dev.output().match(failureLine)).toHaveLength(1);
  }, 100_000);

  it('with the key refused, says what the pages do: they keep the content of the last sync', async () => {
    const mark = dev.output().length;
    const revoked = edited(tiny, 'Cherry season, not seen');
    revoked.repository.apiKeys = ['another-key-of-the-repository'];
    await server.replaceSnapshot(revoked);
    expect(await until(async () => dev.output().slice(mark).includes('Could not ask the CMS'), true, 15_000)).toBe(
      true,
    );
    const told = dev.output().slice(mark);
    expect(told).toMatch(
      /Could not ask the CMS for changes: [^\n]*401[^\n]*[^.]\. Dev keeps serving the content of its last sync/,
    );
    expect(told).not.toContain('..');
    const page = await fetch(`${dev.url}/`);
    expect(page.status).toBe(200);
    expect(await cherry()).toBe('Cherry season, after the outage');
    expect(told).not.toContain(tinyKey);
  }, 60_000);
});

/** A Vite dev server of the fixture app, with `options` added to the plugin's and a logger that keeps what it prints. */
async function viteDev(options: object = {}, mode?: string): Promise<{ dev: ViteDevServer; printed: string[] }> {
  const printed: string[] = [];
  const quiet = createLogger('silent');
  const logger: Logger = {
    ...quiet,
    info: (message) => void printed.push(message),
    warn: (message) => void printed.push(message),
  };
  process.env.FIXTURE_OPTIONS = JSON.stringify(options);
  const app = fixture('vite-app');
  try {
    const dev = await createServer({
      root: app,
      configFile: join(app, 'vite.config.ts'),
      server: { port: 0 },
      customLogger: logger,
      ...(mode ? { mode } : {}),
    });
    await dev.listen();
    return { dev, printed };
  } finally {
    delete process.env.FIXTURE_OPTIONS;
  }
}

describe('a plain Vite dev server with the plugin', () => {
  let server: ReadApiServer;
  let work: string;
  let dev: ViteDevServer | undefined;

  beforeAll(async () => {
    server = await startTiny();
    work = await mkdtemp(join(tmpdir(), 'comfortable-vite-poll-'));
    Object.assign(process.env, { CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey });
  }, 60_000);

  afterEach(async () => {
    await dev?.close();
    dev = undefined;
  });

  afterAll(async () => {
    await server?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('gives the virtual modules an edit of the CMS within 10 s, with no refresh option', async () => {
    process.env.FIXTURE_VITE_CACHE = join(work, 'cache-default');
    ({ dev } = await viteDev());
    const cherry = () => cherryIn(dev!);
    expect(await cherry()).toBe('cherry season');
    await server.replaceSnapshot(edited(tiny, 'Cherry season, in Vite'));
    expect(await until(cherry, 'Cherry season, in Vite', 10_000)).toBe('Cherry season, in Vite');
  }, 30_000);

  it('asks nothing under Vitest (mode test)', async () => {
    const requests: string[] = [];
    const watched = await startTiny({ log: (line) => void (requestLine.test(line) && requests.push(line)) });
    process.env.FIXTURE_VITE_CACHE = join(work, 'cache-test');
    process.env.CMFT_BASE_URL = watched.url;
    try {
      ({ dev } = await viteDev({ pollInterval: 500 }, 'test'));
      expect(await cherryIn(dev!)).toBe('cherry season');
      const synced = requests.length;
      await wait(2_000);
      expect(requests.slice(synced)).toEqual([]);
    } finally {
      process.env.CMFT_BASE_URL = server.url;
      await watched.close();
    }
  }, 30_000);

  it('reloads nothing while nothing changes, keeps the content with the CMS stopped, says so once, follows it back', async () => {
    process.env.FIXTURE_VITE_CACHE = join(work, 'cache-often');
    const port = Number(new URL(server.url).port);
    const started = await viteDev({ pollInterval: 500 });
    dev = started.dev;
    const cherry = () => cherryIn(started.dev);
    const failures = () => started.printed.join('\n').match(failureLine) ?? [];
    expect(await cherry()).toBe('Cherry season, in Vite');
    const reloads: unknown[] = [];
    const send = started.dev.ws.send.bind(started.dev.ws);
    started.dev.ws.send = ((payload: { type?: string }) => {
      if (payload?.type === 'full-reload') reloads.push(payload);
      return send(payload as never);
    }) as typeof started.dev.ws.send;
    await wait(2_000); // asks that find nothing reload no page
    expect(reloads).toEqual([]);

    await server.close();
    await wait(10_000); // twenty periods: at least two asks fail, however long their retries take
    expect(await cherry()).toBe('Cherry season, in Vite');
    expect(failures()).toHaveLength(1);

    server = await startTiny({ port, snapshots: [edited(tiny, 'Cherry season, back in Vite')], paths: [] });
    expect(await until(cherry, 'Cherry season, back in Vite', 40_000)).toBe('Cherry season, back in Vite');
    expect(started.printed.join('\n')).toMatch(/The CMS answers again/);
    expect(failures()).toHaveLength(1);
    expect(reloads.length).toBeGreaterThan(0); // the edit's
  }, 80_000);
});
