import { subscribe } from 'node:diagnostics_channel';
import { closeAllPools } from '../src/api/transport.ts';
import { sync } from '../src/sync/engine.ts';

/**
 * One sync in its own process, for bench/sync.ts (forked): argv[2] is the sync config as JSON.
 * Sends back over IPC the sync's stats, its wall time, the process's peak RSS, and the answers
 * it received by kind (from undici's diagnostics channel: id listings, 304s, by-id fetches, …).
 */

const config = JSON.parse(process.argv[2]!);

interface Kind {
  requests: number;
  bytes: number;
}
const kinds: Record<string, Kind> = {};

function kindOf(method: string, path: string, body: unknown, status: number): string {
  if (status === 304) return '304';
  const sent = typeof body === 'string' ? body : body instanceof Uint8Array ? Buffer.from(body).toString() : '';
  const text = `${decodeURIComponent(path)} ${sent}`;
  if (text.includes('meta(id,')) return 'id listing';
  if (text.includes('*.meta.id')) return 'by id';
  if (text.includes('*.meta.updatedAt')) return 'changed since';
  return `${method} ${path.replace(/\?.*$/, '').replace(/^\/v1\/[^/]+/, '') || '/'}`;
}

subscribe('undici:request:headers', (message) => {
  const { request, response } = message as {
    request: { method: string; path: string; body?: unknown };
    response: { statusCode: number; headers: Buffer[] };
  };
  let length = 0;
  for (let i = 0; i < response.headers.length; i += 2) {
    if (response.headers[i]!.toString().toLowerCase() === 'content-length')
      length = Number(response.headers[i + 1]!.toString());
  }
  const kind = kindOf(request.method, request.path, request.body, response.statusCode);
  const entry = (kinds[kind] ??= { requests: 0, bytes: 0 });
  entry.requests++;
  entry.bytes += length;
});

let warnings = 0;
const started = performance.now();
const cpu = process.cpuUsage();
const result = await sync({ ...config, onError: 'fail' }, { info: () => {}, warn: () => void warnings++ });
const ms = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
const records = result.cache.recordCount(); // after the timing: not part of the sync
await closeAllPools();

const { added, updated, removed } = result.changeset.records;
process.send!(
  {
    ms,
    cpuMs: (user + system) / 1000,
    stats: result.stats,
    records,
    changes: { added: added.length, updated: updated.length, removed: removed.length },
    warnings,
    kinds,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  },
  () => process.exit(0),
);
