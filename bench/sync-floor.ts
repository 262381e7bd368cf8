import { Pool } from 'undici';

/**
 * The floor of a warm sync with no change, for bench/sync.ts (forked): the id listing such a
 * sync asks (a collection with `locale=all`, `fields=meta(id,updatedAt,revision)`, `limit=1000`,
 * every offset) with nothing but undici's `Pool` and `request`, and `JSON.parse` of each body:
 * no validation, no cache, no comparison. In a process of its own, as each sync is, so that both
 * start as cold (no connection open, nothing compiled yet).
 *
 * argv[2] is `{ baseUrl, repository, apiKey, collection, inFlight }` as JSON. The first page
 * comes alone (it tells the total), then the rest, `inFlight` at a time: 1 asks the pages one
 * after the other. Sends back over IPC `{ ms, pages, bytes, records }`: the wall time from the
 * first request to the last body parsed, and what was received.
 */

interface FloorConfig {
  baseUrl: string;
  repository: string;
  apiKey: string;
  collection: string;
  inFlight: number;
}

const { baseUrl, repository, apiKey, collection, inFlight }: FloorConfig = JSON.parse(process.argv[2]!);
const pageSize = 1000;
// The query the sync sends for an id listing (src/sync/fetch.ts, serialised by src/api/query.ts);
// bench/sync.ts compares the bytes received with those of the sync's listings.
const query = 'locale=all&fields=meta(id,updatedAt,revision)';
const { origin, pathname } = new URL(baseUrl);
const path = `${pathname}/${encodeURIComponent(repository)}/collections/${encodeURIComponent(collection)}`;

const pool = new Pool(origin);
let bytes = 0;
let pages = 0;
let records = 0;

/** One page of the listing, parsed; returns the total the server tells. */
async function page(offset: number): Promise<number> {
  const { statusCode, headers, body } = await pool.request({
    method: 'GET',
    path: `${path}?${query}&limit=${pageSize}&offset=${offset}`,
    headers: { accept: 'application/json', authorization: apiKey },
  });
  const text = await body.text();
  if (statusCode !== 200) throw new Error(`the floor got a ${statusCode} at offset ${offset}: ${text.slice(0, 200)}`);
  const answer = JSON.parse(text) as { data: unknown[]; meta: { total: number } };
  bytes += Number(headers['content-length']) || Buffer.byteLength(text);
  pages++;
  records += answer.data.length;
  return answer.meta.total;
}

/** Asks every offset, `inFlight` at a time: each lane takes the next offset when its page is in. */
async function rest(offsets: number[]): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < offsets.length) await page(offsets[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, offsets.length) }, lane));
}

const started = performance.now();
const total = await page(0);
const offsets: number[] = [];
for (let offset = pageSize; offset < total; offset += pageSize) offsets.push(offset);
await rest(offsets);
const ms = performance.now() - started;
await pool.close();

if (records !== total) throw new Error(`the floor listed ${records} records, the server told ${total}`);
process.send!({ ms, pages, bytes, records }, () => process.exit(0));
