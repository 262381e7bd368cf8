import { createHmac } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../src/server/index.ts';
import { signWebhook } from '../src/wire/webhook.ts';
import { type AstroDev, copyFixture, freePort, startAstroDev } from './helpers/astro.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

/**
 * The dev refresh end to end: `astro dev` on the fixture site with a refreshSecret, and the local
 * Read API posting its signed webhook to the dev server after each snapshot change, as
 * `npm run dev` wires them. Requests to the Read API are counted from the server's log.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const secret = 'refresh-secret-0123456789abcdef';
const tiny = JSON.parse(await readFile(fixture('tiny.json'), 'utf8')) as Json;

let server: ReadApiServer;
let dev: AstroDev;
let site: { dir: string; remove(): Promise<void> };
const requests: string[] = [];
const webhooks: string[] = [];

beforeAll(async () => {
  site = await copyFixture('astro-site', 'refresh-test');
  const port = await freePort();
  server = await startTiny({
    webhook: { url: `http://127.0.0.1:${port}/_comfortable/refresh`, secret },
    log: (line) => {
      if (/^[A-Z]+ \//.test(line)) requests.push(line);
      if (line.startsWith('webhook ')) webhooks.push(line);
    },
  });
  dev = await startAstroDev(site.dir, port, {
    CMFT_BASE_URL: server.url,
    CMFT_API_KEY: tinyKey,
    CMFT_REFRESH_SECRET: secret,
    // These tests count the requests of each delivery: dev's own asks of the CMS are off (test/dev-poll.test.ts).
    CMFT_POLL_INTERVAL: 'off',
  });
  expect(dev.url).toBe(`http://127.0.0.1:${port}`);
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  await server?.close();
  await site?.remove();
});

const endpoint = () => `${dev.url}/_comfortable/refresh`;
/** The headers of a delivery of `body`, signed as the local server signs its webhooks. */
const sign = (body: string, key = secret, now = Date.now()) => signWebhook(key, body, now);
const post = (body: string, headers: Record<string, string>) =>
  fetch(endpoint(), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

/** The page's news titles in en_US by document id (from the content store), and the home title (from a virtual module). */
async function titles(): Promise<Record<string, string>> {
  const html = await (await fetch(`${dev.url}/`)).text();
  const home = /<p id="home"[^>]*>([^<]*)<\/p>/.exec(html)?.[1];
  return {
    ...Object.fromEntries([...html.matchAll(/<li data-id="(\d+)"[^>]*>([^<]*)<\/li>/g)].map((m) => [m[1]!, m[2]!])),
    ...(home ? { home } : {}),
  };
}

/** Asks until the page shows what is expected (Astro writes its store a moment after a sync). */
async function pageShows(id: string, title: string): Promise<Record<string, string>> {
  let seen: Record<string, string> = {};
  for (let attempt = 0; attempt < 100; attempt++) {
    seen = await titles();
    if (seen[id] === title) return seen;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return seen;
}

describe('forged, stale and replayed webhooks', () => {
  const body = JSON.stringify({ repository: 'tiny', changed: ['102'], removed: [] });
  const signed = sign(body);

  it.each([
    [
      'a wrong signature',
      body,
      { ...signed, 'x-webhook-signature': sign('{"repository":"tiny"}')['x-webhook-signature']! },
      /invalid X-Webhook-Signature/,
    ],
    ['no signature', body, {}, /invalid X-Webhook-Signature/],
    [
      'a signature made with another secret',
      body,
      sign(body, 'another-secret-0123456789abcdef'),
      /invalid X-Webhook-Signature/,
    ],
    ['a tampered body', body.replace('102', '100'), sign(body), /invalid X-Webhook-Signature/],
    [
      'a malformed signature header',
      body,
      { ...signed, 'x-webhook-signature': signed['x-webhook-signature']!.replace('sha256=', 'sha1=') },
      /invalid X-Webhook-Signature/,
    ],
    [
      'a signature of the body alone (the old format)',
      body,
      { 'x-webhook-signature': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` },
      /invalid X-Webhook-Signature/,
    ],
    ['a timestamp six minutes old', body, sign(body, secret, Date.now() - 6 * 60_000), /stale X-Webhook-Timestamp/],
  ])('with %s get 401 and cause no sync', async (_name, sent, headers, reason) => {
    const before = { requests: requests.length, output: dev.output().length };
    const response = await post(sent, headers);
    expect(response.status).toBe(401);
    expect(((await response.json()) as Json).error).toMatch(reason);
    expect(requests.length).toBe(before.requests);
    expect(dev.output().slice(before.output)).not.toMatch(/Synced tiny|Refreshed/);
  });

  it('a genuine delivery sent again gets 401 and causes no second sync', async () => {
    const headers = sign(body);
    expect((await post(body, headers)).status).toBe(200);
    const before = { requests: requests.length, output: dev.output().length };
    const replayed = await post(body, headers);
    expect(replayed.status).toBe(401);
    expect(((await replayed.json()) as Json).error).toMatch(/replayed X-Webhook-Id/);
    expect(requests.length).toBe(before.requests);
    expect(dev.output().slice(before.output)).not.toMatch(/Synced tiny|Refreshed/);
  });

  it('only POST is answered', async () => {
    const response = await fetch(endpoint());
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST');
  });
});

describe('a change in the CMS', () => {
  it('reaches the dev page through the signed webhook, refreshing only the loaders it affects', async () => {
    expect(await titles()).toMatchObject({ '102': 'cherry season', home: 'Apple harvest' });
    const mark = dev.output().length;

    const edited = structuredClone(tiny);
    const cherry = edited.documents.find((d: Json) => d.meta.id === '102');
    cherry.fields.title.en_US = 'Cherry season, revised';
    cherry.meta.updatedAt = '2025-01-01T00:00:00.000Z';
    await server.replaceSnapshot(edited); // resolves when the webhook is answered, after the refresh

    expect(webhooks.at(-1)).toBe(`webhook ${endpoint()} answered 200`);
    expect(await pageShows('102', 'Cherry season, revised')).toMatchObject({
      '100': 'Apple harvest',
      '102': 'Cherry season, revised',
    });

    const output = dev.output().slice(mark);
    expect(output.match(/Synced tiny: /g)).toHaveLength(1);
    expect(output).toContain('Refreshed comfortable:collection:news (1 changed source)');
    // 102 changed; 101 relates to it, and 100 to 101: two relations away, within their cacheKeys
    expect(output).toMatch(
      /\[comfortable:collection:news\] 4 documents × 3 locales: 0 added, 9 updated, 0 removed, 3 unchanged/,
    );
    expect(output).not.toMatch(/\[comfortable:(query:type:author|alias:home)\] \d+ documents/);
  });

  it('that touches several sources refreshes each of their loaders', async () => {
    const mark = dev.output().length;
    const edited = structuredClone(tiny);
    edited.documents.find((d: Json) => d.meta.id === '102').fields.title.en_US = 'Cherry season, revised';
    const apples = edited.documents.find((d: Json) => d.meta.id === '100');
    apples.fields.title.en_US = 'Apple harvest, revised';
    apples.meta.updatedAt = '2025-01-02T00:00:00.000Z';
    await server.replaceSnapshot(edited);

    expect(await pageShows('100', 'Apple harvest, revised')).toMatchObject({ '100': 'Apple harvest, revised' });
    expect(await pageShows('home', 'Apple harvest, revised')).toMatchObject({ home: 'Apple harvest, revised' }); // the virtual module too
    const output = dev.output().slice(mark);
    // document 100 is a news item, the home alias, and the favourite that author 200 includes;
    // and 102 comes back with its first stamps: author 201's cacheKey covers it (201's favourite 101 relates to 102)
    expect(output).toMatch(/Refreshed .*comfortable:collection:news.* \(3 changed sources\)/);
    expect(output).toMatch(/\[comfortable:alias:home\] 1 document × 3 locales: 0 added, 3 updated/);
    expect(output).toMatch(
      /\[comfortable:query:type:author\] 2 documents × 3 locales: 0 added, 6 updated, 0 removed, 0 unchanged/,
    );
  });
});

describe('a full sync after a refresh', () => {
  it('is one new sync that every loader waits for', async () => {
    const mark = dev.output().length;
    const reports = /\[comfortable:[^\]]+\] \d+ documents? × \d+ locales?/g;
    const config = join(site.dir, 'src/content.config.ts');
    await writeFile(config, `${await readFile(config, 'utf8')}\n// touched: Astro syncs every collection again\n`);
    let output = '';
    for (let attempt = 0; attempt < 200 && (output.match(reports) ?? []).length < 3; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      output = dev.output().slice(mark);
    }
    expect(output.match(reports), output).toHaveLength(3);
    expect(output.match(/Synced tiny: /g)).toHaveLength(1);
    // no loader read the refresh's older round: every report follows the new sync
    expect(output.search(reports)).toBeGreaterThan(output.indexOf('Synced tiny: '));
  });
});
