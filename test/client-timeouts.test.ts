import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../src/api/client.ts';
import { type ReadApiError, TimeoutError } from '../src/api/errors.ts';
import { closeAllPools, type Timeouts } from '../src/api/transport.ts';

/**
 * Every timeout a user sets holds: the connection, the answer's headers, silence in its body
 * and the time budget each end the attempt when they are due, not when undici's own timers
 * (which tick about once a second) get to it. The servers are real and misbehave on purpose.
 *
 * A timeout fires within a few milliseconds on an idle machine; the tests allow 150 ms, as the
 * 2-core machines they run on are often busy with other suites. Without our own timers the
 * same requests end up to a second late, far outside that margin.
 */

const apiKey = 'timeout-test-key-5e1f0c2b9a7d';
const margin = 150;
const servers: Server[] = [];
const sockets = new Set<Socket>();

afterEach(async () => {
  await closeAllPools();
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function listen(server: Server): Promise<number> {
  servers.push(server);
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

const httpServer = async (handler: RequestListener) => `http://127.0.0.1:${await listen(createHttpServer(handler))}/v1`;

const listBody = JSON.stringify({ status: 200, meta: { count: 0, limit: 25, offset: 0, total: 0 }, data: [] });

/** Runs one request with only the given limits, retried never, and says how it ended and when. */
async function attempt(baseUrl: string, timeouts: Partial<Timeouts>, budgetMs = 60_000) {
  const client = createClient({ baseUrl, repository: 'tiny', apiKey, timeouts, retry: { attempts: 1, budgetMs } });
  const started = performance.now();
  const error = await client.documents().then(
    () => undefined,
    (e: unknown) => e as ReadApiError,
  );
  return { error, ms: performance.now() - started };
}

function expectTimeout(error: ReadApiError | undefined, said: RegExp) {
  expect(error).toBeInstanceOf(TimeoutError);
  expect(error!.message).toMatch(said);
  for (const text of [error!.message, JSON.stringify(error), inspect(error, { depth: 10 }), String(error!.stack)])
    expect(text).not.toContain(apiKey);
}

describe('timeouts', () => {
  it('headersMs: a server that never answers is left when the headers are due', async () => {
    const url = await httpServer(() => {});
    const { error, ms } = await attempt(url, { headersMs: 300 });
    expectTimeout(error, /timed out after 1 attempt: Headers timeout: no answer within 300 ms/);
    expect(ms).toBeGreaterThanOrEqual(299);
    expect(ms).toBeLessThan(300 + margin);
  });

  it('bodyMs: a body that stalls is left when the silence has lasted bodyMs', async () => {
    let headersSent = 0;
    const url = await httpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(listBody.length) });
      response.write(listBody.slice(0, 10));
      headersSent = performance.now();
    });
    const { error } = await attempt(url, { bodyMs: 300 });
    const silence = performance.now() - headersSent;
    expectTimeout(error, /Body timeout: the answer stalled for 300 ms/);
    expect(silence).toBeGreaterThanOrEqual(299);
    expect(silence).toBeLessThan(300 + margin);
  });

  it('bodyMs: a body that keeps arriving, however slowly, is read to its end', async () => {
    const url = await httpServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(listBody.length) });
      const pieces = [listBody.slice(0, 20), listBody.slice(20, 40), listBody.slice(40, 60), listBody.slice(60)];
      const next = () => {
        const piece = pieces.shift();
        if (piece === undefined) return;
        response.write(piece);
        setTimeout(next, 120);
      };
      next();
    });
    const { error, ms } = await attempt(url, { bodyMs: 250 });
    expect(error).toBeUndefined();
    expect(ms).toBeGreaterThan(300); // longer than bodyMs in all: only silence counts
  });

  it('connectMs: a connection whose TLS handshake never ends is left when it is due', async () => {
    const port = await listen(createTcpServer(() => {})); // accepts, then never answers the client's hello
    const { error, ms } = await attempt(`https://127.0.0.1:${port}/v1`, { connectMs: 300 });
    expectTimeout(error, /Connect timeout: no connection within 300 ms/);
    expect(ms).toBeGreaterThanOrEqual(299);
    expect(ms).toBeLessThan(300 + margin);
  });

  it("connectMs: each client's own, though clients of one server share its connections", async () => {
    const port = await listen(createTcpServer(() => {}));
    const url = `https://127.0.0.1:${port}/v1`;
    expectTimeout((await attempt(url, { connectMs: 200 })).error, /within 200 ms/); // the first client of this server
    const { error, ms } = await attempt(url, { connectMs: 3_000 });
    expectTimeout(error, /Connect timeout: no connection within 3000 ms/);
    expect(ms).toBeGreaterThanOrEqual(2_999);
  });

  it('the time budget ends the attempt in flight when it runs out, whatever the per-phase timeouts', async () => {
    const url = await httpServer(() => {});
    const { error, ms } = await attempt(url, { headersMs: 60_000 }, 300);
    expectTimeout(error, /the time budget of 300 ms ran out/);
    expect(ms).toBeGreaterThanOrEqual(299);
    expect(ms).toBeLessThan(300 + margin);
  });

  it('leave no timer behind, whether the request succeeds or times out', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const silent = await httpServer(() => {});
    const answering = await httpServer((_request, response) =>
      response.writeHead(200, { 'content-type': 'application/json' }).end(listBody),
    );
    await attempt(answering, { headersMs: 5_000, bodyMs: 5_000 }); // undici's own timers, if any, start here
    const before = timers();
    for (let i = 0; i < 5; i++) {
      expect((await attempt(answering, { headersMs: 5_000, bodyMs: 5_000 })).error).toBeUndefined();
      expect((await attempt(silent, { headersMs: 50, bodyMs: 5_000, connectMs: 5_000 })).error).toBeInstanceOf(
        TimeoutError,
      );
    }
    expect(timers()).toBeLessThanOrEqual(before);
  });
});
