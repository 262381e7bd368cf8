import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { Pool } from 'undici';
import { startServer } from '../src/server/index.ts';
import { generateSnapshot } from '../test/helpers/generate-snapshot.ts';

/**
 * Benchmark of the local Read API on a generated 10,000-document, 3-locale repository.
 * The server runs in a worker thread (its own event loop, as in production); the load comes
 * from here: an undici Pool of 16 connections keeps 16 requests in flight.
 *
 * For each case: median and p99 latency and requests per second, beside two floors measured in
 * the same run:
 * - stringify: the median time to JSON.stringify the answer's object (what a JSON server must at
 *   least do for one answer; the brief's floor);
 * - bare HTTP: the median latency of a bare node:http server, in the same worker, sending the
 *   same bytes under the same load (what moving the answer costs, whatever the server).
 *
 * Run: node bench/server.ts [--documents N] [--cases a,c]
 */

const option = (name: string) =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined;
const documents = Number(option('--documents')) || 10_000;
const only = option('--cases')?.split(',');
const key = 'bench-key';
const concurrency = 16;

interface Ready {
  origin: string;
  bareOrigin: string;
  articleIds: string[];
  startMs: number;
}

interface Case {
  name: string;
  /** Request targets; the load cycles through them so no single answer is all that is measured. */
  paths: string[];
  requests: number;
  /** The median latency to stay under; none for a case measured for information. */
  targetMs?: number;
}

/** Parts of the generated titles' words, in any case, for `like` patterns. */
const likeWords = ['an', 'ER', 'the', 'Stad', 'ing', 'ON', 'light', 'x'];

function casesFor(ids: string[]): Case[] {
  const twoFilters = (threshold: string, offset: number) =>
    `/v1/bench/documents?filters[0][article.fields.readingTime][greaterThanEqual]=${threshold}` +
    `&filters[1][article.fields.featured][equal]=false&sorting[fields.publishedAt]=desc&limit=25&offset=${offset}`;
  return [
    {
      name: '(a) 25 documents, 2 filters + sort',
      paths: Array.from({ length: 40 }, (_, i) => twoFilters(String(3 + (i % 8)), (i % 5) * 25)),
      requests: 4000,
      targetMs: 5,
    },
    {
      // Every request a filter value never seen before: nothing can be reused from earlier answers.
      name: "(a') the same, every filter new",
      paths: Array.from({ length: 3000 }, (_, i) => twoFilters((3 + i / 10_000).toFixed(4), (i % 5) * 25)),
      requests: 2500,
    },
    {
      // Every request a pattern never seen before, so each is matched against every document.
      name: '(d) 25 documents, like %word% + sort',
      paths: Array.from(
        { length: 3000 },
        (_, i) =>
          `/v1/bench/documents?filters[0][article.fields.title][like]=${encodeURIComponent(`%${likeWords[i % likeWords.length]}%`)}` +
          `&filters[1][article.fields.readingTime][greaterThanEqual]=${(i / 1000).toFixed(3)}&sorting[fields.publishedAt]=desc&limit=25`,
      ),
      requests: 2500,
    },
    {
      name: '(b) 1 document, includes=2',
      paths: Array.from({ length: 64 }, (_, i) => `/v1/bench/documents/${ids[(i * 97) % ids.length]}?includes=2`),
      requests: 4000,
      targetMs: 5,
    },
    {
      name: '(c) 1,000 documents, locale=all',
      paths: Array.from({ length: 10 }, (_, i) => `/v1/bench/documents?limit=1000&locale=all&offset=${i * 1000}`),
      requests: 300,
      targetMs: 50,
    },
  ];
}

