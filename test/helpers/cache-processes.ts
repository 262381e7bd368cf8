import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Processes around a cache that this test process never opens, for faults that its own
 * connections would hide: while any process holds a connection, SQLite keeps the shared memory
 * of the write-ahead log alive, so a reader opened here never meets what a killed writer left.
 */

/** What `openCache(dir)` gave in a process of its own (test/helpers/open-cache-process.ts). */
export type OpenedCache =
  | { cache: null }
  | { cache: { lastSync: string; records: number; members: string[]; titleOf1001: unknown; read: number } }
  | { error: { name: string; code?: string; message: string; errcode?: number } };

/** Opens the cache in `dir` with `openCache` in a process that never opened it to write, as a build or the `types` command does. */
export function openCacheInProcess(dir: string): Promise<OpenedCache> {
  const script = fileURLToPath(new URL('./open-cache-process.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--no-warnings', script, dir], (error, stdout, stderr) => {
      if (error) reject(new Error(`${error.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as OpenedCache);
    });
  });
}

/** Whether `strace` can run here (it stops a process at an exact system call). */
export function canTrace(): boolean {
  try {
    execFileSync('strace', ['-qq', '-o', '/dev/null', process.execPath, '-e', '0'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `sync(config)` in a process of its own (test/helpers/sync-process.ts) and kills it with
 * SIGKILL the instant it first removes `path`, before the file is gone: the one moment a
 * timer in the test cannot hit. Resolves with the exit, the lines printed and the signal.
 */
export function syncKilledWhenRemoving(
  config: object,
  path: string,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> {
  const script = fileURLToPath(new URL('./sync-process.ts', import.meta.url));
  const traced = [
    '-f',
    '-qq',
    '-o',
    '/dev/null',
    '-P',
    path,
    '-e',
    'trace=unlink,unlinkat',
    '-e',
    'inject=unlink,unlinkat:error=EIO:signal=KILL:when=1',
  ];
  return new Promise((resolve) => {
    const child = execFile('strace', [...traced, process.execPath, script, JSON.stringify(config)], (error, stdout) => {
      resolve({
        code: child.exitCode,
        signal: child.signalCode ?? (error as { signal?: NodeJS.Signals } | null)?.signal ?? null,
        stdout,
      });
    });
  });
}

/** Runs a command (one that needs root, such as mount); false when it cannot. */
export function tryRun(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
