import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError } from './errors.ts';

/**
 * The HTTP side of the server (spec §9): timeouts for slow or stalled requests, request bodies
 * read within bounds, answers written, and the spec's JSON error where Node's own parser refuses
 * a request. What a request asks for is none of its business.
 */

/** How long the server waits for a request (the client's `Timeouts` are how long it waits for an answer). */
export interface RequestTimeouts {
  /** Time for a request's line and headers to arrive; default 30 s. */
  headersMs: number;
  /** Time for a request's body to arrive once its headers have; default 30 s. */
  bodyMs: number;
}

export const defaultRequestTimeouts: RequestTimeouts = { headersMs: 30_000, bodyMs: 30_000 };

/** A POST body larger than this is answered 413 (spec §9). */
const maxBodyBytes = 1024 * 1024;

/** A body over this size is parsed, and its request answered, in turns (see `inTurn`). */
export const largeBody = 64 * 1024;

let lane: Promise<unknown> = Promise.resolve();

/**
 * Runs `work` once the heavy work queued before it is done, each in a turn of the event loop of
 * its own, so that what else has arrived is answered in between: a large body costs tens of ms
 * to parse, and two parsed back to back would hold every other client for both (spec §9).
 */
export function inTurn<T>(work: () => T): Promise<T> {
  const turn = lane.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(work);
  lane = turn.then(
    () => undefined, // not the body or the answer: the lane keeps nothing alive
    () => undefined,
  );
  return turn;
}

/**
 * How much of a body over the limit is still read, and dropped, after its 413 is sent. A server
 * that closes a connection while the client is still sending makes the client's next write fail,
 * and many clients then report that failure instead of the answer they were sent; reading the
 * rest lets the client finish and read the 413. Past this much, the connection is closed.
 */
const maxDrainBytes = 16 * 1024 * 1024;

const json = 'application/json; charset=utf-8';

/** Writes a raw answer on a socket Node's HTTP parser has given up on, then closes it. */
function writeRaw(socket: Duplex, status: number, reason: string, error: ApiError): void {
  const body = JSON.stringify(error.body());
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: ${json}\r\naccess-control-allow-origin: *\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/**
 * An HTTP server for `handle`. A request whose headers do not arrive within `headersMs` is
 * answered 408 and its connection closed (Node checks this on an interval, here a quarter of
 * the time, at most a second); a body has `readBody`'s own timer, and Node's request timeout
 * stays behind both as a bound on the whole request.
 */
export function createHttpServer(
  handle: (request: IncomingMessage, response: ServerResponse) => Promise<void>,
  timeouts: RequestTimeouts,
  log: (line: string) => void,
): Server {
  const server = createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.headersMs + timeouts.bodyMs + 5_000,
      connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(timeouts.headersMs / 4))),
      keepAliveTimeout: 65_000,
    },
    (request, response) => {
      void handle(request, response).catch((error: unknown) => {
        log(`internal error: ${(error as Error).stack ?? String(error)}`);
        if (response.headersSent) return void response.destroy();
        response.writeHead(500, { 'content-type': json });
        response.end(
          JSON.stringify({
            status: 500,
            message: 'Internal error',
            error: { code: 'internal', message: 'Internal error' },
          }),
        );
      });
    },
  );
  // Node refuses some requests before `handle` sees them (a URL or headers over its 16 KiB limit,
  // a malformed request line, headers too slow) with a bare answer; answer the spec's JSON instead.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const answering = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    if (!socket.writable || answering?.headersSent) return void socket.destroy();
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      return writeRaw(
        socket,
        408,
        'Request Timeout',
        new ApiError(408, 'The request did not arrive in time; its connection is closed'),
      );
    }
    if (!error.code?.startsWith('HPE_')) return void socket.destroy();
    const message =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request line and headers are too large; send long options as a JSON body with POST'
        : `Malformed HTTP request (${error.code})`;
    writeRaw(socket, 400, 'Bad Request', new ApiError(400, message));
  });
  return server;
}

/** Writes an answer: text, or parts to send one after another. HEAD and 304 get no body. */
export function send(
  request: IncomingMessage,
  response: ServerResponse,
  status: number,
  headers: Record<string, string>,
  body: string | Buffer[],
): void {
  const parts = typeof body === 'string' ? [Buffer.from(body)] : body;
  let length = 0;
  for (const part of parts) length += part.length;
  response.writeHead(status, {
    'access-control-allow-origin': '*',
    'access-control-expose-headers': 'ETag',
    ...headers,
    ...(status === 304 ? {} : { 'content-length': String(length) }),
  });
  if (request.method === 'HEAD' || status === 304) return void response.end();
  // A small answer is cheaper joined; a big one leaves corked in one writev, as joining
  // megabytes would cost a copy and garbage collection.
  if (length <= 256 * 1024) return void response.end(parts.length === 1 ? parts[0] : Buffer.concat(parts, length));
  response.cork();
  for (const part of parts) response.write(part);
  response.end();
}

/** Writes an error as the spec's JSON; a 408 closes the connection, whose request never finished. */
export function sendJson(request: IncomingMessage, response: ServerResponse, error: ApiError): void {
  const headers = { 'content-type': json, ...error.headers, ...(error.status === 408 ? { connection: 'close' } : {}) };
  send(request, response, error.status, headers, JSON.stringify(error.body()));
}

/**
 * Reads a request body of up to `maxBodyBytes`. Rejects with a 413 as soon as the body is known
 * to be larger (declared or sent) and goes on reading, and dropping, up to `maxDrainBytes` more;
 * rejects with a 408 when the body has not arrived within `bodyMs`.
 */
export function readBody(request: IncomingMessage, timeouts: RequestTimeouts): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    const finish = () => {
      clearTimeout(timer);
      request.removeListener('data', onData);
    };
    const refuse = () => {
      tooLarge = true;
      chunks.length = 0;
      reject(new ApiError(413, `The request body is larger than ${maxBodyBytes} bytes`));
    };
    const timer = setTimeout(() => {
      finish();
      if (tooLarge)
        request.socket.destroy(); // the 413 has been sent; the rest never came
      else
        reject(
          new ApiError(
            408,
            `The request body did not arrive within ${Math.round(timeouts.bodyMs / 1000)} s; the connection is closed`,
          ),
        );
    }, timeouts.bodyMs);
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (tooLarge) {
        if (size > maxBodyBytes + maxDrainBytes) {
          finish();
          request.socket.destroy();
        }
      } else if (size > maxBodyBytes) refuse();
      else chunks.push(chunk);
    };
    request.on('data', onData);
    request.on('end', () => {
      finish();
      if (!tooLarge) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    request.on('error', (error) => {
      finish();
      reject(error);
    });
    if (Number(request.headers['content-length'] ?? 0) > maxBodyBytes) refuse();
  });
}
