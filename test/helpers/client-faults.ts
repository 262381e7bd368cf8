import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ClientOptions, createClient, type ReadApiClient } from '../../src/api/client.ts';
import type { ResponseEvent } from '../../src/api/transport.ts';

/**
 * Servers that misbehave on purpose, for the client fault tests (test/client-faults*.test.ts):
 * each is a real node:http server on 127.0.0.1 that counts what it receives, and a test file
 * closes them after each test with closeFaultyServers(). Also the answers they send and a client
 * whose retry delays are kept small so the tests stay fast.
 */

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  at: number;
}

export interface FaultyServer {
  url: string;
  seen: Seen[];
  close(): Promise<void>;
}

export type Handler = (request: IncomingMessage, response: ServerResponse, n: number) => unknown;

const open: FaultyServer[] = [];

/** Starts a server whose handler gets each request with its number (1, 2, …). */
export async function startFaulty(handler: Handler): Promise<FaultyServer> {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    seen.push({ method: request.method!, url: request.url!, headers: request.headers, at: performance.now() });
    request.resume();
    void handler(request, response, seen.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const faulty: FaultyServer = {
    url: `http://127.0.0.1:${port}/v1`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  open.push(faulty);
  return faulty;
}

/** Closes every server started since the last call. */
export async function closeFaultyServers(): Promise<void> {
  await Promise.all(open.splice(0).map((server) => server.close()));
}

/** A list answer holding one document. */
export const listBody = JSON.stringify({
  status: 200,
  meta: { count: 1, limit: 25, offset: 0, total: 1 },
  data: [{ fields: { title: 'Hello' }, meta: { id: '1', contentType: 'news' } }],
});

/** Answers with a JSON body (a string is sent as it is). */
export function json(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  response
    .writeHead(status, {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(text)),
      ...headers,
    })
    .end(text);
}

export const errorBody = (status: number, message: string) => ({ status, message, error: { code: 'x', message } });

export const fastRetry = { attempts: 3, baseDelayMs: 1, maxDelayMs: 5, budgetMs: 10_000 };

/** A client of `url` with quick retries, that pushes each response event onto `events`. */
export function clientOf(
  url: string,
  options: Partial<ClientOptions> = {},
  events: ResponseEvent[] = [],
): ReadApiClient {
  return createClient({
    baseUrl: url,
    repository: 'tiny',
    apiKey: 'fault-key',
    retry: fastRetry,
    onResponse: (event) => events.push(event),
    ...options,
  });
}

/** A port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
