import { execFile, spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { copyDemo } from './playground.ts';

/**
 * The package as a user gets it: packed by `npm pack` into a tarball, and a site of their own
 * that installs that tarball. The package is packed from a copy of this checkout (what `npm
 * pack` reads: package.json, the tsconfigs, src, and what package.json's "files" name but dist),
 * so that the build `npm pack` runs (`prepack`) never rewrites the `dist/` other tests read.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** Packs the package in a staging copy under test/.tmp; resolves to the tarball's path and the files it holds. */
export async function packTarball(): Promise<{ tarball: string; files: string[]; dir: string }> {
  await mkdir(join(root, 'test/.tmp'), { recursive: true });
  // Inside the repository, so that the build finds TypeScript and @types/node in its node_modules.
  const dir = await mkdtemp(join(root, 'test/.tmp/tarball-'));
  const { files } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { files: string[] };
  const shipped = files.filter((name) => name !== 'dist'); // the build makes dist
  for (const name of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'LICENSE', 'src', ...shipped]) {
    await cp(join(root, name), join(dir, name), { recursive: true });
  }
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir, '--no-audit', '--no-fund'], {
    cwd: dir,
    maxBuffer: 16 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  return { tarball: join(dir, packed!.filename), files: packed!.files.map((file) => file.path), dir };
}

/**
 * Makes `dir` a site whose package.json depends on astro and on the tarball, installed the way
 * npm installs a tarball (unpacked into node_modules/comfortable-loader). Every other package
 * is a link to this repository's node_modules, so no registry is needed and astro is the one
 * the repository tests with.
 */
export async function installSite(dir: string, tarball: string, astroVersion: string): Promise<void> {
  await installTarball(dir, tarball, () => true);
  const manifest = {
    name: 'tarball-site',
    private: true,
    type: 'module',
    dependencies: { astro: astroVersion, 'comfortable-loader': `file:${tarball}` },
  };
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
}

/**
 * Makes `dir` a plain Vite site (no Astro) that installed the tarball: as `installSite`, but
 * astro and @astrojs/* are not linked, so that nothing the site imports can reach them
 * unnoticed. `dir` must be outside this repository, whose node_modules would provide them.
 */
export async function installViteSite(dir: string, tarball: string): Promise<void> {
  await installTarball(dir, tarball, (name) => name !== 'astro' && name !== '@astrojs');
  const manifest = {
    name: 'vite-tarball-site',
    private: true,
    type: 'module',
    dependencies: { vite: '*', 'comfortable-loader': `file:${tarball}` },
  };
  await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
}

/** Unpacks the tarball into `dir`/node_modules/comfortable-loader and links the repository's packages that `link` accepts. */
async function installTarball(dir: string, tarball: string, link: (name: string) => boolean): Promise<void> {
  const modules = join(dir, 'node_modules');
  const target = join(modules, 'comfortable-loader');
  await mkdir(target, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', target, '--strip-components=1']);
  for (const name of await readdir(join(root, 'node_modules'))) {
    // Dot folders hold caches (.astro, .vite) that the site must keep to itself.
    if (name.startsWith('.') || name === 'comfortable-loader' || !link(name)) continue;
    await symlink(join(root, 'node_modules', name), join(modules, name));
  }
}

/** Runs `astro build` in a site; resolves with its exit code and everything it printed. */
export function astroBuild(
  dir: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  return astro(dir, ['build'], env);
}

/** Runs `astro <args>` in a site, as a user's shell would (no CMFT_* but those given); resolves with its exit code and everything it printed. */
export function astro(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  return runIn(dir, [join(dir, 'node_modules/astro/bin/astro.mjs'), ...args], env);
}

/** Runs the installed package's CLI in a site: `comfortable-loader <args>`. */
export function packageCli(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  return runIn(dir, [join(dir, 'node_modules/comfortable-loader/dist/cli.js'), ...args], env);
}

function runIn(
  dir: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!/^(VITEST|NODE_ENV$|TEST$|CI$|CMFT_)/.test(name)) clean[name] = value;
  Object.assign(clean, { ASTRO_TELEMETRY_DISABLED: '1', ASTRO_DISABLE_UPDATE_CHECK: 'true', NO_COLOR: '1', ...env });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: dir, env: clean, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** The demo snapshot and its images, copied into `dir`, less its deliberate dangling reference (a warning a build rightly prints); returns the snapshot's path. */
export async function demoWithoutDangling(dir: string): Promise<string> {
  const path = await copyDemo(dir);
  const snapshot = JSON.parse(await readFile(path, 'utf8'));
  for (const document of snapshot.documents) {
    const related = document.fields.relatedPosts as { meta: { id: string } }[] | undefined;
    if (related) document.fields.relatedPosts = related.filter((ref) => ref.meta.id !== '100000000000000999');
  }
  await writeFile(path, JSON.stringify(snapshot));
  return path;
}

/** The tsconfig.json of a site made with create-astro. */
export const astroTsconfig = JSON.stringify(
  { extends: 'astro/tsconfigs/strict', include: ['.astro/types.d.ts', '**/*'], exclude: ['dist'] },
  null,
  2,
);
