import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { readmeFiles } from './helpers/readme.ts';
import { demoKey } from './helpers/server.ts';
import { astro, astroTsconfig, demoWithoutDangling, installSite, packageCli, packTarball } from './helpers/tarball.ts';

/**
 * The README, followed as a new user follows it: the packed package in a fresh Astro 7 site, a
 * `.env` with the connection, and every file the README names (its code blocks with a
 * `title`) pasted as they stand, against the demo content on the local Read API (less its
 * deliberate dangling reference, a warning a build rightly prints). `astro check` finds no
 * error and `astro build` prints no warning from the package, before and after the README's
 * "Types you own" (`comfortable-loader types`, and the content config that uses its files); and
 * `astro add comfortable-loader` gives a setup that builds.
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const astroVersion = JSON.parse(readFileSync(join(root, 'node_modules/astro/package.json'), 'utf8')).version as string;
// The README's files, and the two pages its "more pages" link adds (docs/astro.md).
const morePages = readmeFiles(readFileSync(join(root, 'docs/astro.md'), 'utf8')).filter(
  (file) => file.section === 'More pages',
);
const files = [...readmeFiles(), ...morePages];
const typesSection = 'Types you own';

let server: ReadApiServer;
/** The demo snapshot the server serves. */
let snapshot: string;
let packed: Awaited<ReturnType<typeof packTarball>>;
let dir: string;

/** Writes files into the site. */
async function paste(entries: { path: string; text: string }[], into = dir): Promise<void> {
  for (const { path, text } of entries) {
    await mkdir(join(into, path, '..'), { recursive: true });
    await writeFile(join(into, path), text);
  }
}

/** The README's `.env`, with the values of this test's server. */
function dotEnv(text: string): string {
  const values: Record<string, string> = { CMFT_REPOSITORY: 'demo', CMFT_API_KEY: demoKey, CMFT_BASE_URL: server.url };
  const names = [...text.matchAll(/^#?\s*(CMFT_\w+)=/gm)].map((match) => match[1]!);
  expect(names.sort()).toEqual(Object.keys(values).sort());
  return Object.entries(values)
    .map(([name, value]) => `${name}=${value}\n`)
    .join('');
}

/** The warnings of Astro's output that come from the package or name it (colours stripped). */
function packageWarnings(output: string): string[] {
  const entries = stripVTControlCharacters(output).split(/\n(?=\S*\d\d:\d\d:\d\d )/);
  return entries.filter((entry) => /\[WARN\]/.test(entry) && /comfortable/.test(entry));
}

/** `astro check` passes with no error and no warning. */
async function check(site = dir): Promise<string> {
  const { code, output } = await astro(site, ['check']);
  expect(output).toMatch(/- 0 errors\n- 0 warnings/);
  expect(code, output).toBe(0);
  expect(packageWarnings(output)).toEqual([]);
  return output;
}

const page = (path: string) => readFile(join(dir, 'dist', path, 'index.html'), 'utf8');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'readme-site-'));
  [server, packed] = await Promise.all([
    demoWithoutDangling(join(dir, 'content')).then((path) => {
      snapshot = path;
      return startServer({ paths: [snapshot], port: 0, watch: false });
    }),
    packTarball(),
  ]);
  await installSite(dir, packed.tarball, astroVersion);
  await writeFile(join(dir, 'tsconfig.json'), astroTsconfig);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await Promise.all([dir, packed?.dir].filter(Boolean).map((path) => rm(path!, { recursive: true, force: true })));
});

