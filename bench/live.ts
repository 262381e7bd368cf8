import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { createGetLiveEntry } from 'astro/content/runtime';
import { createClient } from '../src/api/client.ts';
import { closeAllPools } from '../src/api/transport.ts';
import { comfortableLiveLoader } from '../src/astro/index.ts';

/**
 * A live entry against the client's own request: `getLiveEntry('posts', '<locale>/<id>')` of
 * one post with `includes=1`, next to `client.document(id, { locale: 'all', includes: 1,
 * embedAssets: true })`, the one request the live loader sends for it, from the local server on
 * the demo repository.
 *
 * `getLiveEntry` is Astro's own: `createGetLiveEntry()` from `astro/content/runtime`, the
 * function the `astro:content` module of a site exports, over a live collection of
 * `comfortableLiveLoader({ contentType: 'post' })`. It calls the loader's `loadEntry`, checks the
 * cache hint and returns the entry, as in a page; what a page adds around it (routing,
 * rendering the HTML) is the same with any loader and is left out. The loader's work beyond the
 * request (normalising the answer, the entry in its locale, references, rendering the richtext,
 * cache tags) is what the ratio shows.
 *
 * Both take turns, one call at a time, over every post, with the server in a worker thread so
 * that its work and the caller's do not share an event loop. Prints the medians side by side;
 * exits 1 when the live entry takes more than 2× the client's call.
 *
 * Run: node bench/live.ts [--calls 400]
 */

const repository = 'demo';
const snapshotPath = fileURLToPath(new URL('../playground/content/demo.json', import.meta.url));
const snapshot = JSON.parse(readFileSync(snapshotPath, 'utf8')) as {
  repository: { apiKeys: string[] };
  documents: { meta: { id: string; contentType: string } }[];
};
const apiKey = snapshot.repository.apiKeys[0]!;
const calls = Number(process.argv[process.argv.indexOf('--calls') + 1]) || 400;
const warmup = 50;
const target = 2;

/** The worker: the local server on the demo snapshot. */
async function serve(): Promise<void> {
  const { startServer } = await import('../src/server/index.ts');
  const server = await startServer({ paths: [snapshotPath], watch: false });
  parentPort!.postMessage(server.url);
  parentPort!.once('message', () => void server.close().then(() => process.exit(0)));
}

async function startServerThread(): Promise<{ url: string; stop(): Promise<void> }> {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: 'read-api-server' } });
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    url,
    stop: async () => {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

async function main(): Promise<void> {
  const server = await startServerThread();
  try {
    const client = createClient({ baseUrl: server.url, repository, apiKey });
    const loader = comfortableLiveLoader({ baseUrl: server.url, repository, apiKey, contentType: 'post', includes: 1 });
    const getLiveEntry = createGetLiveEntry({ liveCollections: { posts: { type: 'live', loader } } as never });
    const posts = snapshot.documents
      .filter((document) => document.meta.contentType === 'post')
      .map((document) => document.meta.id);
    const request = { locale: 'all', includes: 1, embedAssets: true } as const;

    const viaClient = async (id: string) => {
      const started = performance.now();
      const answer = await client.document(id, request);
      const ms = performance.now() - started;
      if (answer.meta.id !== id) throw new Error(`the client read ${answer.meta.id}, not ${id}`);
      return ms;
    };
    const viaLive = async (id: string) => {
      const started = performance.now();
      const { entry, error } = await getLiveEntry('posts', `en_US/${id}`);
      const ms = performance.now() - started;
      if (error || entry?.data.id !== id)
        throw new Error(`getLiveEntry failed for ${id}: ${error?.message ?? 'another entry'}`);
      return ms;
    };

    const times = { client: [] as number[], live: [] as number[] };
    for (let call = 0; call < warmup + calls; call++) {
      const id = posts[call % posts.length]!;
      // Taking turns to go first, so neither always meets a warmer server.
      const [first, second] = call % 2 === 0 ? (['client', 'live'] as const) : (['live', 'client'] as const);
      const a = await (first === 'client' ? viaClient(id) : viaLive(id));
      const b = await (second === 'client' ? viaClient(id) : viaLive(id));
      if (call < warmup) continue;
      times[first].push(a);
      times[second].push(b);
    }

    const clientMedian = median(times.client);
    const liveMedian = median(times.live);
    const ratio = liveMedian / clientMedian;
    const rows: [string, number[]][] = [
      ["client.document(id, { locale: 'all', includes: 1, embedAssets: true })", times.client],
      ["getLiveEntry('posts', 'en_US/<id>'), comfortableLiveLoader({ contentType: 'post' })", times.live],
    ];
    const width = Math.max(...rows.map(([name]) => name.length));
    console.log(
      `live: one post with includes=1, ${calls} calls each over ${posts.length} posts (after ${warmup} to warm up), from the local server`,
    );
    console.log(`${'way'.padEnd(width)}  ${'median'.padStart(9)}  ${'p90'.padStart(9)}`);
    for (const [name, values] of rows)
      console.log(
        `${name.padEnd(width)}  ${`${median(values).toFixed(2)} ms`.padStart(9)}  ${`${percentile(values, 0.9).toFixed(2)} ms`.padStart(9)}`,
      );
    console.log(
      `\nratio getLiveEntry ÷ client.document(): ${ratio.toFixed(2)}× (target: within ${target}×) ${ratio <= target ? 'met' : 'MISSED'}`,
    );
    process.exitCode = ratio <= target ? 0 : 1;
  } finally {
    await closeAllPools();
    await server.stop();
  }
}

if (isMainThread) await main();
else if ((workerData as { role?: string } | undefined)?.role === 'read-api-server') await serve();
