import { readFileSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyFixture } from './astro.ts';
import { type ReadmeFile, readmeFiles } from './readme.ts';

/**
 * docs/live.md as a site: test/fixtures/astro-live-docs (a package.json, so that
 * `comfortable-loader` is not this checkout by its own name, and a tsconfig) with every file the
 * page names (its code blocks with a `title`) written in as they stand, so the page and its test
 * cannot drift. The package is installed as a link to this checkout's source, so the pages import
 * `comfortable-loader` as a user's do, with no build of `dist/` first.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
export const liveDocPath = join(root, 'docs/live.md');

/** The files docs/live.md names, in order. */
export function liveDocFiles(): ReadmeFile[] {
  return readmeFiles(readFileSync(liveDocPath, 'utf8'));
}

/** Copies the fixture to test/.tmp/<name>, writes the page's files into it and installs the package. */
export async function liveDocsSite(name: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const site = await copyFixture('astro-live-docs', name);
  for (const file of liveDocFiles()) {
    await mkdir(join(site.dir, file.path, '..'), { recursive: true });
    await writeFile(join(site.dir, file.path), file.text);
  }
  await linkPackage(site.dir);
  return site;
}

/**
 * `node_modules/comfortable-loader` in the site: a package.json whose exports are the source
 * entry points, beside a link to `src/`. Vite and TypeScript resolve the link to this checkout,
 * outside any node_modules, so they compile the TypeScript as the site's own code.
 */
async function linkPackage(dir: string): Promise<void> {
  const target = join(dir, 'node_modules/comfortable-loader');
  await mkdir(target, { recursive: true });
  await symlink(join(root, 'src'), join(target, 'src'), 'dir');
  const exports = { '.': './src/index.ts', './astro': './src/astro/index.ts', './vite': './src/vite/index.ts' };
  await writeFile(
    join(target, 'package.json'),
    JSON.stringify({ name: 'comfortable-loader', type: 'module', exports }, null, 2),
  );
}