describe('the README, followed in a fresh Astro 7 site', () => {
  it('names the files of a whole site: .env, the two configs, a list, a post, its body with components, and (in docs/astro.md) an author and an alias page', () => {
    const paths = files.filter((file) => file.section !== typesSection).map((file) => file.path);
    expect(paths).toEqual([
      '.env',
      'astro.config.mjs',
      'src/content.config.ts',
      'src/lib/posts.ts',
      'src/layouts/Page.astro',
      'src/pages/[locale]/index.astro',
      'src/pages/index.astro',
      'src/pages/[locale]/posts/[slug].astro',
      'src/components/PostBody.astro',
      'src/components/BodyImage.astro',
      'src/pages/[locale]/authors/[slug].astro',
      'src/pages/[locale]/about.astro',
    ]);
  });

  it('passes astro check with 0 errors', { timeout: 180_000 }, async () => {
    const setup = files.filter((file) => file.section !== typesSection);
    await paste(setup.map((file) => (file.path === '.env' ? { ...file, text: dotEnv(file.text) } : file)));
    await check();
  });

  it("passes astro check with the author's type unmapped: the post page names the collection it reads", {
    timeout: 180_000,
  }, async () => {
    // No collection holds the relation's targets: it is typed { collection: string, id }, which the
    // README's getEntry('authors', author.id) takes, and getEntry(author) would not.
    const config = join(dir, 'astro.config.mjs');
    const text = await readFile(config, 'utf8');
    expect(text).toContain("author: 'authors', ");
    await writeFile(config, text.replace("author: 'authors', ", ''));
    try {
      const { code, output } = await astro(dir, ['check']);
      expect(output).toMatch(/- 0 errors\n/);
      expect(code, output).toBe(0);
      expect(output).toContain('no collection holds the content type "author"');
    } finally {
      await writeFile(config, text);
    }
  });

  it('builds without a warning from the package, into the pages the README describes', {
    timeout: 180_000,
  }, async () => {
    const { code, output } = await astro(dir, ['build']);
    expect(code, output).toBe(0);
    expect(packageWarnings(output)).toEqual([]);
    expect(output).not.toMatch(/Invalid content reference|Sourcemap/i);

    const list = await page('en');
    const titles = [...list.matchAll(/<li><a href="\/en\/posts\/[^"]+\/">([^<]+)<\/a><\/li>/g)].map(
      (match) => match[1],
    );
    expect(titles.length).toBeGreaterThan(10);
    expect(titles).not.toEqual([...titles].sort()); // newest first, not by title or id

    const post = await page('en/posts/the-slow-boat-to-the-fjords');
    expect(post).toContain('<h1>The Slow Boat to the Fjords');
    expect(post).toMatch(/<img [^>]*src="\/_astro\/[^"]+"/); // the cover, optimised by <Image>
    expect(post).toMatch(/By <a href="\/en\/authors\/[^"]+\/">[^<]+<\/a>/); // the author, a reference getEntry resolved
    expect(post).toContain('<h2 id="twenty-three-landings">Twenty-three landings</h2>'); // the body, through render()
    expect(post).toContain('<a href="#twenty-three-landings">Twenty-three landings</a>'); // its table of contents
    // The same post in the other locales, at Astro's paths, for hreflang.
    expect(post).toMatch(/<link rel="alternate" hreflang="de-DE" href="\/de\/posts\/[^"]+\/">/);
    expect(post).toMatch(/<link rel="alternate" hreflang="de-CH" href="\/de-ch\/posts\/[^"]+\/">/);

    const author = /By <a href="(\/en\/authors\/[^"]+\/)"/.exec(post)![1]!;
    expect(await page(author.slice(1, -1))).toContain('The Slow Boat to the Fjords');
    expect(await page('de-ch/about')).toMatch(/<h1>[^<]+<\/h1>/);
    // The root links to each locale's list.
    expect(await readFile(join(dir, 'dist/index.html'), 'utf8')).toContain(
      '<li><a href="/de-ch/" hreflang="de-CH">Schweizer Hochdeutsch</a></li>',
    );
    // Every page says its language and encoding (the layout the README gives), so German shows as German.
    for (const html of [list, post, await page('de')])
      expect(html).toMatch(/<html lang="(en-US|de-DE)"><head><meta charset="utf-8">/);
    // de_CH has no title of its own for some posts.
    const swiss = await Promise.all(
      (await readdir(join(dir, 'dist/de-ch/posts'))).map((slug) => page(`de-ch/posts/${slug}`)),
    );
    // A fallback is marked and links to the page it came from (astroFallbacks, alternates' href).
    expect(
      swiss.some((html) =>
        /\(shown in <a href="\/(de|en)\/posts\/[^"]+\/">(Deutsch|Amerikanisches Englisch|Englisch)/.test(html),
      ),
    ).toBe(true);
  });

  it('renders a post with RichText.astro and a component of the site, from the installed package', {
    timeout: 240_000,
  }, async () => {
    await paste([
      {
        path: 'src/components/Link.astro',
        text: '---\nconst { href } = Astro.props;\n---\n<a class="cms" href={href}><slot /></a>\n',
      },
      {
        path: 'src/pages/rich/[slug].astro',
        text: `---
import { getCollection } from 'astro:content';
import RichText from 'comfortable-loader/RichText.astro';
import Link from '../../components/Link.astro';

export async function getStaticPaths() {
  const posts = await getCollection('posts', (post) => post.data.locale === 'en_US');
  return posts.map((post) => ({ params: { slug: post.data.fields.slug ?? post.data.id }, props: { post } }));
}
const { post } = Astro.props;
---
<html lang={post.data.lang}><body><RichText entry={post} components={{ a: Link }} /></body></html>
`,
      },
    ]);
    await check();
    const { code, output } = await astro(dir, ['build']);
    expect(code, output).toBe(0);
    const rich = await page('rich/the-slow-boat-to-the-fjords');
    expect(rich).toContain('<h2 id="twenty-three-landings">Twenty-three landings</h2>');
    await rm(join(dir, 'src/pages/rich'), { recursive: true });
  });

  it('follows "Types you own": types writes reference() schemas, and the typed content config checks and builds', {
    timeout: 240_000,
  }, async () => {
    const typed = files.filter((file) => file.section === typesSection);
    expect(typed.map((file) => file.path)).toEqual(['comfortable.config.mjs', 'src/content.config.ts']);
    await paste(typed.filter((file) => file.path === 'comfortable.config.mjs'));
    const types = await packageCli(dir, ['types']);
    expect(types.code, types.output).toBe(0);
    expect(types.output).toContain('Wrote 4 schema files');
    const post = await readFile(join(dir, 'src/content/schemas/post.ts'), 'utf8');
    expect(post).toContain("author: z.union([reference('authors'), unresolved]).nullable().optional(),");
    expect(post).toContain("category: z.union([reference('categories'), unresolved]).nullable().optional(),");

    await paste(typed.filter((file) => file.path === 'src/content.config.ts'));
    await check();
    const { code, output } = await astro(dir, ['build']);
    expect(code, output).toBe(0);
    expect(packageWarnings(output)).toEqual([]);
    expect(await page('en/posts/the-slow-boat-to-the-fjords')).toMatch(/By <a href="\/en\/authors\/[^"]+\/">/);
  });

  it("renders the body through the README's BodyImage with the CMS down and Astro's data store removed, sized from the cache", {
    timeout: 240_000,
  }, async () => {
    // As the README says: <PostBody post={post} /> in place of <Content />.
    const post = files.find((file) => file.path === 'src/pages/[locale]/posts/[slug].astro')!;
    expect(post.text).toContain('<Content />');
    const text = post.text
      .replace("import Page from '", "import PostBody from '../../../components/PostBody.astro';\nimport Page from '")
      .replace('<Content />', '<PostBody post={post} />');
    await paste([{ path: post.path, text }]);
    await check();
    // The body's image, through the README's BodyImage: an img, in the editor's own figure (one, not two).
    const figure = async () =>
      /<figure><img ([^>]*)><figcaption>The first landing, just after seven\.<\/figcaption><\/figure>/.exec(
        await page('en/posts/the-slow-boat-to-the-fjords'),
      )?.[1];
    const up = await astro(dir, ['build']);
    expect(up.code, up.output).toBe(0);
    const optimised = await figure();
    expect(optimised).toMatch(/^src="\/_astro\/fjord-dawn_[\w-]+\.svg" /);
    expect(optimised).toMatch(/ width="1600" height="900"$/);

    const { port } = server;
    await server.close();
    try {
      await rm(join(dir, 'node_modules/.astro/data-store.json'));
      const { code, output } = await astro(dir, ['build']);
      expect(code, output).toBe(0);
      // Not fetched, so not optimised: a plain img, with the asset's size from the cache.
      expect(output).toContain('images/fjord-dawn.svg in field body of document 100000000000000101 cannot be fetched');
      expect(await figure()).toBe(
        `src="${server.origin}/files/demo/images/fjord-dawn.svg" alt="A ferry crosses a still fjord at dawn" width="1600" height="900"`,
      );
    } finally {
      server = await startServer({ paths: [snapshot], port, watch: false });
    }
  });
});

