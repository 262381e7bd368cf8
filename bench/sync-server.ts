import { startServer } from '../src/server/index.ts';
import type { Snapshot, SnapshotRecord } from '../src/wire/snapshot-format.ts';
import { generateSnapshot, type Weight, weights } from '../test/helpers/generate-snapshot.ts';

/**
 * The server process of bench/sync.ts (forked, talks over IPC): generates a seeded snapshot of
 * one weight (test/helpers/generate-snapshot.ts) with one more collection, `all` (every document), serves it,
 * and on request changes a fraction of the generated documents (title edited, updatedAt and
 * revision bumped; other ones each round) with `replaceSnapshot`. It tallies the requests it
 * answers (count and latency by kind) between marks, and reports its own peak RSS, so the sync
 * process's figures leave the server out.
 *
 * Arguments: documents, seed (default 7), weight (`full`, the default, or `light`), assets
 * (default: the generator's).
 * Messages in: `{ type: 'mark' }`, `{ type: 'change', fraction, round }`, `{ type: 'stop' }`.
 * Messages out: `{ type: 'ready', url, generateMs, startMs, rssMb }`, `{ type: 'tally', … }`,
 * `{ type: 'changed', count, reloadMs }`, `{ type: 'stopped', maxRssMb }`.
 */

const documents = Number(process.argv[2]);
const seed = Number(process.argv[3] ?? 7);
const weight = (process.argv[4] ?? 'full') as Weight;
const assets = process.argv[5] ? Number(process.argv[5]) : undefined;
if (!weights.includes(weight)) throw new Error(`sync-server: the weight is ${weights.join(' or ')}, not ${weight}`);
const send = (message: object) => process.send!(message);

interface Kind {
  count: number;
  totalMs: number;
  maxMs: number;
}
let tally = new Map<string, Kind>();

/** One line per request: `GET /v1/bench/collections/all?… 200 12.3ms`. */
const log = (line: string) => {
  const match = /^(GET|HEAD|POST) (\S+) (\d{3}) ([\d.]+)ms$/.exec(line);
  if (!match) return;
  const [, method, url, status, ms] = match as unknown as [string, string, string, string, string];
  const path = url.replace(/\?.*$/, '').replace(/^\/v1\/[^/]+/, '');
  const kind =
    status === '304'
      ? '304'
      : /fields=meta\(id/.test(url)
        ? 'id listing'
        : url.includes('[*.meta.id][in]')
          ? 'by id'
          : url.includes('[*.meta.updatedAt][greaterThanEqual]')
            ? 'changed since'
            : `${method} ${path || '/'} ${status}`;
  const entry = tally.get(kind) ?? { count: 0, totalMs: 0, maxMs: 0 };
  entry.count++;
  entry.totalMs += Number(ms);
  entry.maxMs = Math.max(entry.maxMs, Number(ms));
  tally.set(kind, entry);
};

let started = performance.now();
// Through JSON, as `serve` reads a snapshot file: the generator's strings are built piece by piece
// (ropes), which the server would write out several times slower than the flat strings of a file.
const snapshot: Snapshot = JSON.parse(JSON.stringify(generateSnapshot({ documents, seed, weight, assets })));
snapshot.collections.push({ apiId: 'all' }); // every document, in the default order
const generateMs = performance.now() - started;
started = performance.now();
const server = await startServer({ snapshots: [snapshot], watch: false, log });
const startMs = performance.now() - started;
send({ type: 'ready', url: server.url, generateMs, startMs, rssMb: process.memoryUsage().rss / 2 ** 20 });

/** The snapshot as generated: every change starts from it. */
const base = snapshot;

/**
 * A copy of the generated snapshot with every `1/fraction`-th document edited, starting at the
 * `round`-th, so each round edits other documents of the same base (the record objects of the
 * others are shared).
 */
function changeDocuments(fraction: number, round: number): { next: Snapshot; count: number } {
  const step = Math.round(1 / fraction);
  const now = new Date().toISOString();
  const changed: SnapshotRecord[] = [...base.documents];
  let count = 0;
  for (let i = round % step; i < changed.length; i += step) {
    const document = changed[i]!;
    const fields = { ...document.fields };
    const title = fields.title as Record<string, string> | undefined;
    if (title && typeof title === 'object') fields.title = { ...title, en_US: `${title.en_US ?? ''} (edited)` };
    else fields.name = `${String(fields.name ?? '')} (edited)`;
    changed[i] = { fields, meta: { ...document.meta, revision: document.meta.revision + 1, updatedAt: now } };
    count++;
  }
  return { next: { ...base, documents: changed }, count };
}

process.on('message', (message: { type: string; fraction?: number; round?: number }) => {
  void (async () => {
    if (message.type === 'mark') {
      const out = Object.fromEntries(tally);
      tally = new Map();
      send({ type: 'tally', kinds: out });
    } else if (message.type === 'change') {
      const t = performance.now();
      const { next, count } = changeDocuments(message.fraction!, message.round ?? 0);
      await server.replaceSnapshot(next);
      // Collect the old snapshot now (forked with --expose-gc), so the server's collector does not compete with the sync measured next.
      (globalThis as { gc?: () => void }).gc?.();
      send({ type: 'changed', count, reloadMs: performance.now() - t });
    } else if (message.type === 'stop') {
      await server.close();
      send({ type: 'stopped', maxRssMb: process.resourceUsage().maxRSS / 1024 });
      process.disconnect();
    }
  })().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
});
