import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createServer, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { filesUnder } from './helpers/playground.ts';
import { readmeFiles } from './helpers/readme.ts';
import { skipBecause } from './helpers/skip.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';
import { type ViteSite, viteCli, viteSite } from './helpers/vite-site.ts';

/**
 * docs/vite.md as a new user follows it: its files (the blocks that name one; a later block of
 * the same file replaces the earlier, as "A page per entry" replaces vite.config.ts) make a
 * plain Vite site, and `vite build` against the demo repository writes the list page and one
 * page per post in every locale; the page's script compiles with the declaration file written.
 * In `vite dev` the same pages are served at the same URLs and follow the CMS, through the saves
 * a site builder makes (a `.json` file, the Vite config).
 */

const doc = await readFile(fileURLToPath(new URL('../docs/vite.md', import.meta.url)), 'utf8');
const demo = JSON.parse(await readFile(demoSnapshot, 'utf8')) as {
  repository: { locales: { key: string }[] };
  documents: { meta: { id: string; contentType: string }; fields: { title?: Record<string, string> } }[];
};

let server: ReadApiServer;
let site: ViteSite;

beforeAll(async () => {
  server = await startServer({ paths: [demoSnapshot], watch: false });
  const files = Object.fromEntries(readmeFiles(doc).map((file) => [file.path, file.text]));
  site = await viteSite(files);
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  await site?.remove();
});

describe('the page-per-entry example of docs/vite.md', () => {
  it('is the vite.config.ts the site ends with', () => {
    const configs = readmeFiles(doc).filter((file) => file.path === 'vite.config.ts');
    expect(configs.at(-1)?.section).toBe('A page per entry');
    expect(readmeFiles(doc).map((file) => file.path)).toEqual(expect.arrayContaining(['index.html', 'src/main.ts']));
  });

  it('builds one page per post in every locale, next to the list page', { timeout: 120_000 }, async () => {
    const { code, output } = await viteCli(site.dir, ['build'], {
      CMFT_BASE_URL: server.url,
      CMFT_REPOSITORY: 'demo',
      CMFT_API_KEY: demoKey,
    });
    expect(code, output).toBe(0);
    expect(output).not.toContain(demoKey);

    const dist = join(site.dir, 'dist');
    const pages = (await filesUnder(dist))
      .map((file) => relative(dist, file))
      .filter((path) => /^[^/]+\/posts\//.test(path));
    const posts = demo.documents.filter((document) => document.meta.contentType === 'post');
    const expected = demo.repository.locales.flatMap(({ key }) =>
      posts.map((post) => `${key}/posts/${post.meta.id}/index.html`),
    );
    expect(pages.sort()).toEqual(expected.sort());
    expect(await readFile(join(dist, 'index.html'), 'utf8')).toMatch(
      /<script type="module" crossorigin src="\/assets\/index-[^"]+\.js"><\/script>/,
    );

    const first = posts[0]!;
    const english = await readFile(join(dist, `en_US/posts/${first.meta.id}/index.html`), 'utf8');
    expect(english).toContain(`<title>${first.fields.title!.en_US}</title>`);
    expect(english).toContain('<html lang="en">');
    // de_CH has no title of its own: the fallback gives de_DE's.
    const swiss = await readFile(join(dist, `de_CH/posts/${first.meta.id}/index.html`), 'utf8');
    expect(swiss).toContain(`<h1>${first.fields.title!.de_DE}</h1>`);
  });
});

/** TypeScript 7, which create-vite installs: from COMFORTABLE_TS7, else .tools/ts7 (`.ci/run` installs it there). */
const ts7 =
  process.env.COMFORTABLE_TS7 ||
  [fileURLToPath(new URL('../.tools/ts7/node_modules/typescript/bin/tsc', import.meta.url))].find((path) =>
    existsSync(path),
  );