describe('astro add comfortable-loader', () => {
  let registry: Server;

  afterAll(() => registry?.close());

  it('adds the integration as astro add writes it, which builds with a .env', { timeout: 180_000 }, async () => {
    // A registry of one package, as npm's answers it: what astro add asks before it edits the config.
    const manifest = readFileSync(join(dir, 'node_modules/comfortable-loader/package.json'), 'utf8');
    const asked: string[] = [];
    registry = createServer((request, response) => {
      asked.push(request.url!);
      if (request.url === '/comfortable-loader/latest')
        response.writeHead(200, { 'content-type': 'application/json' }).end(manifest);
      else response.writeHead(404).end('{}');
    });
    await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
    const site = join(dir, 'added');
    await installSite(site, packed.tarball, astroVersion);
    await paste(
      [
        { path: 'tsconfig.json', text: astroTsconfig },
        {
          path: 'astro.config.mjs',
          text: "import { defineConfig } from 'astro/config';\n\nexport default defineConfig({});\n",
        },
        { path: '.env', text: `CMFT_REPOSITORY=demo\nCMFT_API_KEY=${demoKey}\nCMFT_BASE_URL=${server.url}\n` },
        ...files.filter((file) => file.path === 'src/content.config.ts').slice(0, 1),
      ],
      site,
    );
    const added = await astro(site, ['add', 'comfortable-loader', '--yes'], {
      npm_config_registry: `http://127.0.0.1:${(registry.address() as AddressInfo).port}`,
    });
    expect(added.code, added.output).toBe(0);
    expect(asked).toContain('/comfortable-loader/latest');
    const config = await readFile(join(site, 'astro.config.mjs'), 'utf8');
    expect(config).toContain("import comfortableLoader from 'comfortable-loader';");
    expect(config).toMatch(/integrations: \[comfortableLoader\(\)\]/);

    const { code, output } = await astro(site, ['build']);
    expect(code, output).toBe(0);
    expect(output).toMatch(/\[comfortable:collection:posts\] 26 documents × 3 locales/);
  });
});
