import { readFileSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installPackages } from './installed-site.ts';
import { type ReadmeFile, readmeFiles } from './readme.ts';

/**
 * docs/live.md as a site: test/fixtures/astro-live-docs (a package.json and the tsconfig of
 * `npm create astro`) with every file the page names (its code blocks with a `title`) written in
 * as they stand, and exactly the packages the page tells the reader to install (its
 * `npm install` lines, beside the astro of `npm create astro`), so the page and its test cannot
 * drift: a file that needs a package the page does not name (`@types/node` for `Buffer`) fails
 * `astro check` here as it does for the reader.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
export const liveDocPath = join(root, 'docs/live.md');

/** The files docs/live.md names, in order. */
export function liveDocFiles(): ReadmeFile[] {
  return readmeFiles(readFileSync(liveDocPath, 'utf8'));
}

/** The packages docs/live.md's `npm install` lines name: with `-D`, as devDependencies. */
export function liveDocInstalls(): { dependencies: string[]; devDependencies: string[] } {
  const installs = { dependencies: [] as string[], devDependencies: [] as string[] };
  for (const [, args] of readFileSync(liveDocPath, 'utf8').matchAll(/^npm install (.+)$/gm)) {
    const words = args!.trim().split(/\s+/);
    const dev = words.includes('-D') || words.includes('--save-dev');
    (dev ? installs.devDependencies : installs.dependencies).push(...words.filter((word) => !word.startsWith('-')));
  }
  return installs;
}

/**
 * Copies the fixture to a folder of its own outside this repository (whose node_modules would
 * give the site what the page does not name), writes the page's files into it and installs
 * what the page says.
 */
export async function liveDocsSite(name: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `${name}-`));
  await cp(join(root, 'test/fixtures/astro-live-docs'), dir, { recursive: true });
  for (const file of liveDocFiles()) {
    await mkdir(join(dir, file.path, '..'), { recursive: true });
    await writeFile(join(dir, file.path), file.text);
  }
  const { dependencies, devDependencies } = liveDocInstalls();
  await installPackages(dir, { dependencies: ['astro', ...dependencies], devDependencies });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
