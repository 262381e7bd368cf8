import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * `npm run bench`: runs each benchmark script in turn, each in its own Node process (the Node
 * running this one, 24 or later), printing its output as it comes, and exits non-zero if any of
 * them failed or missed a target. At the end it writes bench/RESULTS.md: when and on what it
 * ran, the command, each script's output, and which scripts failed or missed a target. That
 * file is only ever written by a run, so its numbers are always measured ones.
 * To add a benchmark, add its file to the list.
 */

const scripts = [
  'server.ts',
  'client.ts',
  'live.ts',
  'astro.ts',
  'astro-incremental.ts',
  'astro-chunked.ts',
  'sync.ts',
  'pull.ts',
];
const resultsFile = fileURLToPath(new URL('RESULTS.md', import.meta.url));
/** Lines of output RESULTS.md keeps, all scripts together, so that the file stays under ~400 lines. */
const outputBudget = 320;

const [major] = process.versions.node.split('.').map(Number);
if (major! < 24) {
  console.error(
    `The benchmarks need Node 24 or later (they run .ts files directly); this is Node ${process.versions.node}.`,
  );
  process.exit(2);
}

interface Outcome {
  script: string;
  /** stdout and stderr together, in the order they came. */
  output: string;
  /** Undefined when the script exited with 0. */
  failure: string | undefined;
  ms: number;
}

/** Runs one script, printing its output live and keeping a copy. */
function run(script: string): Promise<Outcome> {
  const started = performance.now();
  const child = spawn(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], {
    stdio: ['inherit', 'pipe', 'pipe'],
  });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    chunks.push(chunk);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    process.stderr.write(chunk);
    chunks.push(chunk);
  });
  return new Promise((resolve) => {
    child.once('error', (error) => chunks.push(Buffer.from(`\n${error.message}\n`)));
    // 'close' comes after both pipes are drained, so the copy is complete.
    child.once('close', (code, signal) =>
      resolve({
        script,
        output: Buffer.concat(chunks).toString(),
        failure: code === 0 ? undefined : (signal ?? `exit ${code}`),
        ms: performance.now() - started,
      }),
    );
  });
}

/**
 * The output as a terminal would show it, as lines: no ANSI codes, each line what is left after
 * its last carriage return (progress lines rewrite themselves), no trailing blank lines.
 */
function plainLines(output: string): string[] {
  const lines = output
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes
    .replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '')
    .split('\n')
    .map((line) => line.slice(line.lastIndexOf('\r') + 1).trimEnd());
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines;
}

/** How many lines each output may keep: all of the short ones, an equal share of what is left for the long ones. */
function shares(lengths: number[], budget: number): number[] {
  let left = budget;
  let others = lengths.length;
  let cap = budget;
  for (const length of [...lengths].sort((a, b) => a - b)) {
    const share = Math.floor(left / others);
    if (length > share) {
      cap = share;
      break;
    }
    left -= length;
    others--;
  }
  return lengths.map((length) => Math.min(length, cap));
}

/** Keeps `keep` lines: a few of the head (what ran), the rest from the tail (the tables and verdicts). */
function shorten(lines: string[], keep: number): string[] {
  if (lines.length <= keep) return lines;
  const head = Math.min(10, Math.floor(keep / 4));
  const tail = Math.max(0, keep - head - 1);
  return [
    ...lines.slice(0, head),
    `[… ${lines.length - head - tail} lines left out here; they were printed when the bench ran …]`,
    ...lines.slice(lines.length - tail),
  ];
}

/** A fence longer than any run of backticks in the text. */
function fence(lines: string[]): string {
  const longest = Math.max(
    2,
    ...lines.map((line) => Math.max(0, ...(line.match(/`+/g) ?? []).map((run) => run.length))),
  );
  return '`'.repeat(longest + 1);
}

/** The lines that report a missed target (not those shown for information). */
const missedTargets = (lines: string[]) =>
  lines.filter((line) => /\bMISSED\b/.test(line) && !/for information/.test(line));

function command(): string {
  const direct = `node ${['bench/index.ts', ...process.argv.slice(2)].join(' ')}`;
  return process.env.npm_lifecycle_event === 'bench'
    ? `npm run bench (${process.env.npm_lifecycle_script ?? direct})`
    : direct;
}

function results(outcomes: Outcome[], startedAt: Date, totalMs: number): string {
  const outputs = outcomes.map((outcome) => plainLines(outcome.output));
  const kept = shares(
    outputs.map((lines) => lines.length),
    outputBudget,
  );
  const cpu = cpus();
  const out = [
    '# Benchmark results',
    '',
    'Written by `npm run bench` (bench/index.ts) at the end of a run; do not edit it by hand.',
    '',
    `- Date: ${startedAt.toISOString()} (the run took ${(totalMs / 60_000).toFixed(1)} min)`,
    `- Node: ${process.version}`,
    `- CPUs: ${cpu.length} (os.cpus().length), ${cpu[0]?.model.trim() ?? 'model unknown'}`,
    `- Command: \`${command()}\``,
    '',
    '## Summary',
    '',
  ];
  for (const [i, outcome] of outcomes.entries()) {
    const missed = missedTargets(outputs[i]!);
    const status = outcome.failure === undefined ? 'passed' : `FAILED or missed a target (${outcome.failure})`;
    out.push(`- bench/${outcome.script}: ${status}, ${(outcome.ms / 1000).toFixed(0)} s`);
    for (const line of missed.slice(0, 8)) out.push(`  - ${line.trim()}`);
    if (missed.length > 8) out.push(`  - and ${missed.length - 8} more lines that say MISSED`);
  }
  for (const [i, outcome] of outcomes.entries()) {
    const lines = shorten(outputs[i]!, kept[i]!);
    out.push('', `## bench/${outcome.script}`, '', fence(lines), ...lines, fence(lines));
  }
  return `${out.join('\n')}\n`;
}

const startedAt = new Date();
const started = performance.now();
const outcomes: Outcome[] = [];
for (const script of scripts) {
  console.log(`\n=== bench/${script} ===\n`);
  outcomes.push(await run(script));
}
await writeFile(resultsFile, results(outcomes, startedAt, performance.now() - started));
console.log(`\nWrote ${resultsFile}`);

const failed = outcomes
  .filter((outcome) => outcome.failure !== undefined)
  .map((outcome) => `${outcome.script} (${outcome.failure})`);
if (failed.length > 0) {
  console.error(`\nFailed or missed a target: ${failed.join(', ')}`);
  process.exit(1);
}
