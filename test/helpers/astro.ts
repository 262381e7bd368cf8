import { spawn } from 'node:child_process';
import { cp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Fixture projects run as users run them: each test file works on its own copy (Astro keeps
 * `.astro/`, `node_modules/.astro` and `dist/` in the project), and the CLIs run as child
 * processes, so every build starts with fresh process state, like `astro build` in CI.
 */

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const astroCli = join(repoRoot, 'node_modules/astro/bin/astro.mjs');

/** Copies `test/fixtures/<fixture>` to `test/.tmp/<name>`, at the same depth, so its relative imports of `src/` resolve. */
export async function copyFixture(fixture: string, name: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = join(repoRoot, 'test/.tmp', `${name}-${process.pid}`);
  await rm(dir, { recursive: true, force: true });
  await cp(join(repoRoot, 'test/fixtures', fixture), dir, { recursive: true });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** The environment of a user's shell: without vitest's own variables (Astro's dev server serves no pages under VITEST) and CI. */
function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const rest = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(VITEST.*|TEST|NODE_ENV|CI)$/.test(key)),
  );
  return { ...rest, ASTRO_TELEMETRY_DISABLED: '1', ASTRO_DISABLE_UPDATE_CHECK: 'true', NO_COLOR: '1', ...env };
}

/** Runs `astro <args>` in a project; the output is stdout and stderr as they came. */
export function runAstro(
  root: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<{ code: number | null; output: string }> {
  return run(process.execPath, [astroCli, ...args], { cwd: root, env });
}

/** Runs a command; the output is stdout and stderr as they came. */
export function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: childEnv(options.env ?? {}) });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** A running `astro dev`, or a built server. */
export interface AstroDev {
  /** Such as `http://127.0.0.1:4321` */
  url: string;
  /** Everything the dev server printed so far. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `astro dev` on a port and resolves when it serves. */
export function startAstroDev(
  root: string,
  port: number,
  env: Record<string, string | undefined> = {},
): Promise<AstroDev> {
  return serve(
    root,
    [astroCli, 'dev', '--port', String(port), '--host', '127.0.0.1'],
    env,
    /Local\s+(http:\/\/\S+?)\/?\s/,
  );
}

/** Starts the server `astro build` made with `@astrojs/node` in standalone mode, as a host runs it, and resolves when it serves. */
export function startBuiltServer(
  root: string,
  port: number,
  env: Record<string, string | undefined> = {},
): Promise<AstroDev> {
  return serve(
    root,
    [join(root, 'dist/server/entry.mjs')],
    { ...env, HOST: '127.0.0.1', PORT: String(port) },
    /Server listening on (http:\/\/\S+?)\/?\s/,
  );
}

/** Runs a Node process in `root` and resolves once its output shows the URL `listening` captures. */
function serve(
  root: string,
  args: string[],
  env: Record<string, string | undefined>,
  listening: RegExp,
): Promise<AstroDev> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, env: childEnv(env) });
    let output = '';
    const exited = new Promise<void>((done) => child.on('close', () => done()));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const local = listening.exec(output);
      if (local) resolve({ url: local[1]!, output: () => output, stop });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', reject);
    void exited.then(() => reject(new Error(`${args.join(' ')} exited before serving:\n${output}`)));
  });
}

/** A port nothing listens on now, for a dev server whose URL must be known before it starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}
