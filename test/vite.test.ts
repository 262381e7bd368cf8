import { spawn } from 'node:child_process';
import {
  access,
  appendFile,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, createLogger, createServer, resolveConfig, type ViteDevServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import { genericDeclarations } from '../src/vite/declarations.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { signWebhook } from '../src/wire/webhook.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

/**
 * The Vite plugin in a plain Vite 8 app (test/fixtures/vite-app, no Astro) against the local
 * Read API: `vite build` of an SSR entry that imports the virtual modules, the declaration file
 * the plugin writes, the shipped declarations (types/virtual.d.ts) checked by tsc, and the
 * signed refresh endpoint in dev. (tsc on the written declarations, in a project without astro,
 * is test/vite-types.test.ts.)
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const app = fixture('vite-app');
const secret = 'vite-refresh-secret-0123456789';
const tiny = JSON.parse(await readFile(fixture('tiny.json'), 'utf8')) as Json;

let server: ReadApiServer;
let work: string;
const requests: string[] = [];

beforeAll(async () => {
  server = await startTiny({ log: (line) => (/^[A-Z]+ \//.test(line) ? requests.push(line) : undefined) });
  work = await mkdtemp(join(tmpdir(), 'comfortable-vite-'));
  Object.assign(process.env, {
    CMFT_BASE_URL: server.url,
    CMFT_API_KEY: tinyKey,
    CMFT_REFRESH_SECRET: secret,
    // These tests count the requests of each refresh: dev's own asks of the CMS are off (test/dev-poll.test.ts).
    CMFT_POLL_INTERVAL: 'off',
    FIXTURE_VITE_CACHE: join(work, 'vite-cache'),
    FIXTURE_OUT_DIR: join(work, 'dist'),
    FIXTURE_DTS: join(work, 'types/comfortable.d.ts'),
  });
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('vite build', () => {
  let summary: Json;

  beforeAll(async () => {
    await build({ root: app, configFile: join(app, 'vite.config.ts') });
    ({ summary } = await import(pathToFileURL(join(work, 'dist/entry.js')).href));
  }, 60_000);

  it('puts the entries of a collection in every locale into the bundle', () => {
    expect(summary.locales).toEqual(['en_US', 'de_DE', 'de_CH']);
    expect(summary.defaultLocale).toBe('en_US');
    expect(summary.news).toHaveLength(12);
    expect(summary.news.slice(0, 3)).toEqual(['en_US/100', 'de_DE/100', 'de_CH/100']);
  });

  it('has getEntry by id, in the default locale or a given one', () => {
    expect(summary.apples).toBe('Apple harvest');
    expect(summary.applesInGerman).toBe('Apfelernte');
    expect(summary.missing).toBeNull();
    expect(summary.appleImages).toEqual([
      {
        kind: 'image',
        id: '300',
        src: `${server.origin}/files/tiny/images/apples.svg`,
        width: 100,
        height: 80,
        alt: 'A basket',
        mimeType: 'image/svg+xml',
        fileName: 'apples.svg',
      },
    ]);
  });

  it('has a module per locale, whose getEntry looks only in that locale', () => {
    expect(summary.germanNews).toEqual(['100', '102', '101', '103']); // the collection's order: by rating
    expect(summary.germanApples).toBe('Apfelernte');
    expect(summary.germanModuleInEnglish).toBeNull();
  });

  it('has alias modules whose default export is the entry', () => {
    expect(summary.home).toBe('Apple harvest');
    expect(summary.homeLocales).toEqual(['de_CH', 'de_DE', 'en_US']);
    expect(summary.homeInGerman).toBe('Apfelernte');
    expect(summary.swissHome).toBe('Apfelernte');
    expect(summary.swissHomeFallbacks).toMatchObject({ title: 'de_DE' });
  });

  it('keeps its cache in the Vite cache folder, one folder per base URL and repository', async () => {
    const folders = (await readdir(join(work, 'vite-cache/comfortable'))).filter((name) => name.startsWith('cms-'));
    expect(folders).toEqual([expect.stringMatching(/^cms-127\.0\.0\.1-\d+-tiny-[0-9a-f]{10}$/)]);
    await expect(access(join(work, 'vite-cache/comfortable', folders[0]!, 'cache.sqlite'))).resolves.toBeUndefined();
  });

  it('writes the declaration file, with the fields of each synced source and its locale variants typed', async () => {
    const text = await readFile(join(work, 'types/comfortable.d.ts'), 'utf8');
    expect(text).toContain('/// <reference types="comfortable-loader/virtual" />');
    expect(text).toContain("declare module 'virtual:comfortable/collections/news' {");
    expect(text).toContain(
      "declare module 'virtual:comfortable/collections/news/*' {\n  export * from 'virtual:comfortable/collections/news';",
    );
    expect(text).toContain("declare module 'virtual:comfortable/aliases/home' {");
    expect(text).toContain('"title"?: string | null;');
    expect(text).toContain('"contentType": "news";');
    expect(text).not.toContain(tinyKey);
  });

  it('rewrites the declaration file only when its text changes', async () => {
    const file = join(work, 'types/comfortable.d.ts');
    const written = await readFile(file, 'utf8');
    const longAgo = new Date('2001-01-01T00:00:00Z');
    await utimes(file, longAgo, longAgo);
    await build({ root: app, configFile: join(app, 'vite.config.ts') });
    expect((await stat(file)).mtime).toEqual(longAgo); // the same text: left alone

    await appendFile(file, '// edited by hand\n');
    await build({ root: app, configFile: join(app, 'vite.config.ts') });
    expect(await readFile(file, 'utf8')).toBe(written);
  }, 60_000);
});

describe('the declarations in types/virtual.d.ts', () => {
  it('are the generic declarations Astro injects, so the two cannot drift apart', async () => {
    const shipped = await readFile(fileURLToPath(new URL('../types/virtual.d.ts', import.meta.url)), 'utf8');
    expect(shipped.endsWith(genericDeclarations('comfortable-loader/vite'))).toBe(true);
  });

  it('type a usage sample, and refuse wrong uses', async () => {
    // The app as installed: the package in node_modules, found through its exports ("types": ["comfortable-loader/virtual"]).
    const project = join(work, 'typed-app');
    await cp(join(app, 'src'), join(project, 'src'), { recursive: true });
    await cp(join(app, 'tsconfig.json'), join(project, 'tsconfig.json'));
    await mkdir(join(project, 'node_modules'));
    await symlink(
      fileURLToPath(new URL('..', import.meta.url)),
      join(project, 'node_modules/comfortable-loader'),
      'dir',
    );
    const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(process.execPath, [tsc, '-p', join(project, 'tsconfig.json')]);
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('close', (code) => resolve({ code, output }));
    });
    expect(output).toBe('');
    expect(code).toBe(0);
  }, 60_000);
});

describe('vite dev', () => {
  let dev: ViteDevServer;
  let url: string;

  beforeAll(async () => {
    dev = await createServer({
      root: app,
      configFile: join(app, 'vite.config.ts'),
      server: { port: 0, host: '127.0.0.1' },
    });
    await dev.listen();
    url = dev.resolvedUrls!.local[0]!.replace(/\/$/, '');
  }, 60_000);

  afterAll(async () => {
    await dev?.close();
  });

  const refresh = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${url}/_comfortable/refresh`, { method: 'POST', headers, body });
  const sign = (body: string, key = secret) => signWebhook(key, body);
  /** The title of document 102 as the virtual module has it, and as a module importing it has it. */
  const cherry = async () => {
    const module = await dev.ssrLoadModule('virtual:comfortable/collections/news');
    const importer = await dev.ssrLoadModule('/src/entry.ts');
    return [(module.getEntry('102') as Json).fields.title, importer.summary.cherries];
  };

  it('refuses an unsigned refresh and syncs nothing', async () => {
    expect(await cherry()).toEqual(['cherry season', 'cherry season']);
    const before = requests.length;
    const body = JSON.stringify({ repository: 'tiny', changed: ['102'], removed: [] });
    expect((await refresh(body)).status).toBe(401);
    expect((await refresh(body, sign(body, 'not-the-secret-0123456789'))).status).toBe(401);
    expect(requests.length).toBe(before);
  });

  it('invalidates the virtual modules on a signed refresh', async () => {
    const edited = structuredClone(tiny);
    const doc = edited.documents.find((d: Json) => d.meta.id === '102');
    doc.fields.title.en_US = 'Cherry season, revised';
    doc.meta.updatedAt = '2025-01-01T00:00:00.000Z';
    await server.replaceSnapshot(edited);
    expect(await cherry()).toEqual(['cherry season', 'cherry season']); // nothing synced yet

    const body = JSON.stringify({ repository: 'tiny', changed: ['102'], removed: [] });
    const response = await refresh(body, sign(body));
    expect(response.status).toBe(200);
    const { changeset } = (await response.json()) as Json;
    expect(changeset.sources['collection:news'].updated).toEqual(expect.arrayContaining(['102']));
    expect(changeset.sources['alias:home']).toEqual({ added: [], updated: [], removed: [] });

    expect(await cherry()).toEqual(['Cherry season, revised', 'Cherry season, revised']);
  });
});

