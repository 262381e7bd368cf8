import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAllPools, createClient } from '../src/api/index.ts';

/**
 * `pages()` against a server that answers fewer documents a page than asked (a proxy or a
 * service with a lower cap than the API's 1,000), saying so in `meta.limit`: every document
 * still comes, once, in order.
 */

const total = 10;
const cap = 3;
let close: (() => void) | undefined;

afterEach(async () => {
  close?.();
  await closeAllPools();
});

/** A real server of `total` documents that caps each page at `cap`, as the spec's server caps it at 1,000. */
async function cappedServer(): Promise<string> {
  const server = createServer((request, response) => {
    const query = new URL(request.url!, 'http://x').searchParams;
    const offset = Number(query.get('offset') ?? 0);
    const limit = Math.min(Number(query.get('limit') ?? 25), cap);
    const data = Array.from({ length: Math.max(0, Math.min(limit, total - offset)) }, (_, i) => ({ fields: {}, meta: { id: String(100 + offset + i), contentType: 'note' } }));
    const body = JSON.stringify({ status: 200, meta: { count: data.length, limit, offset, total }, data });
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  close = () => server.close();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

describe('pages() when the server caps the page size', () => {
  it('steps by the limit the server answered with, so no document is skipped', async () => {
    const client = createClient({ baseUrl: await cappedServer(), repository: 'capped', apiKey: 'k' });
    const ids: string[] = [];
    for await (const page of client.pages('documents', { pageSize: 5 })) ids.push(...page.data.map((record) => record.meta!.id!));
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => String(100 + i)));
  });
});
