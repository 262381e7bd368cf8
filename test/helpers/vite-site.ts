import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A plain Vite site of its own (no Astro) in a temporary folder, as a user writes it: its
 * vite.config.ts imports `comfortable-loader/vite`, which resolves to this checkout's dist/
 * (node_modules/comfortable-loader links to it), and vite is the repository's.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));

export interface ViteSite {
  dir: string;
  /** Writes a file of the site (folders made as needed). */
  write(path: string, text: string): Promise<void>;
  remove(): Promise<void>;
}

/** Makes a site with `files` (path → text) and a package.json of an ES module project. */
export async function viteSite(files: Record<string, string>): Promise<ViteSite> {
  const dir = await mkdtemp(join(tmpdir(), 'comfortable-vite-site-'));
  await mkdir(join(dir, 'node_modules'));
  await symlink(root, join(dir, 'node_modules/comfortable-loader'), 'dir');
  await symlink(join(root, 'node_modules/vite'), join(dir, 'node_modules/vite'), 'dir');
  const write = async (path: string, text: string) => {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  };
  await write('package.json', JSON.stringify({ name: 'vite-site', private: true, type: 'module' }, null, 2));
  for (const [path, text] of Object.entries(files)) await write(path, text);
  return { dir, write, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Runs the `vite` command line in `dir`, as a user's shell would (no CMFT_* but those given);
 * resolves with its exit code and everything it printed.
 */
export function viteCli(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!/^(VITEST|NODE_ENV$|TEST$|CI$|CMFT_|FIXTURE_)/.test(name)) clean[name] = value;
  Object.assign(clean, { NO_COLOR: '1', ...env });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'node_modules/vite/bin/vite.js'), ...args], {
      cwd: dir,
      env: clean,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** Occurrences of `text` in `output`. */
export const count = (output: string, text: string): number => output.split(text).length - 1;
