import { request as httpRequest, Agent as HttpAgent, createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pLimit from 'p-limit';
import { request } from 'undici';
import { fastListAnswerSchema } from '../src/api/client.ts';
import { createClient } from '../src/api/client.ts';
import { closeAllPools } from '../src/api/transport.ts';
import { listAnswerSchema } from '../src/wire/schemas.ts';
import { generateSnapshot } from '../test/helpers/generate-snapshot.ts';

/**
 * Reads every document of a generated 10,000-document, 3-locale repository with `locale=all`
 * and `includes=1` from the local server, three ways:
 *
 * - the client: `pages()` with pages of 1000 and the shared limit of 8 (validated answers);
 * - the official SDK's way: comfortable-javascript itself (through its proxy option), pages of
 *   25 one after another, as its users page;
 * - the floor: the same 1000-document pages with plain undici `request` and `JSON.parse`, the
 *   first page first (it tells the total), the rest 8 at a time, no validation.
 *
 * Twice: straight to the server on localhost, where nothing hides the client's own work (the
 * target there: within 1.3× of the floor), and through a proxy that holds each request for a
 * network round trip, as the real service's users see it (the target there: at least 10× faster
 * than the SDK's way; on localhost the SDK's way is bound by the server's work, not by its
 * sequence of round trips). The server and the proxy run in a worker thread, so the reader's work
 * and theirs do not share an event loop. Exits non-zero when a target is missed.
 *
 * Run: node bench/client.ts [--rtt-ms 25]
 */

const documents = 10_000;
const seed = 7;
const repository = 'bench';
const apiKey = 'bench-key';
const pageSize = 1000;
const concurrency = 8;
const rounds = 5;
const rttMs = Number(process.argv[process.argv.indexOf('--rtt-ms') + 1]) || 25;

interface Ready {
  url: string;
  /** The same server behind a proxy that holds each request for `rttMs`. */
  slowUrl: string;
}

/** The worker: the local server on the generated snapshot, and the round-trip proxy in front of it. */
async function serve(): Promise<void> {
  const { startServer } = await import('../src/server/index.ts');
  const server = await startServer({
    snapshots: [generateSnapshot({ documents, seed, apiId: repository, key: apiKey })],
    watch: false,
  });
  const { port } = new URL(server.url);
  const agent = new HttpAgent({ keepAlive: true });
  const proxy = createServer((incoming, outgoing) => {
    setTimeout(() => {
      const upstream = httpRequest(
        { host: '127.0.0.1', port, method: incoming.method, path: incoming.url, headers: incoming.headers, agent },
        (answer) => {
          outgoing.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(outgoing);
        },
      );
      incoming.pipe(upstream);
    }, rttMs);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const ready: Ready = { url: server.url, slowUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1` };
  parentPort!.postMessage(ready);
  parentPort!.once('message', () => {
    proxy.closeAllConnections();
    proxy.close();
    agent.destroy();
    void server.close().then(() => process.exit(0));
  });
}

async function startServerThread(): Promise<Ready & { stop(): Promise<void> }> {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { role: 'read-api-server' },
    argv: process.argv.slice(2),
  });
  const ready = await new Promise<Ready>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    ...ready,
    stop: async () => {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}

/** The client: every page, validated. A new client each time, so no answer comes from its ETag store. */
async function viaClient(url: string): Promise<number> {
  const client = createClient({ baseUrl: url, repository, apiKey, concurrency });
  let count = 0;
  for await (const page of client.pages('documents', { pageSize, locale: 'all', includes: 1 }))
    count += page.data.length;
  return count;
}

/** The floor: plain undici and JSON.parse, the first page, then the rest concurrently. */
async function viaFloor(url: string): Promise<number> {
  const limit = pLimit(concurrency);
  const page = async (offset: number) => {
    const query = `locale=all&includes=1&limit=${pageSize}&offset=${offset}`;
    const { statusCode, body } = await request(`${url}/${repository}/documents?${query}`, {
      headers: { authorization: apiKey },
    });
    const answer = JSON.parse(await body.text());
    if (statusCode !== 200) throw new Error(`the floor got a ${statusCode}`);
    return answer as { meta: { total: number }; data: unknown[] };
  };
  const first = await page(0);
  const offsets: number[] = [];
  for (let offset = pageSize; offset < first.meta.total; offset += pageSize) offsets.push(offset);
  const rest = await Promise.all(offsets.map((offset) => limit(() => page(offset))));
  return first.data.length + rest.reduce((sum, answer) => sum + answer.data.length, 0);
}

/** The official SDK, paging 25 at a time, one page after another. */
async function viaSdk(url: string): Promise<number> {
  const Comfortable = createRequire(import.meta.url)('comfortable-javascript');
  const api = Comfortable.api(repository, apiKey, { useProxy: true, proxy: url });
  let count = 0;
  for (let offset = 0; ; offset += 25) {
    const answer = await api.getDocuments({ limit: 25, offset, locale: 'all', includes: 1 });
    count += answer.data.length;
    if (offset + 25 >= answer.meta.total) return count;
  }
}

async function time(what: string, run: () => Promise<number>): Promise<number> {
  const started = performance.now();
  const count = await run();
  const ms = performance.now() - started;
  if (count !== documents) throw new Error(`${what} read ${count} documents, not ${documents}`);
  return ms;
}

// The best of several rounds: what the machine can do, less what other work on it took away.
const best = (values: number[]) => Math.min(...values);

interface Timings {
  floor: number;
  client: number;
  sdk: number;
}

/** The best of interleaved rounds of the floor and the client (taking turns to go first), and the SDK's way once. */
async function measure(url: string, roundsOfEach: number): Promise<Timings> {
  const floor: number[] = [];
  const client: number[] = [];
  for (let round = 0; round < roundsOfEach; round++) {
    const runFloor = async () => floor.push(await time('the floor', () => viaFloor(url)));
    const runClient = async () => client.push(await time('the client', () => viaClient(url)));
    if (round % 2 === 0) await runFloor().then(runClient);
    else await runClient().then(runFloor);
  }
  return { floor: best(floor), client: best(client), sdk: await time("the SDK's way", () => viaSdk(url)) };
}

/** What validating the ten big list answers costs alone, with the wire schema and with the client's list schema. */
async function validationCost(
  url: string,
): Promise<{ parseMs: number; wireMs: number; clientMs: number; megabytes: number }> {
  const texts: string[] = [];
  for (let offset = 0; offset < documents; offset += pageSize) {
    const { body } = await request(
      `${url}/${repository}/documents?locale=all&includes=1&limit=${pageSize}&offset=${offset}`,
      { headers: { authorization: apiKey } },
    );
    texts.push(await body.text());
  }
  const fastest = (run: () => void) => {
    let ms = Infinity;
    for (let round = 0; round < 5; round++) {
      const started = performance.now();
      run();
      ms = Math.min(ms, performance.now() - started);
    }
    return ms;
  };
  const parsed = texts.map((text) => JSON.parse(text));
  const check = (schema: { safeParse(value: unknown): { success: boolean } }) => () => {
    for (const page of parsed) if (!schema.safeParse(page).success) throw new Error('a bench page does not validate');
  };
  return {
    parseMs: fastest(() =>
      texts.forEach((text) => {
        JSON.parse(text);
      }),
    ),
    wireMs: fastest(check(listAnswerSchema)),
    clientMs: fastest(check(fastListAnswerSchema)),
    megabytes: Buffer.byteLength(texts.join('')) / 1e6,
  };
}

function table(title: string, timings: Timings): void {
  const rows: [string, number][] = [
    [`floor: undici + JSON.parse, pages of ${pageSize}, ${concurrency} at a time`, timings.floor],
    [`client: pages(), pages of ${pageSize}, concurrency ${concurrency}`, timings.client],
    ['SDK way: comfortable-javascript, pages of 25 in sequence', timings.sdk],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  console.log(`\n${title}`);
  console.log(`${'way'.padEnd(width)}  ${'time'.padStart(9)}  ${'÷ floor'.padStart(8)}  ${'÷ client'.padStart(8)}`);
  for (const [name, ms] of rows) {
    console.log(
      `${name.padEnd(width)}  ${`${ms.toFixed(0)} ms`.padStart(9)}  ${`${(ms / timings.floor).toFixed(2)}×`.padStart(8)}  ${`${(ms / timings.client).toFixed(2)}×`.padStart(8)}`,
    );
  }
}

async function main(): Promise<void> {
  console.log(`client: reading ${documents} documents × 3 locales (locale=all, includes=1) from the local server`);
  const server = await startServerThread();
  try {
    // Warm up both sides (the server's indexes and caches, the JIT) before timing anything.
    await viaFloor(server.url);
    await viaClient(server.url);
    await viaSdk(server.url);
    const local = await measure(server.url, rounds);
    const remote = await measure(server.slowUrl, 3);
    const cost = await validationCost(server.url);

    table(`localhost (best of ${rounds} rounds; the SDK's way once)`, local);
    table(`with a ${rttMs} ms round trip per request (best of 3 rounds; the SDK's way once)`, remote);
    console.log(
      `\nthe 10 pages are ${cost.megabytes.toFixed(1)} MB; JSON.parse of them takes ${cost.parseMs.toFixed(0)} ms, validating them ` +
        `${cost.clientMs.toFixed(0)} ms with the client's list schema (${cost.wireMs.toFixed(0)} ms with the wire schema as it is)`,
    );

    const overFloor = local.client / local.floor;
    const speedup = remote.sdk / remote.client;
    const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
    console.log(
      `\ntarget: within 1.3× of the floor on localhost: ${overFloor.toFixed(2)}× — ${verdict(overFloor <= 1.3)}`,
    );
    console.log(
      `target: at least 10× faster than the SDK's way over a ${rttMs} ms round trip: ${speedup.toFixed(1)}× — ${verdict(speedup >= 10)}`,
    );
    console.log(`(on localhost the client is ${(local.sdk / local.client).toFixed(1)}× faster than the SDK's way)`);
    if (overFloor > 1.3 || speedup < 10) process.exitCode = 1;
  } finally {
    await closeAllPools();
    await server.stop();
  }
}

// The same file is the server's worker thread.
if (!isMainThread && workerData?.role === 'read-api-server') await serve();
else if (isMainThread) await main();
