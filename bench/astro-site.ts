import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What the Astro benchmarks (bench/astro*.ts) share: running `astro build` in a generated site
 * under /usr/bin/time -v (wall, CPU and peak RSS), compiling dist/ (the sites import the
 * packaged code), and reading the build log.
 */

export const root = fileURLToPath(new URL('..', import.meta.url));
const astroBin = join(root, 'node_modules/astro/bin/astro.mjs');
export const env = { ...process.env, ASTRO_TELEMETRY_DISABLED: '1', ASTRO_DISABLE_UPDATE_CHECK: 'true' };

/** The generated sites' content types, each held by the collection `all`. */
export const contentTypes = { article: 'all', author: 'all', category: 'all' };

/** A generated site's `src/content.config.ts`: one collection `all`, loaded by `comfortableLoader`. */
export const loaderContentConfig = `import { defineCollection } from 'astro:content';
import { comfortableLoader } from 'comfortable-loader/astro';
export const collections = { all: defineCollection({ loader: comfortableLoader({ collection: 'all' }) }) };
`;

/**
 * A generated site's `astro.config.mjs`: the integration on the bench repository; `extra` lines
 * go before it, `options` (source text, such as `incrementalOutput: false`) into its options.
 */
export function loaderAstroConfig(baseUrl: string, extra: string[] = [], options = ''): string {
  return `import { defineConfig } from 'astro/config';
import comfortable from 'comfortable-loader/astro';
export default defineConfig({
  cacheDir: './.cache',
${extra.map((line) => `  ${line}\n`).join('')}  integrations: [comfortable({ baseUrl: ${JSON.stringify(baseUrl)}, repository: 'bench', apiKey: 'bench-key', contentTypes: ${JSON.stringify(contentTypes)}${options ? `, ${options}` : ''} })],
});
`;
}

export interface Build {
  ms: number;
  /** User + system CPU time of the build. */
  cpuMs: number;
  maxRssMb: number;
  log: string;
}

export function run(
  command: string,
  args: string[],
  cwd: string,
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Compiles dist/ (what the sites import as `comfortable-loader`); returns how long it took. */
export async function buildDist(): Promise<number> {
  const started = performance.now();
  const tsc = await run(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    root,
  );
  if (tsc.code !== 0)
    console.log(
      `warning: tsc -p tsconfig.build.json reported errors (dist was still emitted):\n${(tsc.stdout + tsc.stderr).slice(0, 2000)}`,
    );
  return performance.now() - started;
}

/**
 * `astro build` in `site`, after removing its dist, .astro and cache folder (`cacheDir:
 * './.cache'`: the data store, the loader's cache, the incremental-build cache) when `cold`.
 * The log is kept in `<out>/<label>.log`; a failed build throws with the end of its log.
 * `extraEnv` is added to the build's environment.
 */
export async function astroBuild(
  site: string,
  cold: boolean,
  out: string,
  label: string,
  extraEnv: Record<string, string> = {},
): Promise<Build> {
  if (cold) for (const sub of ['dist', '.astro', '.cache']) await rm(join(site, sub), { recursive: true, force: true });
  const timeFile = join(out, 'time.txt');
  const logFile = join(out, `${label}.log`);
  // Into a file, not a pipe: Astro exits as soon as it is done, before a pipe has taken its last
  // lines (30,000 page lines), and a file takes every line as it is written.
  const fd = openSync(logFile, 'w');
  const started = performance.now();
  let code: number | null;
  try {
    code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn('/usr/bin/time', ['-v', '-o', timeFile, process.execPath, astroBin, 'build'], {
        cwd: site,
        env: { ...env, ...extraEnv },
        stdio: ['ignore', fd, fd],
      });
      child.once('error', reject);
      child.once('close', resolve);
    });
  } finally {
    closeSync(fd);
  }
  const ms = performance.now() - started;
  const log = await readFile(logFile, 'utf8');
  if (code !== 0) throw new Error(`astro build in ${site} exited with ${code}:\n${log.slice(-4000)}`);
  const time = await readFile(timeFile, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}: ([\\d.]+)`).exec(time)?.[1]);
  const cpuMs = (field('User time \\(seconds\\)') + field('System time \\(seconds\\)')) * 1000;
  return { ms, cpuMs, maxRssMb: field('Maximum resident set size \\(kbytes\\)') / 1024, log };
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The log's lines without colours. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes
export const plain = (log: string) => log.split('\n').map((line) => line.replace(/\x1b\[[0-9;]*m/g, '').trimEnd());

/** The content layer's own lines of a build log: the loader's summary and the sync. */
export const contentLines = (log: string) =>
  plain(log)
    .map((line) => line.trim())
    .filter((line) => /\] Synced |documents? × |\[content\]/.test(line))
    .slice(0, 6);

/**
 * The pages a build wrote, from its log: each page's line is `├─ /en_US/1/index.html` followed
 * by ` (cached)` or ` (restored)` when the incremental build reused it, or by its render time.
 */
export function pagesOf(log: string): { rendered: string[]; reused: string[] } {
  const rendered: string[] = [];
  const reused: string[] = [];
  for (const line of plain(log)) {
    const match = /├─ (\S+)(?: \((cached|restored)\))?/.exec(line);
    if (match) (match[2] ? reused : rendered).push(match[1]!);
  }
  return { rendered, reused };
}

/** Milliseconds of an Astro time stat: `950ms`, `14.38s`, `1m 30s`. */
function astroTime(text: string): number {
  const match = /^(?:(\d+)m )?([\d.]+)(ms|s)$/.exec(text);
  if (!match) return NaN;
  return Number(match[1] ?? 0) * 60_000 + Number(match[2]) * (match[3] === 'ms' ? 1 : 1000);
}

/**
 * Two phases of a build, as Astro times them in its log: the content sync (from the start to
 * `[types] Generated`: the config, the loaders, the data store) and the pages (`generating
 * static routes`: getStaticPaths, then each page rendered or reused).
 */
export function phasesOf(log: string): { contentMs: number; pagesMs: number } {
  const lines = plain(log);
  const content = lines.map((line) => /\[types\] Generated (.+)$/.exec(line)?.[1]).find((t) => t !== undefined);
  const start = lines.findIndex((line) => /generating static routes/.test(line));
  const pages = lines
    .slice(start + 1)
    .map((line) => /^\S+ ✓ Completed in (.+)\.$/.exec(line)?.[1])
    .find((t) => t !== undefined);
  return {
    contentMs: content ? astroTime(content.trim()) : NaN,
    pagesMs: start >= 0 && pages ? astroTime(pages) : NaN,
  };
}