describe('the site of docs/vite.md', () => {
  /** Runs `tsc -p` on the site; what it printed (nothing when it compiles). */
  const compile = async (tsc: string) => {
    const { stdout } = await promisify(execFile)(process.execPath, [tsc, '-p', site.dir]).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    );
    return stdout;
  };

  it('compiles with the declaration file the build wrote, which types post.fields.title', {
    timeout: 120_000,
  }, async () => {
    await site.write(
      'tsconfig.json',
      JSON.stringify({
        compilerOptions: {
          target: 'es2023',
          lib: ['es2023', 'dom'],
          module: 'esnext',
          moduleResolution: 'bundler',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        include: ['src', 'comfortable.d.ts'],
      }),
    );
    expect(await compile(fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url)))).toBe('');
  });

  it('compiles with TypeScript 7 too, which create-vite installs', { timeout: 120_000 }, async (context) => {
    if (!ts7) skipBecause(context, 'no TypeScript 7: set COMFORTABLE_TS7, or run .ci/run, which installs it');
    expect(await compile(ts7!)).toBe('');
  });
});

describe('the pages of docs/vite.md in vite dev', () => {
  type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any
  let dev: ViteDevServer;
  let url: string;
  let edits = 0;
  const post = demo.documents.find((document) => document.meta.contentType === 'post')!;
  const path = `/en_US/posts/${post.meta.id}/`;
  const page = async () => {
    const response = await fetch(`${url}${path}`);
    return { status: response.status, html: await response.text() };
  };
  /** The post's page once it shows `title`, asked every 200 ms for at most 10 s. */
  const showing = async (title: string) => {
    const deadline = Date.now() + 10_000;
    let seen = await page();
    while (!seen.html.includes(`<h1>${title}</h1>`) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      seen = await page();
    }
    return seen.html;
  };
  /** Publishes a new English title of the post; returns it. */
  const edit = async () => {
    const snapshot = JSON.parse(await readFile(demoSnapshot, 'utf8')) as Json;
    const document = snapshot.documents.find((d: Json) => d.meta.id === post.meta.id);
    const title = `A new title, take ${++edits}`;
    document.fields.title.en_US = title;
    document.meta.updatedAt = new Date(Date.UTC(2031, 0, 1, 0, 0, edits)).toISOString();
    await server.replaceSnapshot(snapshot);
    return title;
  };

  beforeAll(async () => {
    const env = `CMFT_BASE_URL=${server.url}\nCMFT_REPOSITORY=demo\nCMFT_API_KEY=${demoKey}\nCMFT_POLL_INTERVAL=1000\n`;
    await site.write('.env', env);
    dev = await createServer({
      root: site.dir,
      configFile: join(site.dir, 'vite.config.ts'),
      logLevel: 'silent',
      server: { port: 0, host: '127.0.0.1' },
    });
    await dev.listen();
    url = dev.resolvedUrls!.local[0]!.replace(/\/$/, '');
  }, 60_000);

  afterAll(async () => {
    await dev?.close();
    await server.replaceSnapshot(JSON.parse(await readFile(demoSnapshot, 'utf8')));
  });

  it('serves a post at the URL of the page vite build writes, with the Vite client for reloads', async () => {
    const { status, html } = await page();
    expect(status).toBe(200);
    expect(html).toContain(`<h1>${post.fields.title!.en_US}</h1>`);
    expect(html).toContain('/@vite/client');
    // Another path is Vite's own: its fallback to the site's index.html.
    expect(await (await fetch(`${url}/en_US/posts/nothing-here/`)).text()).toContain('<title>Posts</title>');
  }, 30_000);

  it('follows an edit in the CMS within a poll', async () => {
    const title = await edit();
    expect(await showing(title)).toContain(`<h1>${title}</h1>`);
  }, 30_000);

  it('follows it after a .json file of the site is saved, three times', async () => {
    for (const word of ['one', 'two', 'three']) {
      await site.write('src/labels.json', JSON.stringify({ word }));
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const title = await edit();
    expect(await showing(title)).toContain(`<h1>${title}</h1>`);
  }, 30_000);

  it('follows it after the Vite config is edited (Vite restarts the server)', async () => {
    const config = join(site.dir, 'vite.config.ts');
    await writeFile(config, `${await readFile(config, 'utf8')}\n// edited while dev runs\n`);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const title = await edit();
    expect(await showing(title)).toContain(`<h1>${title}</h1>`);
  }, 30_000);
});
