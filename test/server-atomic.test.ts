import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSnapshot, writeSnapshot } from './helpers/generate-snapshot.ts';
import { mulberry32 } from './helpers/random.ts';
import { type ReadApiServer, type Snapshot, startServer } from '../src/server/index.ts';

/**
 * Spec §1: a snapshot is replaced atomically, "a request sees the old or the new snapshot, never
 * a mix". Two versions of one generated repository differ in every record: each title (or name)
 * starts with "v1 " or "v2 " and each revision is 1 or 2. While hundreds of requests with
 * includes=2 run, the snapshot is swapped back and forth; every answer, data and includes alike,
 * must come from one version.
 */

const key = 'atomic-key';
const base = generateSnapshot({ documents: 300, seed: 5, apiId: 'atomic', key });

/** The base snapshot with every record's title or name prefixed "v<n> " and its revision set to n. */
function version(n: 1 | 2): Snapshot {
  const stamp = (value: unknown): unknown =>
    typeof value === 'string'
      ? `v${n} ${value}`
      : value && typeof value === 'object'
        ? Object.fromEntries(Object.entries(value).map(([locale, text]) => [locale, `v${n} ${String(text)}`]))
        : value;
  const records = (list: Snapshot['documents']) =>
    list.map((record) => {
      const fields = { ...record.fields };
      for (const name of ['title', 'name']) if (fields[name] !== undefined) fields[name] = stamp(fields[name]);
      return { fields, meta: { ...record.meta, revision: n } };
    });
  return { ...base, documents: records(base.documents), assets: records(base.assets) };
}
const versions = { 1: version(1), 2: version(2) } as const;

/** The one version every record of an answer comes from, or a sentence saying how it mixes them. */
function versionOf(body: any): number | string {
  const records: any[] = Array.isArray(body.data) ? [...body.data] : [body];
  for (const group of Object.values(body.includes ?? {})) records.push(...(group as any[]));
  const seen = new Set<string>();
  for (const record of records) {
    seen.add(`revision ${record.meta.revision}`);
    const label = record.fields.title ?? record.fields.name;
    for (const text of typeof label === 'string' ? [label] : Object.values(label ?? {}))
      seen.add(`title ${String(text).slice(0, 3)}`);
  }
  const found = [...seen].sort().join(', ');
  if (found === 'revision 1, title v1 ') return 1;
  if (found === 'revision 2, title v2 ') return 2;
  return `mixed: ${found}`;
}

const articleIds = base.documents.filter((d) => d.meta.contentType === 'article').map((d) => d.meta.id);
const requests = (random: () => number): { method: 'GET' | 'POST'; path: string; body?: string } => {
  const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)]!;
  const id = pick(articleIds);
  return pick([
    {
      method: 'GET' as const,
      path: `/v1/atomic/documents?includes=2&locale=all&limit=40&offset=${Math.floor(random() * 250)}`,
    },
    { method: 'GET' as const, path: '/v1/atomic/collections/latest?includes=2&locale=all&limit=25' },
    { method: 'GET' as const, path: '/v1/atomic/collections/technology?includes=2&locale=de_CH&embedAssets=true' },
    { method: 'GET' as const, path: `/v1/atomic/documents/${id}?includes=2&locale=all` },
    { method: 'GET' as const, path: '/v1/atomic/alias/home?includes=2&locale=de_DE' },
    {
      method: 'GET' as const,
      path: `/v1/atomic/documents?filters[0][*.fields.readingTime][greaterThan]=5&sorting[fields.title]=asc&includes=2&locale=all`,
    },
    {
      method: 'POST' as const,
      path: '/v1/atomic/documents',
      body: JSON.stringify({ includes: 2, locale: 'all', limit: 30, sorting: { 'fields.publishedAt': 'desc' } }),
    },
  ]);
};

/**
 * Runs `workers` request loops against the server until `done()` says stop and at least
 * `minimum` requests were answered; returns how many answers came from each version, and every
 * answer that was not a 200 of one version.
 */