async function main(): Promise<void> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { documents } });
  const ready = await new Promise<Ready>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  console.log(`Read API server: ${documents} documents generated and served in ${(ready.startMs / 1000).toFixed(1)} s`);
  const pool = new Pool(ready.origin, { connections: concurrency });
  const bare = new Pool(ready.bareOrigin, { connections: concurrency });

  const rows: string[][] = [];
  let missed = 0;
  for (const c of casesFor(ready.articleIds).filter(
    (c) => !only || only.some((name) => c.name.startsWith(`(${name})`)),
  )) {
    // Warm-up: a short burst (fills the per-snapshot caches, lets the JIT settle); the measured
    // run starts where it stopped, so a case with more targets than requests never repeats one.
    const warm = Math.min(c.requests, 500);
    await load(pool, c.paths, warm);
    const { latencies, seconds } = await load(pool, [...c.paths.slice(warm), ...c.paths.slice(0, warm)], c.requests);
    const answer = await get(pool, c.paths[0]!);
    const floor = stringifyFloor(JSON.parse(answer));
    // The same bytes from the bare server, under the same load.
    worker.postMessage(Buffer.from(answer));
    await new Promise((resolve) => worker.once('message', resolve));
    await load(bare, ['/'], warm);
    const bareMedian = percentile((await load(bare, ['/'], c.requests)).latencies, 0.5);

    const median = percentile(latencies, 0.5);
    const met = c.targetMs === undefined || median < c.targetMs;
    if (!met) missed++;
    rows.push([
      c.name,
      ms(median),
      ms(percentile(latencies, 0.99)),
      Math.round(c.requests / seconds).toLocaleString('en-US'),
      `${(Buffer.byteLength(answer) / 1024).toFixed(0)} KiB`,
      ms(floor),
      `${(median / floor).toFixed(1)}x`,
      ms(bareMedian),
      `${(median / bareMedian).toFixed(1)}x`,
      c.targetMs === undefined ? '-' : `< ${c.targetMs} ms`,
      c.targetMs === undefined ? '' : met ? 'met' : 'MISSED',
    ]);
  }
  await Promise.all([pool.close(), bare.close()]);
  await worker.terminate();

  console.log(
    `\nconcurrency ${concurrency} (undici Pool, ${concurrency} connections), latencies per request, answers received as bytes\n`,
  );
  printTable(
    ['case', 'median', 'p99', 'req/s', 'answer', 'stringify', 'ratio', 'bare HTTP', 'ratio', 'target (median)', ''],
    rows,
  );
  if (missed > 0) {
    console.log(`\n${missed} target(s) missed`);
    process.exitCode = 1;
  }
}

/** The worker: the Read API on the generated snapshot, and a bare server that sends whatever bytes it was last given. */
async function serve(count: number): Promise<void> {
  const started = performance.now();
  const snapshot = generateSnapshot({ documents: count, seed: 42, apiId: 'bench', key });
  const server = await startServer({ snapshots: [snapshot], watch: false });
  let bytes = Buffer.alloc(0);
  const bare = createServer((_request, response) => {
    response.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(bytes.length),
    });
    response.end(bytes);
  });
  await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
  parentPort!.on('message', (body: Uint8Array) => {
    bytes = Buffer.from(body);
    parentPort!.postMessage('ok');
  });
  const ready: Ready = {
    origin: server.origin,
    bareOrigin: `http://127.0.0.1:${(bare.address() as AddressInfo).port}`,
    articleIds: snapshot.documents.filter((d) => d.meta.contentType === 'article').map((d) => d.meta.id),
    startMs: performance.now() - started,
  };
  parentPort!.postMessage(ready);
}

async function get(pool: Pool, path: string): Promise<string> {
  const { statusCode, body } = await pool.request({ method: 'GET', path, headers: { authorization: key } });
  const text = await body.text();
  if (statusCode !== 200) throw new Error(`${path} answered ${statusCode}: ${text.slice(0, 200)}`);
  return text;
}

/**
 * Sends `total` requests, `concurrency` at a time, cycling through the paths; returns each
 * latency in ms. Answers are received as bytes: what is measured is the server, not the UTF-8
 * decoding on this side.
 */
async function load(pool: Pool, paths: string[], total: number): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const client = async () => {
    while (next < total) {
      const path = paths[next++ % paths.length]!;
      const t0 = performance.now();
      const { statusCode, body } = await pool.request({ method: 'GET', path, headers: { authorization: key } });
      await body.arrayBuffer();
      if (statusCode !== 200) throw new Error(`${path} answered ${statusCode}`);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

/** The median time to JSON.stringify the object, over enough runs to take about 300 ms. */
function stringifyFloor(object: unknown): number {
  const first = performance.now();
  JSON.stringify(object);
  const estimate = Math.max(performance.now() - first, 0.001);
  const runs = Math.max(21, Math.min(5000, Math.round(300 / estimate)));
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    JSON.stringify(object);
    times.push(performance.now() - t0);
  }
  return percentile(times, 0.5);
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

const ms = (value: number) => `${value < 1 ? value.toFixed(3) : value.toFixed(2)} ms`;

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

// One file, two roles: the worker serves, the main thread loads. This runs last, so every
// declaration above is initialised.
if (isMainThread) await main();
else await serve((workerData as { documents: number }).documents);