describe('a copy (a snapshot file)', () => {
  it('is not served by the Vite plugin: the snapshot option is refused with what to do instead', async () => {
    const { comfortableVite } = await import('../src/vite/index.ts');
    expect(() => comfortableVite({ snapshot: 'content/tiny.json' } as never)).toThrow(
      'Invalid option snapshot: the Vite plugin does not serve a copy. Serve it with npx comfortable-loader serve content/tiny.json and point baseUrl and apiKey (CMFT_BASE_URL, CMFT_API_KEY) at it',
    );
  });

  it('named by CMFT_SNAPSHOT, it gets a warning that the plugin asks the CMS', async () => {
    const { comfortableVite } = await import('../src/vite/index.ts');
    const warnings: string[] = [];
    const logger = { ...createLogger('silent'), warn: (message: string) => void warnings.push(message) };
    const envDir = await mkdtemp(join(tmpdir(), 'comfortable-vite-env-'));
    try {
      await writeFile(join(envDir, '.env'), 'CMFT_SNAPSHOT=content/tiny.json\n');
      await resolveConfig(
        {
          root: app,
          configFile: false,
          envDir,
          customLogger: logger,
          cacheDir: join(work, 'vite-cache-env'),
          plugins: [comfortableVite({ repository: 'tiny', collections: { news: {} } })],
        },
        'build',
      );
    } finally {
      await rm(envDir, { recursive: true, force: true });
    }
    expect(warnings).toEqual([
      `CMFT_SNAPSHOT is set (content/tiny.json), but the Vite plugin does not serve a copy: it asks ${server.url}. Serve the copy with npx comfortable-loader serve content/tiny.json and set CMFT_BASE_URL and CMFT_API_KEY to its URL and local key.`,
    ]);
  });
});
