import { connect } from 'node:net';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServeProcess, serveProcess } from './helpers/cli.ts';
import { startTiny, tinyKey } from './helpers/server.ts';

/**
 * Spec §9, at the level of HTTP: slow or stalled requests are timed out (a body not received
 * within 30 s is answered 408 and the connection closed), and a 413 is answered so that an HTTP
 * client reads it. The server runs as `serve` in a process of its own, as an attacker meets it:
 * in one process with the client, the two would take turns and hide what goes wrong between them.
 */

interface Exchange {
  /** The raw answer, or '' when the connection closed without one. */
  text: string;
  status?: number;
  body?: any;
  /** Milliseconds from the first byte sent to the connection's close. */
  closedAfter: number;
}

/** Writes `bytes` on a fresh connection, then nothing more, and reads until the server closes it. */
function stall(port: number, bytes: string, limitMs: number): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the connection was still open after ${limitMs} ms`));
    }, limitMs);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]) || undefined;
      resolve({
        text,
        status,
        body: end === -1 ? undefined : JSON.parse(text.slice(end + 4) || 'null'),
        closedAfter: performance.now() - started,
      });
    });
    socket.write(bytes);
  });
}

const stalledBody = `POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nAuthorization: ${tinyKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"limit":`;

describe('§9 a request body not received in time is answered 408 and the connection closed', () => {
  it('with the default of 30 seconds, on the serve command', { timeout: 60_000 }, async () => {
    const server = await serveProcess({ flags: ['--quiet'] });
    try {
      const answer = await stall(server.port, stalledBody, 45_000);
      expect(answer.status).toBe(408);
      expect(answer.body).toMatchObject({ status: 408, error: { code: 'request_timeout' } });
      expect(answer.text.toLowerCase()).toContain('connection: close');
      expect(answer.closedAfter).toBeGreaterThanOrEqual(29_000);
    } finally {
      await server.stop();
    }
  });

  it('after the time the server is given, when a body stops halfway', async () => {
    const server = await startTiny({ timeouts: { bodyMs: 300 } });
    try {
      const answer = await stall(server.port, stalledBody, 5_000);
      expect(answer.status).toBe(408);
      expect(answer.body).toMatchObject({ status: 408, error: { code: 'request_timeout' } });
      expect(answer.body.message).toMatch(/body/);
    } finally {
      await server.close();
    }
  });

  it('and headers that never end are cut off too', async () => {
    const server = await startTiny({ timeouts: { headersMs: 300 } });
    try {
      const answer = await stall(server.port, `GET /v1/tiny HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n`, 5_000);
      expect(answer.status).toBe(408);
      expect(answer.body).toMatchObject({ status: 408, error: { code: 'request_timeout' } });
    } finally {
      await server.close();
    }
  });

  it('while a request whose body comes in time is answered as usual', async () => {
    const server = await startTiny({ timeouts: { bodyMs: 2_000 } });
    try {
      const response = await fetch(`${server.url}/tiny/documents`, {
        method: 'POST',
        headers: { authorization: tinyKey },
        body: '{"limit":1}',
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as any).meta.limit).toBe(1);
    } finally {
      await server.close();
    }
  });
});

describe('§9 a body over 1 MiB gets a 413 that the client reads', () => {
  let server: ServeProcess;
  beforeAll(async () => {
    server = await serveProcess({ flags: ['--quiet'] });
  });
  afterAll(() => server?.stop());

  const body = Buffer.from(JSON.stringify({ search: 'a'.repeat(8 * 1024 * 1024) }));

  /** POSTs the body with node:http and resolves with the status, or the error code of a failed request. */
  const post = () =>
    new Promise<number | string>((resolve) => {
      const request = httpRequest(
        `${server.url}/tiny/documents`,
        { method: 'POST', headers: { authorization: tinyKey, 'content-length': body.length } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => {
            const answer = JSON.parse(Buffer.concat(chunks).toString());
            resolve(
              answer.error?.code === 'payload_too_large'
                ? response.statusCode!
                : `${response.statusCode} ${answer.error?.code}`,
            );
          });
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      request.end(body);
    });

  it('through node:http, 20 times out of 20', async () => {
    const results: (number | string)[] = [];
    for (let i = 0; i < 20; i++) results.push(await post());
    expect(results).toEqual(Array(20).fill(413));
  });

  it('through fetch, 20 times out of 20', async () => {
    const results: (number | string)[] = [];
    for (let i = 0; i < 20; i++) {
      try {
        const response = await fetch(`${server.url}/tiny/documents`, {
          method: 'POST',
          headers: { authorization: tinyKey },
          body,
        });
        const answer = (await response.json()) as any;
        results.push(
          answer.error?.code === 'payload_too_large' ? response.status : `${response.status} ${answer.error?.code}`,
        );
      } catch (error) {
        results.push(((error as Error).cause as NodeJS.ErrnoException | undefined)?.code ?? (error as Error).message);
      }
    }
    expect(results).toEqual(Array(20).fill(413));
  });

  it('and the server goes on answering on the same connections', async () => {
    await post();
    const response = await fetch(`${server.url}/tiny`, { headers: { authorization: tinyKey } });
    expect(response.status).toBe(200);
  });
});
