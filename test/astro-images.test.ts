import { createServer as createHttpServer, type Server } from 'node:http';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { type AstroDev, copyFixture, freePort, runAstro, startAstroDev } from './helpers/astro.ts';
import { startTiny, tinyKey, tinySnapshot } from './helpers/server.ts';

/**
 * Remote images, built for real: the fixture site in test/fixtures/astro-small shows every image
 * of the tiny snapshot through <Image>. Asset 300's file is served by the local Read API, asset
 * 301's by a second HTTP server under another host name, so the assets use two hosts. An image
 * is optimised (a built page references a file in /_astro/, `astro dev` the /_image endpoint)
 * only when image.remotePatterns allows its host.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const secret = 'images-secret-0123456789abcdef';
const svg = (size: number) =>
  `<svg xmlns="http://www.w3.org/2000/svg" width="${size}" height="${size}"><rect width="${size}" height="${size}" fill="#36c"/></svg>`;

let server: ReadApiServer;
let images: Server;
let imagePort: number;
let devPort: number;
let site: { dir: string; remove(): Promise<void> };
let snapshot: Json;

/** Points an asset of the snapshot at an SVG of the second image host. */
function assetOn(id: string, url: string): Json {
  return {
    fields: {
      title: { en_US: `Image ${id}` },
      file: { url, fileName: `${id}.svg`, mimeType: 'image/svg+xml', size: 200, width: 64, height: 64 },
    },
    meta: {
      id,
      contentType: '_asset',
      revision: 1,
      tags: [],
      createdAt: '2024-05-01T00:00:00.000Z',
      updatedAt: '2024-05-01T00:00:00.000Z',
    },
  };
}

beforeAll(async () => {
  images = createHttpServer((request, response) => {
    if (!request.url?.endsWith('.svg')) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'image/svg+xml' }).end(svg(64));
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imagePort = (images.address() as { port: number }).port;
  devPort = await freePort();
  server = await startTiny({ webhook: { url: `http://127.0.0.1:${devPort}/_comfortable/refresh`, secret } });
  // The Read API is on 127.0.0.1; Ada's avatar on `localhost`, another host of the same machine.
  snapshot = tinySnapshot();
  snapshot.assets = snapshot.assets.map((asset: Json) =>
    asset.meta.id === '301' ? assetOn('301', `http://localhost:${imagePort}/ada.svg`) : asset,
  );
  await server.replaceSnapshot(snapshot);
  site = await copyFixture('astro-small', 'images-test');
});

afterAll(async () => {
  await server?.close();
  await new Promise((resolve) => images?.close(resolve));
  await closeAllPools();
  await site?.remove();
});

const siteEnv = () => ({ CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey });

/** The `src` of the image of each asset in a page's HTML. */
function sources(html: string): Record<string, string> {
  return Object.fromEntries(
    [...html.matchAll(/<li data-asset="(\d+)"[^>]*>\s*<img src="([^"]+)"/g)].map((m) => [
      m[1]!,
      m[2]!.replaceAll('&#38;', '&').replaceAll('&amp;', '&'),
    ]),
  );
}

async function build(): Promise<{ output: string; images: Record<string, string> }> {
  const { code, output } = await runAstro(site.dir, ['build'], siteEnv());
  expect(code, output).toBe(0);
  return { output, images: sources(await readFile(join(site.dir, 'dist/index.html'), 'utf8')) };
}

describe('a build allows the hosts of the synced assets in image.remotePatterns', () => {
  it('on an empty cache: the images of both hosts are optimised into /_astro/', async () => {
    const { output, images } = await build();
    expect(Object.keys(images).sort(), output).toEqual(['300', '301']);
    expect(images['300']).toMatch(/^\/_astro\/apples_[\w-]+\.svg$/);
    expect(images['301']).toMatch(/^\/_astro\/ada_[\w-]+\.svg$/);
    expect(output).toContain(
      `Image hosts of the synced assets allowed in image.remotePatterns: http://localhost:${imagePort}`,
    );
  }, 120_000);

  it('on the cache of the last build too, and the content store is kept (the Astro config hashed is the same)', async () => {
    const { output, images } = await build();
    expect(images['300']).toMatch(/^\/_astro\/apples_/);
    expect(images['301']).toMatch(/^\/_astro\/ada_/);
    expect(output).not.toContain('Astro config changed');
    expect(output).toContain(
      '[comfortable:collection:news] 4 documents × 1 locale: 0 added, 0 updated, 0 removed, 4 unchanged',
    );
  }, 120_000);
});

describe('astro dev', () => {
  let dev: AstroDev;

  beforeAll(async () => {
    dev = await startAstroDev(site.dir, devPort, { ...siteEnv(), CMFT_REFRESH_SECRET: secret });
  }, 120_000);

  afterAll(async () => {
    await dev?.stop();
  });

  const page = async () => sources(await (await fetch(`${dev.url}/`)).text());

  it('serves the images of the hosts of the cached assets through the image endpoint', async () => {
    const shown = await page();
    expect(shown['300']).toMatch(/^\/_image\?href=/);
    expect(shown['301']).toMatch(/^\/_image\?href=/);
    expect(decodeURIComponent(shown['301']!)).toContain(`http://localhost:${imagePort}/ada.svg`);
    const optimised = await fetch(new URL(shown['301']!, dev.url));
    expect(optimised.status).toBe(200);
  });

  it('warns once, saying what to add, when a refresh brings an asset on a host not allowed', async () => {
    const newHost = `http://127.0.0.1:${imagePort}`;
    const edited = structuredClone(snapshot);
    edited.assets.push(assetOn('302', `${newHost}/plum.svg`));
    const banana = edited.documents.find((d: Json) => d.meta.id === '101');
    banana.fields.images = [{ meta: { id: '302', contentType: '_asset' } }];
    banana.meta.updatedAt = '2025-01-01T00:00:00.000Z';
    await server.replaceSnapshot(edited);
    const warning = `Images on ${newHost} are not optimised`;
    for (let attempt = 0; attempt < 100 && !dev.output().includes(warning); attempt++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const output = dev.output();
    expect(output).toContain(
      `${warning}: add { protocol: 'http', hostname: '127.0.0.1', port: '${imagePort}' } to image.remotePatterns`,
    );
    expect((await page())['302']).toBe(`${newHost}/plum.svg`);

    // Another refresh that still brings it: no second warning.
    const refreshes = () => dev.output().split('Refreshed ').length - 1;
    const before = refreshes();
    banana.fields.title = { en_US: 'Plums' };
    banana.meta.updatedAt = '2025-01-02T00:00:00.000Z';
    await server.replaceSnapshot(edited);
    for (let attempt = 0; attempt < 100 && refreshes() === before; attempt++)
      await new Promise((resolve) => setTimeout(resolve, 100));
    expect(refreshes()).toBe(before + 1);
    expect(dev.output().split(warning)).toHaveLength(2);
  }, 60_000);
});
