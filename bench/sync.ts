import { type ChildProcess, fork } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Weight, weights as allWeights } from '../test/helpers/generate-snapshot.ts';

/**
 * The sync engine on 10,000 and 100,000 documents × 3 locales (test/helpers/generate-snapshot.ts, seed 7), each
 * size in both weights (full, and light: less text, fewer related articles, no gallery; a cold
 * sync downloads about 40% of the bytes of a full one). For each size and weight, three kinds of
 * sync on one cache: cold (empty cache), warm with no change, and warm after 1% of the documents
 * changed (title edited, updatedAt and revision bumped, swapped in with `replaceSnapshot`; other
 * documents each time, each run starting from the cache of the warm syncs). Config: the
 * collection `all` (every document; includes 1, embedAssets) plus the aliases `home` and `about`.
 *
 * Then the floor of a warm sync with no change, which must at least list the stamps of every
 * member: the same id listing (`all`, `fields=meta(id,updatedAt,revision)`, `locale=all`, pages of
 * 1000) from the same server with plain undici and `JSON.parse` (bench/sync-floor.ts), two ways:
 * the pages one after the other, and 8 pages in flight (the first page alone, as it tells the
 * total, as the sync does).
 *
 * Each sync and each floor runs three times and the run of median time is reported, as wall
 * times on a shared machine vary by up to 2× from one run to the next; every run is printed.
 * Each runs in its own process (bench/sync-child.ts, bench/sync-floor.ts), so that each starts
 * as cold as the others and the peak RSS is the sync's alone; the server runs in another
 * (bench/sync-server.ts). Times leave out the start of the process: the sync's is that of
 * `sync()`, the floor's from its first request to its last page parsed. The cold sync is the
 * baseline of the × cold ratios.
 *
 * Targets, at every size and weight unless said otherwise (exit code 1 when one is missed):
 * - a warm sync with no change downloads no document (only id listings and 304s);
 * - 1% changed costs under 5% of the cold time;
 * - a warm sync with no change takes at most 1.5× its floor (8 pages in flight, as the sync asks
 *   them; the ratio to the pages one after the other is printed too), at 100,000 documents; below, the ratio is shown for information (at 10,000 the floor is about
 *   13 ms, within the noise of a process's start);
 * - the peak RSS of the syncing process is under 600 MB at 100,000 (the highest of every run).
 *
 * `--assets N` generates N assets instead of the generator's default (at most 400): with as many
 * as the articles, a repository of about one asset per article, which a warm sync checks one by
 * one (the API lists no assets). `npm run bench` runs the default.
 *
 * Usage: node bench/sync.ts [documents...] [--weight full|light|both] [--assets N]   (default 10000 100000, both, up to 400 assets)
 */

const usage =
  'Usage: node bench/sync.ts [documents...] [--weight full|light|both] [--assets N]   (default 10000 100000, both, up to 400 assets)';
const seed = 7;
/** Runs of each kind of sync, and of each floor. */
const runs = 3;
/** The pages in flight of the concurrent floor: the sync's own lookahead and limit. */
const inFlight = 8;
/** At this size and above, the floor and RSS targets count. */
const bigSize = 100_000;
const floorTarget = 1.5;
const rssTargetMb = 600;
const here = new URL('.', import.meta.url).pathname;

/** The sizes and weights asked on the command line; exits with the usage when they make no sense. */
function parseArguments(args: string[]): { sizes: number[]; weights: Weight[]; assets: number | undefined } {
  const sizes: number[] = [];
  let weight = 'both';
  let assets: number | undefined;
  // `--name=value` is read as `--name value`.
  const words = args.flatMap((arg) =>
    /^--\w+=/.test(arg) ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg],
  );
  for (let i = 0; i < words.length; i++) {
    const arg = words[i]!;
    if (arg === '--weight') weight = words[++i] ?? '';
    else if (arg === '--assets') {
      const value = words[++i] ?? '';
      if (!/^\d+$/.test(value) || Number(value) < 1) fail(`--assets is a whole number of 1 or more, not "${value}"`);
      assets = Number(value);
    } else if (/^\d+$/.test(arg) && Number(arg) >= 7) sizes.push(Number(arg));
    else fail(`not a size (a whole number of documents, 7 or more) nor --weight nor --assets: ${arg}`);
  }
  if (weight !== 'both' && !allWeights.includes(weight as Weight))
    fail(`--weight is full, light or both, not "${weight}"`);
  return {
    sizes: sizes.length > 0 ? sizes : [10_000, 100_000],
    weights: weight === 'both' ? [...allWeights] : [weight as Weight],
    assets,
  };
}

function fail(message: string): never {
  console.error(`${message}\n${usage}`);
  process.exit(2);
}

const { sizes, weights, assets } = parseArguments(process.argv.slice(2));

