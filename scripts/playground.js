// What `npm start` and `npm run dev` share: the local Read API on a snapshot, the Astro CLI on
// the playground, free ports, and stopping everything on Ctrl+C.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { startServer } from '../dist/server/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const astro = fileURLToPath(new URL('../node_modules/astro/bin/astro.mjs', import.meta.url));

export const demoSnapshot = fileURLToPath(new URL('../playground/content/demo.json', import.meta.url));
export const demoKey = 'demo-read-key-0123456789abcdef';

const children = new Set();
let api;

/** The preferred port if nothing listens on it, else a free one. */
export function freePort(preferred) {
  const probe = (port) =>
    new Promise((resolve, reject) => {
      const socket = createServer();
      socket.once('error', reject);
      socket.listen(port, '127.0.0.1', () => {
        const { port: bound } = socket.address();
        socket.close(() => resolve(bound));
      });
    });
  return probe(preferred).catch(() => probe(0));
}

/** Starts the Read API on the snapshot, on `port` or, if it is busy, on a free one. */
export async function startApi(snapshot, port, options = {}) {
  try {
    api = await startServer({ paths: [snapshot], port, ...options });
  } catch (error) {
    if (error.code !== 'EADDRINUSE' || port === 0) throw error;
    console.log(`Port ${port} is busy; the Read API takes a free one.`);
    api = await startServer({ paths: [snapshot], port: 0, ...options });
  }
  return api;
}

/** The environment the playground's astro.config.mjs reads. */
export function playgroundEnv(server, extra = {}) {
  return {
    ...process.env,
    CMFT_BASE_URL: server.url,
    CMFT_API_KEY: demoKey,
    ASTRO_TELEMETRY_DISABLED: '1',
    ASTRO_DISABLE_UPDATE_CHECK: 'true',
    ...extra,
  };
}

/**
 * Runs the Astro CLI on the playground with the same Node; its output is passed on, and
 * `onOutput` sees the standard output too. Resolves `exited` with the exit code.
 */
export function astroCli(args, env, onOutput) {
  const child = spawn(process.execPath, [astro, ...args, '--root', 'playground'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(child);
  child.stdout.on('data', (chunk) => {
    process.stdout.write(chunk);
    onOutput?.(chunk.toString());
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
  void exited.then(() => children.delete(child));
  return { child, exited };
}

/** Stops the Astro processes and the Read API, then exits. */
export async function stopAll(code = 0) {
  for (const child of children) child.kill('SIGTERM');
  await api?.close();
  process.exit(code);
}

process.once('SIGINT', () => void stopAll(0));
process.once('SIGTERM', () => void stopAll(0));
