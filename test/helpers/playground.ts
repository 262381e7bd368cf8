import { spawn } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { demoKey, demoSnapshot } from './server.ts';

/**
 * Building the playground (`playground/`) against a local Read API, for the end-to-end tests.
 * Builds go to a temporary outDir and cache folder; the playground's `.astro/` folder is shared,
 * so builds from different test files take turns (a lock folder under test/.tmp/).
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const astro = join(root, 'node_modules/astro/bin/astro.mjs');
export const testTmp = join(root, 'test/.tmp');

/** Copies the demo snapshot and its images into `dir`; returns the snapshot's path there. */
export async function copyDemo(dir: string): Promise<string> {
  const content = join(root, 'playground/content');
  await cp(join(content, 'images'), join(dir, 'images'), { recursive: true });
  const snapshot = join(dir, 'demo.json');
  await cp(demoSnapshot, snapshot);
  return snapshot;
}

export interface BuildOptions {
  /** The Read API base URL. */
  baseUrl: string;
  outDir: string;
  /** Astro's cache folder; the content cache goes to its `comfortable/` folder. */
  cacheDir: string;
  /** Each sync's changeset is appended here as a JSON line (the config's `onSync`). */
  changesetFile?: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function withBuildLock<T>(run: () => Promise<T>): Promise<T> {
  const lock = join(testTmp, 'playground-build.lock');
  await mkdir(testTmp, { recursive: true });
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(await readFile(join(lock, 'pid'), 'utf8').catch(() => '0'));
      if (holder > 0 && !alive(holder))
        await rm(lock, { recursive: true, force: true }); // left by a killed run
      else await sleep(200);
    }
  }
  await writeFile(join(lock, 'pid'), String(process.pid));
  try {
    return await run();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

/** Runs `astro build --root playground`; resolves with its output, rejects with it when the build fails. */
export function buildPlayground(options: BuildOptions): Promise<string> {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!/^(VITEST|NODE_ENV$|TEST$|CMFT_)/.test(name)) env[name] = value;
  Object.assign(env, {
    CMFT_BASE_URL: options.baseUrl,
    CMFT_API_KEY: demoKey,
    CMFT_CACHE_DIR: options.cacheDir,
    ...(options.changesetFile ? { CMFT_CHANGESET_FILE: options.changesetFile } : {}),
    ASTRO_TELEMETRY_DISABLED: '1',
    ASTRO_DISABLE_UPDATE_CHECK: 'true',
  });
  return withBuildLock(
    () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, [astro, 'build', '--root', 'playground', '--outDir', options.outDir], {
          cwd: root,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.once('error', reject);
        child.once('exit', (code) =>
          code === 0 ? resolve(output) : reject(new Error(`astro build exited with ${code}:\n${output}`)),
        );
      }),
  );
}

/** Every file under a folder, recursively. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}