interface ChildResult {
  ms: number;
  cpuMs: number;
  stats: { requests: number; notModified: number; bytes: number; ms: number; written: number };
  records: number;
  changes: { added: number; updated: number; removed: number };
  warnings: number;
  kinds: Record<string, { requests: number; bytes: number }>;
  maxRssMb: number;
}

interface FloorResult {
  ms: number;
  pages: number;
  bytes: number;
  records: number;
}

/** One size in one weight. */
interface Case {
  documents: number;
  weight: Weight;
}

interface Row extends Case {
  name: string;
  /** The run of median time. */
  result: ChildResult;
  all: ChildResult[];
}

interface Floor extends Case {
  /** 1: the pages one after the other. */
  inFlight: number;
  /** The run of median time. */
  result: FloorResult;
  all: FloorResult[];
}

/** The syncs and floors of one case. */
interface Measured {
  rows: Row[];
  floors: Floor[];
}

/** Waits for the next IPC message of a type from a child. */
function next<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type?: string }) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null) =>
      reject(new Error(`the server process exited (${code}) while waiting for "${type}"`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Runs a script of bench/ in its own process with its config as argv[2]; resolves with the one message it sends. */
function runChild<T>(script: string, config: object): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = fork(join(here, script), [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    let result: T | undefined;
    child.once('message', (message) => (result = message as T));
    child.once('error', reject);
    child.once('exit', (code) =>
      result && code === 0 ? resolve(result) : reject(new Error(`bench/${script} exited with ${code}`)),
    );
  });
}

const median = <T extends { ms: number }>(all: T[]): T =>
  [...all].sort((a, b) => a.ms - b.ms)[Math.floor(all.length / 2)]!;
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const kib = (bytes: number) => (bytes < 2 ** 20 ? `${(bytes / 1024).toFixed(1)} KiB` : mb(bytes));
const seconds = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${(ms / 1000).toFixed(1)} s`);
const millis = (ms: number) => (ms < 100 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(0)} ms`);
const int = (n: number) => n.toLocaleString('en');
const label = ({ documents, weight }: Case) => `${int(documents)} ${weight}`;
const floorName = (inFlight: number) => (inFlight === 1 ? 'one after the other' : `${inFlight} in flight`);
const describeKinds = (kinds: ChildResult['kinds']) =>
  Object.entries(kinds)
    .sort((a, b) => b[1].requests - a[1].requests)
    .map(([kind, { requests, bytes }]) => `${requests} ${kind} (${kib(bytes)})`)
    .join(', ');

