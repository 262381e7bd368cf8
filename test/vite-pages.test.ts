import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { filesUnder } from './helpers/playground.ts';
import { readmeFiles } from './helpers/readme.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';
import { type ViteSite, viteCli, viteSite } from './helpers/vite-site.ts';

/**
 * docs/vite.md as a new user follows it: its files (the blocks that name one; a later block of
 * the same file replaces the earlier, as "A page per entry" replaces vite.config.ts) make a
 * plain Vite site, and `vite build` against the demo repository writes the list page and one
 * page per post in every locale; the page's script compiles with the declaration file written.
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

describe('the site of docs/vite.md', () => {
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
    const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [tsc, '-p', site.dir]).catch(
      (error: { stdout: string }) => ({ stdout: error.stdout }),
    );
    expect(stdout).toBe('');
  });
});
