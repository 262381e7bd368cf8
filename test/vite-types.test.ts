import { spawn } from 'node:child_process';
import { access, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../src/server/index.ts';
import { startTiny, tinyKey } from './helpers/server.ts';
import { installViteSite, packTarball } from './helpers/tarball.ts';
import { viteCli } from './helpers/vite-site.ts';

/**
 * Types in a plain Vite project that installed the packed package and has no astro at all,
 * checked by tsc with skipLibCheck false: nothing it imports (comfortable-loader/vite,
 * comfortable-loader/virtual, the declaration file the plugin writes) reaches a declaration
 * that imports astro, and the written declarations type each source's fields, so a page reads
 * `entries[0].fields.title` without a cast and a misspelt field does not compile.
 */

const files: Record<string, string> = {
  'vite.config.ts': `import { defineConfig } from 'vite';
import comfortable from 'comfortable-loader/vite';

export default defineConfig({
  plugins: [comfortable({ repository: 'tiny', collections: { news: {} }, aliases: ['home'] })],
  build: { ssr: 'src/main.ts' },
});
`,
  'tsconfig.json': JSON.stringify(
    {
      compilerOptions: {
        target: 'es2023',
        lib: ['es2023', 'dom'],
        module: 'esnext',
        moduleResolution: 'bundler',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['vite/client'],
      },
      include: ['src', 'vite.config.ts', 'comfortable.d.ts'],
    },
    null,
    2,
  ),
  'src/main.ts': `import { entries, getEntry } from 'virtual:comfortable/collections/news';
import germanNews from 'virtual:comfortable/collections/news/de_DE';
import home from 'virtual:comfortable/aliases/home';
import type { VirtualEntry } from 'comfortable-loader/vite';

export const title: string | null | undefined = entries[0].fields.title;
export const rating: number | null | undefined = getEntry('100')?.fields.rating;
export const germanTitle: string | undefined = germanNews[0].fields.title?.toUpperCase();
export const homeTitle: string | null | undefined = home.fields.title;
export const images: string[] = (entries[0].fields.images ?? []).map((image) => (image.kind === 'image' ? image.src : image.id));
export const generic: VirtualEntry = entries[0];
`,
};

let server: ReadApiServer;
let site: string;
let staging: string | undefined;

beforeAll(async () => {
  server = await startTiny();
  const packed = await packTarball();
  staging = packed.dir;
  // Outside the repository, whose node_modules hold astro.
  site = await mkdtemp(join(tmpdir(), 'comfortable-vite-types-'));
  await installViteSite(site, packed.tarball);
  for (const [path, text] of Object.entries(files)) await write(path, text);
}, 180_000);

afterAll(async () => {
  await server?.close();
  if (site) await rm(site, { recursive: true, force: true });
  if (staging) await rm(staging, { recursive: true, force: true });
});

async function write(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(site, path)), { recursive: true });
  await writeFile(join(site, path), text);
}

/** `tsc -p .` in the site, with its TypeScript; resolves with the exit code and what it printed. */
function tsc(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(site, 'node_modules/typescript/bin/tsc'), '-p', '.'], {
      cwd: site,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

describe('a Vite project without astro, checked with skipLibCheck false', () => {
  it('builds, and the build writes comfortable.d.ts at the Vite root', { timeout: 120_000 }, async () => {
    const { code, output } = await viteCli(site, ['build'], { CMFT_BASE_URL: server.url, CMFT_API_KEY: tinyKey });
    expect(code, output).toBe(0);
    expect(output).not.toContain(tinyKey);
    await expect(access(join(site, 'comfortable.d.ts'))).resolves.toBeUndefined();
  });

  it('passes tsc on code that reads the fields without a cast', { timeout: 120_000 }, async () => {
    const { code, output } = await tsc();
    expect(output).toBe('');
    expect(code).toBe(0);
  });

  it('fails tsc on a misspelt field; and has no astro, which the package root would need', {
    timeout: 120_000,
  }, async () => {
    await write(
      'src/typo.ts',
      "import { entries } from 'virtual:comfortable/collections/news';\n\nexport const title = entries[0].fields.titel;\n",
    );
    // The root re-exports the Astro integration, whose declarations import astro: proof that astro cannot be resolved here.
    await write('src/root.ts', "import type { Entry } from 'comfortable-loader';\n\nexport type RootEntry = Entry;\n");
    try {
      const { code, output } = await tsc();
      expect(code).not.toBe(0);
      expect(output).toContain("src/typo.ts(3,40): error TS2551: Property 'titel' does not exist");
      expect(output).toContain("Cannot find module 'astro'");
      expect(output.split('\n').filter((line) => line.includes('src/') && line.includes('error TS'))).toHaveLength(1);
    } finally {
      await rm(join(site, 'src/typo.ts'));
      await rm(join(site, 'src/root.ts'));
    }
  });
});