async function benchCase(documents: number, weight: Weight): Promise<Measured> {
  const server = fork(
    join(here, 'sync-server.ts'),
    [String(documents), String(seed), weight, ...(assets ? [String(assets)] : [])],
    { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const cacheDir = await mkdtemp(join(tmpdir(), 'bench-sync-'));
  const warmCopy = `${cacheDir}-warm`;
  const rows: Row[] = [];
  const floors: Floor[] = [];
  try {
    const ready = await next<{ url: string; generateMs: number; startMs: number; rssMb: number }>(server, 'ready');
    const config = {
      baseUrl: ready.url,
      repository: 'bench',
      apiKey: 'bench-key',
      collections: { all: { includes: 1 } },
      aliases: ['home', 'about'],
      cacheDir,
    };
    /** Runs one kind of sync `runs` times, `before` each run. */
    const step = async (name: string, before: (run: number) => Promise<void>) => {
      const all: ChildResult[] = [];
      for (let run = 0; run < runs; run++) {
        await before(run);
        const result = await runChild<ChildResult>('sync-child.ts', config);
        server.send({ type: 'mark' });
        const tally = await next<{ kinds: Record<string, { count: number; totalMs: number; maxMs: number }> }>(
          server,
          'tally',
        );
        const slowest = Object.entries(tally.kinds).sort((a, b) => b[1].maxMs - a[1].maxMs)[0];
        all.push(result);
        console.log(
          `  ${name} (${run + 1} of ${runs}): ${seconds(result.ms)}, ${describeKinds(result.kinds)}; ${int(result.stats.written)} records written, ` +
            `${result.changes.added}/${result.changes.updated}/${result.changes.removed} added/updated/removed` +
            (slowest ? `; slowest answer ${slowest[1].maxMs.toFixed(0)} ms (${slowest[0]})` : ''),
        );
      }
      rows.push({ documents, weight, name, result: median(all), all });
    };
    console.log(
      `${label({ documents, weight })} documents: snapshot generated in ${seconds(ready.generateMs)}, server started in ${seconds(ready.startMs)} (server RSS ${ready.rssMb.toFixed(0)} MB)`,
    );
    await step('cold', () => rm(cacheDir, { recursive: true, force: true }));
    await step('warm, no change', async () => {});
    // Each 1% run starts from the cache of the warm syncs, against other documents changed in the generated snapshot.
    await cp(cacheDir, warmCopy, { recursive: true });
    await step('warm, 1% changed', async (run) => {
      await rm(cacheDir, { recursive: true, force: true });
      await cp(warmCopy, cacheDir, { recursive: true });
      server.send({ type: 'change', fraction: 0.01, round: run });
      const changed = await next<{ count: number; reloadMs: number }>(server, 'changed');
      console.log(`  ${int(changed.count)} documents changed, snapshot swapped in ${seconds(changed.reloadMs)}`);
    });
    floors.push(...(await measureFloors({ documents, weight }, config)));
    server.send({ type: 'stop' });
    const stopped = await next<{ maxRssMb: number }>(server, 'stopped');
    console.log(`  server peak RSS ${stopped.maxRssMb.toFixed(0)} MB`);
    return { rows, floors };
  } finally {
    if (server.exitCode === null) server.kill();
    await rm(cacheDir, { recursive: true, force: true });
    await rm(warmCopy, { recursive: true, force: true });
  }
}

/**
 * Both floors, `runs` times each, taking turns to go first (so neither always follows the other).
 * The same listing whatever the server's documents are now: a change swaps stamps, not their count.
 */
async function measureFloors(
  of: Case,
  config: { baseUrl: string; repository: string; apiKey: string },
): Promise<Floor[]> {
  const ways = [1, inFlight];
  const all = new Map<number, FloorResult[]>(ways.map((way) => [way, []]));
  for (let run = 0; run < runs; run++) {
    for (const way of run % 2 === 0 ? ways : [...ways].reverse()) {
      const { baseUrl, repository, apiKey } = config;
      const result = await runChild<FloorResult>('sync-floor.ts', {
        baseUrl,
        repository,
        apiKey,
        collection: 'all',
        inFlight: way,
      });
      all.get(way)!.push(result);
      console.log(
        `  floor, ${floorName(way)} (${run + 1} of ${runs}): ${millis(result.ms)}, ${result.pages} pages (${kib(result.bytes)}), ${int(result.records)} stamps`,
      );
    }
  }
  return ways.map((way) => ({ ...of, inFlight: way, result: median(all.get(way)!), all: all.get(way)! }));
}

/** Prints a table, the first `left` columns aligned left, the others right. */
function printTable(header: string[], table: string[][], left: number): void {
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i < left ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  console.log(`\n${line(header)}`);
  for (const row of table) console.log(line(row));
}

const sameCase = (a: Case, b: Case) => a.documents === b.documents && a.weight === b.weight;

function printSyncs(rows: Row[]): void {
  const header = [
    'documents',
    'weight',
    'sync',
    'time',
    '× cold',
    'runs',
    'CPU',
    '× cold',
    'requests',
    '304',
    'received',
    '× cold',
    'written',
    'peak RSS',
  ];
  const table = rows.map((row) => {
    const { documents, weight, name, result, all } = row;
    const cold = rows.find((r) => sameCase(r, row) && r.name === 'cold')!.result;
    return [
      int(documents),
      weight,
      name,
      seconds(result.ms),
      (result.ms / cold.ms).toFixed(3),
      all.map((run) => (run.ms / 1000).toFixed(2)).join(' '),
      seconds(result.cpuMs),
      (result.cpuMs / cold.cpuMs).toFixed(3),
      int(result.stats.requests),
      int(result.stats.notModified),
      mb(result.stats.bytes),
      (result.stats.bytes / cold.stats.bytes).toFixed(4),
      int(result.stats.written),
      `${Math.max(...all.map((run) => run.maxRssMb)).toFixed(0)} MB`,
    ];
  });
  printTable(header, table, 3);
  console.log(
    `(cold = empty cache, the baseline of the × columns; each sync ran ${runs} times and the run of median time is shown, runs = every run's time in seconds; time = wall time of sync() in its process, CPU = that process's CPU time in it; received = body bytes of the answers; peak RSS = the highest of the runs)`,
  );
}

/** The median warm sync with no change beside its two floors. */
function printFloors(rows: Row[], floors: Floor[]): void {
  const header = [
    'documents',
    'weight',
    'warm, no change',
    'floor, one after the other',
    'warm ÷ floor',
    `floor, ${inFlight} in flight`,
    'warm ÷ floor',
    'floor runs (ms)',
  ];
  const table = floors
    .filter((floor) => floor.inFlight === 1)
    .map((serial) => {
      const warm = rows.find((r) => sameCase(r, serial) && r.name === 'warm, no change')!.result;
      const concurrent = floors.find((f) => sameCase(f, serial) && f.inFlight === inFlight)!;
      const runsOf = (floor: Floor) => floor.all.map((run) => run.ms.toFixed(0)).join(' ');
      return [
        int(serial.documents),
        serial.weight,
        millis(warm.ms),
        millis(serial.result.ms),
        `${(warm.ms / serial.result.ms).toFixed(2)}×`,
        millis(concurrent.result.ms),
        `${(warm.ms / concurrent.result.ms).toFixed(2)}×`,
        `${runsOf(serial)} / ${runsOf(concurrent)}`,
      ];
    });
  printTable(header, table, 2);
  console.log(
    `(floor = the warm sync's id listing alone, from the same server: undici Pool.request and JSON.parse, pages of 1000, in a process of its own; the run of median time of ${runs}; floor runs = one after the other / ${inFlight} in flight)`,
  );
}

/** Prints the verdict on each target; returns whether one that counts was missed. */
function checkTargets(rows: Row[], floors: Floor[]): boolean {
  let missed = false;
  const verdict = (ok: boolean, counts = true) => {
    if (!ok && counts) missed = true;
    return ok ? 'met' : 'MISSED';
  };
  const forInformation = (counts: boolean) =>
    counts ? '' : ` (for information: the target is set at ${int(bigSize)})`;
  console.log('');
  for (const documents of sizes) {
    for (const weight of weights) {
      const at: Case = { documents, weight };
      const of = (name: string) => rows.find((r) => sameCase(r, at) && r.name === name)!;
      const [cold, warm, changed] = [of('cold'), of('warm, no change'), of('warm, 1% changed')];
      // The sync asks its listing pages 8 at a time: its floor is the same listing asked the same way.
      const floor = floors.find((f) => sameCase(f, at) && f.inFlight === inFlight)!;
      const sequential = floors.find((f) => sameCase(f, at) && f.inFlight === 1)!;
      const big = documents >= bigSize;
      // A warm sync with no change may ask only id listings and conditional GETs (304), plus the
      // re-check of dangling targets, which answers no document; every run is checked.
      const documentBytes = Math.max(
        ...warm.all.map((run) =>
          Object.entries(run.kinds)
            .filter(([kind]) => kind !== 'id listing' && kind !== '304')
            .reduce((sum, [, k]) => sum + k.bytes, 0),
        ),
      );
      const noDocuments = warm.all.every((run) => run.stats.written === 0) && documentBytes < 1024;
      console.log(
        `${label(at)}: warm with no change downloads no document (${mb(documentBytes)} outside id listings and 304s): ${verdict(noDocuments)}`,
      );
      console.log(
        `${label(at)}: 1% changed under 5% of the cold time (medians: ${((changed.result.ms / cold.result.ms) * 100).toFixed(1)}%): ${verdict(changed.result.ms < cold.result.ms * 0.05)}`,
      );
      // Below 100,000 the floor is a few milliseconds, less than what starting a process varies by.
      const ratio = warm.result.ms / floor.result.ms;
      console.log(
        `${label(at)}: warm with no change at most ${floorTarget}× its floor, ${inFlight} pages in flight as the sync asks them (medians: ${millis(warm.result.ms)} ÷ ${millis(floor.result.ms)} = ${ratio.toFixed(2)}×; ${(warm.result.ms / sequential.result.ms).toFixed(2)}× the pages one after the other): ${verdict(ratio <= floorTarget, big)}${forInformation(big)}`,
      );
      // The floor must ask what the syncs' listings asked: the same bytes as the last sync's, which
      // listed the snapshot the floors listed (the 1% changes alter a few stamps' lengths).
      const listed = changed.all.at(-1)!.kinds['id listing']?.bytes ?? 0;
      if (listed !== floor.result.bytes)
        console.log(
          `${label(at)}: note: the floor received ${int(floor.result.bytes)} bytes, the last sync's id listings ${int(listed)}`,
        );
      const peak = Math.max(...[cold, warm, changed].flatMap((row) => row.all.map((run) => run.maxRssMb)));
      if (big)
        console.log(
          `${label(at)}: peak RSS of the sync under ${rssTargetMb} MB (${peak.toFixed(0)} MB): ${verdict(peak < rssTargetMb)}`,
        );
    }
  }
  return missed;
}

async function main(): Promise<void> {
  console.log(
    `sync: collection "all" (includes 1, embedAssets) + aliases home, about; locale=all; weights ${weights.join(', ')}${assets ? `; ${int(assets)} assets` : ''}; each sync and each floor in its own process\n`,
  );
  const rows: Row[] = [];
  const floors: Floor[] = [];
  for (const documents of sizes) {
    for (const weight of weights) {
      const measured = await benchCase(documents, weight);
      rows.push(...measured.rows);
      floors.push(...measured.floors);
    }
  }
  printSyncs(rows);
  printFloors(rows, floors);
  if (checkTargets(rows, floors)) process.exitCode = 1;
}

await main();
