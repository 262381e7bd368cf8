import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { fixture } from './server.ts';

/** The command-line interface, run from source as a child process. */
const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface CliRun {
  child: ChildProcessWithoutNullStreams;
  /** The next line the command prints on stdout. */
  nextLine(): Promise<string>;
  /** Everything printed on stdout after the lines read so far, and the exit, once the process ends. */
  exit(): Promise<{ code: number | null; signal: NodeJS.Signals | null; rest: string[]; stderr: string }>;
}

/** Runs `comfortable-loader <args>` in a process of its own, with `env` added to this one's. */
export function runCli(args: string[], env: Record<string, string> = {}): CliRun {
  const child = spawn(process.execPath, [cli, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const reader = waiting.shift();
    if (reader) reader(line);
    else lines.push(line);
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    nextLine: () =>
      lines.length > 0 ? Promise.resolve(lines.shift()!) : new Promise<string>((resolve) => waiting.push(resolve)),
    exit: async () => ({ ...(await exited), rest: lines, stderr }),
  };
}

export interface ServeProcess {
  run: CliRun;
  firstLine: string;
  /** The base URL it printed, ending in `/v1`. */
  url: string;
  /** `http://host:port` */
  origin: string;
  port: number;
  /** Stops the process (SIGTERM) and waits for its exit. */
  stop(): Promise<void>;
}

/** Starts `serve` (on the tiny fixture unless `paths` are given) on a free port, in a process of its own. */
export async function serveProcess(
  options: { paths?: string[]; flags?: string[]; env?: Record<string, string> } = {},
): Promise<ServeProcess> {
  const started = runCli(
    ['serve', ...(options.paths ?? [fixture('tiny.json')]), '--port', '0', ...(options.flags ?? [])],
    options.env,
  );
  const firstLine = await Promise.race([
    started.nextLine(),
    started.exit().then(({ code, stderr }) => {
      throw new Error(`serve exited with code ${code} before printing its URL: ${stderr}`);
    }),
  ]);
  const url = /(http:\/\/\S+\/v1)\b/.exec(firstLine)?.[1];
  if (!url) throw new Error(`no base URL in ${JSON.stringify(firstLine)}`);
  const origin = url.slice(0, -'/v1'.length);
  return {
    run: started,
    firstLine,
    url,
    origin,
    port: Number(new URL(origin).port),
    async stop() {
      if (started.child.exitCode === null && started.child.signalCode === null) started.child.kill('SIGTERM');
      await started.exit();
    },
  };
}

/**
 * Starts a client in a process of its own that GETs `url` again and again over one connection,
 * measuring how long each answer takes; `stop` ends it and gives the waits in ms. In its own
 * process, the client measures the server, not the work of the process that runs the test.
 */
export async function startProbe(url: string, authorization: string): Promise<{ stop(): Promise<number[]> }> {
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL('./probe-child.ts', import.meta.url)), url, authorization],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  if ((await lines.next()).value !== 'ready') throw new Error('the probe did not start');
  return {
    async stop() {
      child.stdin.end();
      const { value } = await lines.next();
      return JSON.parse(value as string) as number[];
    },
  };
}

export interface SyncProcess {
  child: ChildProcessWithoutNullStreams;
  /** Every line printed so far. */
  lines: string[];
  /** Resolves with the first line that matches, as it is printed. */
  line(pattern: RegExp): Promise<string>;
  /** The exit (a signal when killed), with every line printed. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: string[]; stderr: string }>;
}

/** Runs `sync(config)` in a process of its own (test/helpers/sync-process.ts), as a sync in CI or a second terminal would. */
export function syncProcess(config: object, env: Record<string, string> = {}): SyncProcess {
  const child = spawn(
    process.execPath,
    [fileURLToPath(new URL('./sync-process.ts', import.meta.url)), JSON.stringify(config)],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } },
  );
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve(line: string): void }[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const waiter of [...waiters]) {
      if (waiter.pattern.test(line)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(line);
      }
    }
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; lines: string[]; stderr: string }>(
    (resolve) => child.on('close', (code, signal) => resolve({ code, signal, lines, stderr })),
  );
  return {
    child,
    lines,
    line: (pattern) => {
      const seen = lines.find((line) => pattern.test(line));
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiters.push({ pattern, resolve }));
    },
    exited,
  };
}
