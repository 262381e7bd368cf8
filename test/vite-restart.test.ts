import { createServer as createHttpServer, type Server } from 'node:http';
import { join } from 'node:path';
import { createLogger, createServer, type Logger, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { signWebhook } from '../src/wire/webhook.ts';
import { startTiny, tinyKey, tinySnapshot } from './helpers/server.ts';
import { type ViteSite, viteSite } from './helpers/vite-site.ts';

/**
 * `vite` dev in a plain Vite site whose vite.config.ts names a collection the repository does
 * not have: the page's import fails with a hint at the collections option, and once the config
 * is fixed the restart Vite does by itself is enough. The shared sync outlives the restart (it
 * lives on globalThis), so this is where a stale source, a failed round kept, or a listener of
 * the old server would show.
 */

const secret = 'restart-refresh-secret-0123456789';
const config = (collection: string) => `import { defineConfig } from 'vite';
import comfortable from 'comfortable-loader/vite';

export default defineConfig({
  plugins: [comfortable({ repository: 'tiny', collections: { ${collection}: {} }, refreshSecret: '${secret}' })],
});
`;

const requests: string[] = [];
let server: ReadApiServer;
let site: ViteSite;
let dev: ViteDevServer | undefined;
const infos: string[] = [];

/** Vite's logger, keeping what it tells (to see the restart) and printing nothing. */
function quietLogger(): Logger {
  const logger = createLogger('silent');
  return { ...logger, info: (message) => void infos.push(message) };
}

beforeAll(async () => {
  server = await startTiny({ log: (line) => (/^[A-Z]+ \//.test(line) ? requests.push(line) : undefined) });
  // These tests count requests and reloads: dev's own asks of the CMS are off (test/dev-poll.test.ts).
  Object.assign(process.env, { CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey, CMFT_POLL_INTERVAL: 'off' });
  delete process.env.CMFT_REFRESH_SECRET;
  site = await viteSite({
    'vite.config.ts': config('newz'),
    'index.html':
      '<!doctype html>\n<title>News</title>\n<main id="app"></main>\n<script type="module" src="/src/main.ts"></script>\n',
    'src/main.ts':
      "import news from 'virtual:comfortable/collections/news';\n\ndocument.querySelector('#app')!.textContent = news.map((entry) => entry.fields.title).join(', ');\n",
  });
});

afterAll(async () => {
  await dev?.close();
  await server?.close();
  await closeAllPools();
  await site?.remove();
});

/** What the page's script imports of the content: the status and text of the virtual module it names. */
async function pageContent(url: string): Promise<{ status: number; text: string }> {
  const main = await fetch(`${url}/src/main.ts`);
  expect(main.status).toBe(200);
  const imported = /from "(\/@id\/__x00__virtual:comfortable\/collections\/news)"/.exec(await main.text());
  expect(imported).not.toBeNull();
  const module = await fetch(`${url}${imported![1]}`);
  return { status: module.status, text: await module.text() };
}

describe('vite dev after a wrong collection id', () => {
  it('recovers within the one restart that fixing vite.config.ts causes, and asks no more for the wrong id', {
    timeout: 60_000,
  }, async () => {
    dev = await createServer({
      root: site.dir,
      configFile: join(site.dir, 'vite.config.ts'),
      customLogger: quietLogger(),
      server: { port: 0, host: '127.0.0.1' },
    });
    await dev.listen();
    const url = dev.resolvedUrls!.local[0]!.replace(/\/$/, '');

    const broken = await pageContent(url);
    expect(broken.status).toBe(500);
    expect(broken.text).toContain(
      'The repository \\"tiny\\" has no collection \\"newz\\". Check the collection API id in the collections option of comfortable() in vite.config.',
    );
    expect(requests.some((line) => line.includes('/collections/newz'))).toBe(true);

    const fixedAt = requests.length;
    await site.write('vite.config.ts', config('news'));
    // Vite sees the config change and restarts by itself; the first restart must be enough.
    for (let tries = 0; !infos.some((message) => message.includes('server restarted')); tries++) {
      expect(tries, 'Vite did not restart after vite.config.ts changed').toBeLessThan(300);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const fixed = await pageContent(url);
    expect(fixed.status).toBe(200);
    expect(fixed.text).toContain('Apple harvest');
    expect(requests.slice(fixedAt).filter((line) => line.includes('/collections/newz'))).toEqual([]);
    expect(requests.slice(fixedAt).some((line) => line.includes('/collections/news'))).toBe(true);
  });
});

describe('a restarted dev server in middleware mode', () => {
  let middleware: ViteDevServer | undefined;
  let http: Server | undefined;

  afterAll(async () => {
    http?.close();
    await middleware?.close();
  });

  it('keeps no listener of the server it replaced: a refresh reloads the page once', { timeout: 60_000 }, async () => {
    await site.write('vite.config.ts', config('news'));
    middleware = await createServer({
      root: site.dir,
      configFile: join(site.dir, 'vite.config.ts'),
      customLogger: quietLogger(),
      server: { middlewareMode: true, ws: false, watch: null },
    });
    // In middleware mode there is no HTTP server whose closing would end the old server's listener.
    await middleware.restart();
    await middleware.restart();
    // The content the restarted server synced as it started (which reloads the page, once).
    await middleware.ssrLoadModule('virtual:comfortable/collections/news');
    const reloads: unknown[] = [];
    const send = middleware.ws.send.bind(middleware.ws);
    middleware.ws.send = ((payload: { type?: string }) => {
      if (payload?.type === 'full-reload') reloads.push(payload);
      return send(payload as never);
    }) as typeof middleware.ws.send;

    http = createHttpServer(middleware.middlewares);
    await new Promise<void>((resolve) => http!.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as { port: number };
    // A refresh that changes something: the page reloads once, whichever server the listener was on.
    const edited = tinySnapshot();
    const doc = edited.documents.find((d: { meta: { id: string } }) => d.meta.id === '102');
    doc.fields.title.en_US = 'Cherry season, restarted';
    doc.meta.updatedAt = '2031-01-01T00:00:00.000Z';
    await server.replaceSnapshot(edited);
    const body = JSON.stringify({ repository: 'tiny', changed: ['102'], removed: [] });
    const response = await fetch(`http://127.0.0.1:${port}/_comfortable/refresh`, {
      method: 'POST',
      headers: signWebhook(secret, body),
      body,
    });
    expect(response.status).toBe(200);
    expect(reloads).toHaveLength(1);
  });
});