async function flood(server: ReadApiServer, seed: number, done: () => boolean, minimum: number) {
  const pool = new Pool(server.origin, { connections: 16 });
  const random = mulberry32(seed);
  const counts = { 1: 0, 2: 0 };
  const failures: string[] = [];
  let answered = 0;
  const worker = async () => {
    while (!done() || answered < minimum) {
      const { method, path, body } = requests(random);
      const answer = await pool.request({ method, path, headers: { authorization: key }, ...(body ? { body } : {}) });
      const text = await answer.body.text();
      answered++;
      if (answer.statusCode !== 200) {
        failures.push(`${method} ${path}: ${answer.statusCode} ${text.slice(0, 200)}`);
        continue;
      }
      const found = versionOf(JSON.parse(text));
      if (typeof found === 'number') counts[found as 1 | 2]++;
      else failures.push(`${method} ${path}: ${found}`);
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  await pool.close();
  return { counts, failures, answered };
}

describe('a reload is atomic: an answer comes wholly from the old or the new snapshot (§1)', () => {
  const servers: ReadApiServer[] = [];
  let folder: string | undefined;
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('while replaceSnapshot swaps two versions back and forth under 32 concurrent requests', async () => {
    const server = await startServer({ snapshots: [versions[1]], watch: false });
    servers.push(server);
    let swaps = 0;
    let swapping = true;
    const swapper = (async () => {
      while (swapping) {
        await server.replaceSnapshot(versions[swaps % 2 === 0 ? 2 : 1]);
        swaps++;
        await new Promise((resolve) => setImmediate(resolve)); // let requests in between swaps
      }
    })();
    const result = await flood(server, 1, () => swaps >= 30, 600);
    swapping = false;
    await swapper;

    expect(result.failures).toEqual([]);
    expect(result.answered).toBeGreaterThanOrEqual(600);
    // Both versions were really served, so the check above saw answers from both sides of swaps.
    expect(result.counts[1]).toBeGreaterThan(0);
    expect(result.counts[2]).toBeGreaterThan(0);
  });

  it('while the snapshot file is rewritten on disk (renamed over, and written in place) with watching on', async () => {
    folder = await mkdtemp(join(tmpdir(), 'atomic-'));
    const file = join(folder, 'atomic.json');
    await writeSnapshot(file, versions[1]);
    const server = await startServer({ paths: [file] });
    servers.push(server);
    const reloadErrors: unknown[] = [];
    server.events.on('reload-error', (event) => reloadErrors.push(event));

    /** Writes version n, and again whenever a reload of it is refused, until the server serves it. */
    const rewrite = async (n: 1 | 2, inPlace: boolean) => {
      for (;;) {
        const refused = reloadErrors.length;
        // In place, a watcher may read the file half-written: it must then keep the old snapshot.
        if (inPlace) await writeFile(file, JSON.stringify(versions[n]));
        else await writeSnapshot(file, versions[n]);
        while (reloadErrors.length === refused) {
          const response = await fetch(`${server.url}/atomic/alias/home`, { headers: { authorization: key } });
          if (((await response.json()) as { meta: { revision: number } }).meta.revision === n) return;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    };
    let rewrites = 0;
    let rewriting = true;
    const rewriter = (async () => {
      while (rewriting) {
        await rewrite(rewrites % 2 === 0 ? 2 : 1, rewrites % 3 === 2);
        rewrites++;
      }
    })();
    const result = await flood(server, 2, () => rewrites >= 8, 400);
    rewriting = false;
    await rewriter;

    expect(result.failures).toEqual([]);
    expect(result.counts[1]).toBeGreaterThan(0);
    expect(result.counts[2]).toBeGreaterThan(0);
    // A half-written file may be refused, never served; anything refused must be a parse error of that file.
    for (const event of reloadErrors as { file: string }[]) expect(event.file).toBe(file);
  });
});
