import { type ChildProcess, fork } from 'node:child_process';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The sync engine on 10,000 and 100,000 documents × 3 locales (bench/generate.ts, seed 7),
 * three kinds of sync on one cache: cold (empty cache), warm with no change, and warm after 1%
 * of the documents changed (title edited, updatedAt and revision bumped, swapped in with
 * `replaceSnapshot`; other documents each time, each run starting from the cache of the warm
 * syncs). Config: the collection `all` (every document; includes 1, embedAssets) plus the
 * aliases `home` and `about`.
 *
 * Each kind runs three times and the run of median time is reported, as wall times on a shared
 * machine vary by up to 2× from one run to the next; every run is printed. Each sync runs in its
 * own process (bench/sync-child.ts) and the server in another (bench/sync-server.ts), so the
 * peak RSS is the sync's alone. The cold sync is the baseline of the ratios. Targets: a warm
 * sync with no change downloads no document (only id listings and 304s), 1% changed costs under
 * 5% of the cold time, peak RSS under 1 GB at 100,000 (the highest of every run).
 *
 * Usage: node bench/sync.ts [documents...]   (default 10000 100000)
 */

const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
if (sizes.length === 0) sizes.push(10_000, 100_000);
const seed = 7;
/** Runs of each kind of sync. */
const runs = 3;
const here = new URL('.', import.meta.url).pathname;

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

interface Row {
  documents: number;
  name: string;
  /** The run of median time. */
  result: ChildResult;
  all: ChildResult[];
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
    const onExit = (code: number | null) => reject(new Error(`the server process exited (${code}) while waiting for "${type}"`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

function runSync(config: object): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = fork(join(here, 'sync-child.ts'), [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let result: ChildResult | undefined;
    child.once('message', (message) => (result = message as ChildResult));
    child.once('error', reject);
    child.once('exit', (code) => (result && code === 0 ? resolve(result) : reject(new Error(`the sync process exited with ${code}`))));
  });
}

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const seconds = (ms: number) => (ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${(ms / 1000).toFixed(1)} s`);
const int = (n: number) => n.toLocaleString('en');
const describeKinds = (kinds: ChildResult['kinds']) =>
  Object.entries(kinds)
    .sort((a, b) => b[1].requests - a[1].requests)
    .map(([kind, { requests, bytes }]) => `${requests} ${kind} (${bytes < 2 ** 20 ? `${(bytes / 1024).toFixed(1)} KiB` : mb(bytes)})`)
    .join(', ');

async function benchSize(documents: number): Promise<Row[]> {
  const server = fork(join(here, 'sync-server.ts'), [String(documents), String(seed)], { execArgv: ['--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const cacheDir = await mkdtemp(join(tmpdir(), 'bench-sync-'));
  const warmCopy = `${cacheDir}-warm`;
  const rows: Row[] = [];
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
        const result = await runSync(config);
        server.send({ type: 'mark' });
        const tally = await next<{ kinds: Record<string, { count: number; totalMs: number; maxMs: number }> }>(server, 'tally');
        const slowest = Object.entries(tally.kinds).sort((a, b) => b[1].maxMs - a[1].maxMs)[0];
        all.push(result);
        console.log(
          `  ${name} (${run + 1} of ${runs}): ${seconds(result.ms)}, ${describeKinds(result.kinds)}; ${int(result.stats.written)} records written, ` +
            `${result.changes.added}/${result.changes.updated}/${result.changes.removed} added/updated/removed` +
            (slowest ? `; slowest answer ${slowest[1].maxMs.toFixed(0)} ms (${slowest[0]})` : ''),
        );
      }
      rows.push({ documents, name, result: [...all].sort((a, b) => a.ms - b.ms)[Math.floor(runs / 2)]!, all });
    };
    console.log(
      `${int(documents)} documents: snapshot generated in ${seconds(ready.generateMs)}, server started in ${seconds(ready.startMs)} (server RSS ${ready.rssMb.toFixed(0)} MB)`,
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
    server.send({ type: 'stop' });
    const stopped = await next<{ maxRssMb: number }>(server, 'stopped');
    console.log(`  server peak RSS ${stopped.maxRssMb.toFixed(0)} MB`);
    return rows;
  } finally {
    if (server.exitCode === null) server.kill();
    await rm(cacheDir, { recursive: true, force: true });
    await rm(warmCopy, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  console.log('sync: collection "all" (includes 1, embedAssets) + aliases home, about; locale=all; each sync in its own process\n');
  const rows: Row[] = [];
  for (const documents of sizes) rows.push(...(await benchSize(documents)));

  const header = ['documents', 'sync', 'time', '× cold', 'runs', 'CPU', '× cold', 'requests', '304', 'received', '× cold', 'written', 'peak RSS'];
  const table = rows.map(({ documents, name, result, all }) => {
    const cold = rows.find((r) => r.documents === documents && r.name === 'cold')!.result;
    return [
      int(documents),
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
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
  const line = (cells: string[]) => cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  console.log(`\n${line(header)}`);
  for (const row of table) console.log(line(row));
  console.log(
    `(cold = empty cache, the baseline of the × columns; each sync ran ${runs} times and the run of median time is shown, runs = every run's time in seconds; time = wall time of sync() in its process, CPU = that process's CPU time in it; received = body bytes of the answers; peak RSS = the highest of the runs)`,
  );

  let missed = false;
  const verdict = (ok: boolean, counts = true) => {
    if (!ok && counts) missed = true;
    return ok ? 'met' : 'MISSED';
  };
  console.log('');
  for (const documents of sizes) {
    const of = (name: string) => rows.find((r) => r.documents === documents && r.name === name)!;
    const [cold, warm, changed] = [of('cold'), of('warm, no change'), of('warm, 1% changed')];
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
    console.log(`${int(documents)}: warm with no change downloads no document (${mb(documentBytes)} outside id listings and 304s): ${verdict(noDocuments)}`);
    // The 5% target is set for 100,000 documents; below that, costs every sync has (reading and
    // writing the manifest, listing ids) weigh more, and the ratio is shown for information.
    const big = documents >= 100_000;
    console.log(
      `${int(documents)}: 1% changed under 5% of the cold time (medians: ${((changed.result.ms / cold.result.ms) * 100).toFixed(1)}%): ${verdict(changed.result.ms < cold.result.ms * 0.05, big)}${big ? '' : ' (for information: the target is set at 100,000)'}`,
    );
    const peak = Math.max(...[cold, warm, changed].flatMap((row) => row.all.map((run) => run.maxRssMb)));
    if (big) console.log(`${int(documents)}: peak RSS under 1 GB (${peak.toFixed(0)} MB): ${verdict(peak < 1024)}`);
  }
  if (missed) process.exitCode = 1;
}

await main();
