import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pLimit from 'p-limit';
import { request } from 'undici';
import { closeAllPools } from '../src/api/transport.ts';
import { pull } from '../src/pull/pull.ts';
import { snapshotDocument } from '../src/pull/records.ts';
import { parseSnapshot } from '../src/wire/snapshot.ts';
import type { ApiRecord } from '../src/wire/schemas.ts';
import { generateSnapshot } from '../test/helpers/generate-snapshot.ts';

/**
 * `comfortable-loader pull` of a generated 10,000-document, 3-locale repository from the local
 * server (in a worker thread), against its floor measured in the same run: the same listing
 * (every document, `locale=all`, `embedAssets`, pages of 1000, 8 at a time) fetched with plain
 * undici and `JSON.parse`. The pull does that too, then infers the content types, sorts, checks
 * the snapshot as `serve` would, and writes it. Also: a second pull of the unchanged repository
 * (which writes nothing), and the snapshot's size against the raw answers. And what bounds the
 * ratio: the least work a pull adds to the floor's (parse the answers, take each document apart,
 * write it as indented JSON), alone on one thread, against the cores the floor itself keeps busy.
 * Target: the pull within 1.5× of the floor (medians of 5 rounds). Exits non-zero when missed.
 *
 * Run: node bench/pull.ts
 */

const documents = 10_000;
const repository = 'bench';
const apiKey = 'bench-key';
const rounds = 5;

async function serve(): Promise<void> {
  const { startServer } = await import('../src/server/index.ts');
  const server = await startServer({
    snapshots: [generateSnapshot({ documents, seed: 7, apiId: repository, key: apiKey })],
    watch: false,
  });
  parentPort!.postMessage(server.url);
  parentPort!.once('message', () => void server.close().then(() => process.exit(0)));
}

/** The floor: the listing with plain undici and JSON.parse; returns the bytes received. `keep` gets each answer's text. */
async function floor(url: string, keep?: string[]): Promise<number> {
  const limit = pLimit(8);
  let bytes = 0;
  const page = async (offset: number) => {
    const { statusCode, body } = await request(
      `${url}/${repository}/documents?locale=all&embedAssets=1&limit=1000&offset=${offset}`,
      { headers: { authorization: apiKey } },
    );
    const text = await body.text();
    keep?.push(text);
    bytes += Buffer.byteLength(text);
    if (statusCode !== 200) throw new Error(`the floor got a ${statusCode}`);
    return JSON.parse(text) as { meta: { total: number } };
  };
  const first = await page(0);
  const offsets: number[] = [];
  for (let offset = 1000; offset < first.meta.total; offset += 1000) offsets.push(offset);
  await Promise.all(offsets.map((offset) => limit(() => page(offset))));
  return bytes;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const ms = (value: number) => `${value.toFixed(0)} ms`;

async function main(): Promise<void> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: 'server' } });
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  const config = { baseUrl: url, repository, apiKey, collections: {}, aliases: [], concurrency: 8, pageSize: 1000 };
  const scratch = await mkdtemp(join(tmpdir(), 'cmft-bench-pull-'));
  console.log(
    `pull: ${documents.toLocaleString('en')} documents × 3 locales from the local server, ${rounds} rounds each, alternating\n`,
  );
  await floor(url); // warm both sides up once
  await pull({ config, out: join(scratch, 'warm') });
  const floors: number[] = [];
  const floorCpu: number[] = [];
  const pulls: number[] = [];
  const again: number[] = [];
  let raw = 0;
  let size = 0;
  for (let round = 0; round < rounds; round++) {
    let started = performance.now();
    const cpu = process.cpuUsage();
    raw = await floor(url);
    floors.push(performance.now() - started);
    const used = process.cpuUsage(cpu);
    floorCpu.push((used.user + used.system) / 1000);
    const out = join(scratch, `round-${round}`);
    started = performance.now();
    const result = await pull({ config, out });
    pulls.push(performance.now() - started);
    size = result.bytes;
    started = performance.now();
    const second = await pull({ config, out });
    again.push(performance.now() - started);
    if (second.written) throw new Error('a second pull of the unchanged repository wrote the snapshot again');
  }
  const rows = [
    ['floor: undici + JSON.parse, the same listing', median(floors), Math.min(...floors)],
    ['pull (fetch, infer, check, write the snapshot)', median(pulls), Math.min(...pulls)],
    ['second pull, nothing changed (writes nothing)', median(again), Math.min(...again)],
  ] as const;
  console.log(`${'way'.padEnd(50)}  ${'median'.padStart(8)}  ${'best'.padStart(8)}  ÷ floor (median)`);
  for (const [name, med, best] of rows)
    console.log(
      `${name.padEnd(50)}  ${ms(med).padStart(8)}  ${ms(best).padStart(8)}  ${(med / median(floors)).toFixed(2)}×`,
    );
  console.log(
    `\nthe answers are ${(raw / 1024 / 1024).toFixed(1)} MB; the snapshot ${(size / 1024 / 1024).toFixed(1)} MB (${((size / raw) * 100).toFixed(0)}% of them: assets once instead of embedded in every document, two-space indentation)`,
  );
  // What the pull does beyond the floor's work, measured apart on the pulled snapshot: the check `serve` makes, the indented JSON, and the parse of the listing the floor does too.
  const snapshot = JSON.parse(await readFile(join(scratch, 'round-0', `${repository}.json`), 'utf8'));
  const parts = { check: [] as number[], text: [] as number[] };
  for (let round = 0; round < rounds; round++) {
    let started = performance.now();
    parseSnapshot(snapshot, 'bench');
    parts.check.push(performance.now() - started);
    started = performance.now();
    JSON.stringify(snapshot, null, 2);
    parts.text.push(performance.now() - started);
  }
  // The least any pull must do beyond receiving the answers, alone on one thread with the answers in memory: parse them, take each document apart, write it as indented JSON.
  const answers: string[] = [];
  await floor(url, answers);
  const locales = new Set(['en_US', 'de_DE', 'fr_FR']);
  const bare: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    for (const answer of answers)
      for (const record of (JSON.parse(answer) as { data: ApiRecord[] }).data)
        JSON.stringify(
          snapshotDocument(record, locales, () => {}),
          null,
          2,
        );
    bare.push(performance.now() - started);
  }
  console.log(
    `of the pull's time: the check serve makes of the snapshot (parseSnapshot) ${ms(median(parts.check))}, its indented JSON (JSON.stringify) ${ms(median(parts.text))}; ` +
      `the rest is the listing (as the floor), taking its records apart, inferring the types and writing the file`,
  );
  console.log(
    `the least work beyond receiving the answers (parse them, take each document apart, indented JSON; one thread, answers in memory): ${ms(median(bare))}, ${(median(bare) / median(floors)).toFixed(2)}× the floor; ` +
      `the floor keeps ${(median(floorCpu) / median(floors)).toFixed(2)} of this machine's ${availableParallelism()} cores busy (process CPU time ÷ its time)`,
  );
  const ratio = median(pulls) / median(floors);
  const met = ratio <= 1.5;
  console.log(`\ntarget: pull within 1.5× of the floor (medians): ${ratio.toFixed(2)}× — ${met ? 'met' : 'MISSED'}`);
  worker.postMessage('close');
  await closeAllPools();
  await rm(scratch, { recursive: true, force: true });
  if (!met) process.exitCode = 1;
}

if (isMainThread) await main();
else if ((workerData as { role?: string } | undefined)?.role === 'server') await serve();
