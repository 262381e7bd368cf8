import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The dev refresh endpoint: a POST whose body is signed with HMAC-SHA256 in
 * `X-Webhook-Signature: sha256=<hex>` (the local server's webhook format). Anything unsigned
 * or wrongly signed gets 401 and causes no work.
 */

export const defaultRefreshPath = '/_comfortable/refresh';
const maxBody = 1024 * 1024;

/** Checks `sha256=<hex>` against the HMAC of the raw body, in constant time. */
export function verifySignature(secret: string, body: Buffer, header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header[0] : header;
  const match = /^sha256=([0-9a-f]{64})$/i.exec(value?.trim() ?? '');
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(body).digest();
  const given = Buffer.from(match[1]!, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBody) {
        resolve(undefined);
        request.resume();
      } else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

/** Connect middleware for the refresh endpoint; `run` does the refresh and returns what to answer. */
export function refreshMiddleware(options: { secret: string; path?: string; run: (payload: unknown) => Promise<unknown> }) {
  const path = options.path ?? defaultRefreshPath;
  return (request: IncomingMessage, response: ServerResponse, next: () => void): void => {
    if ((request.url ?? '').split('?')[0] !== path) return next();
    if (request.method !== 'POST') {
      response.setHeader('allow', 'POST');
      return answer(response, 405, { error: 'POST a signed webhook here' });
    }
    void (async () => {
      const body = await readBody(request);
      if (!body) return answer(response, 413, { error: 'body too large' });
      if (!verifySignature(options.secret, body, request.headers['x-webhook-signature'])) {
        return answer(response, 401, { error: 'missing or invalid X-Webhook-Signature' });
      }
      let payload: unknown;
      try {
        payload = body.length ? JSON.parse(body.toString('utf8')) : {};
      } catch {
        return answer(response, 400, { error: 'the body is not JSON' });
      }
      answer(response, 200, await options.run(payload));
    })().catch((error: unknown) => answer(response, 500, { error: (error as Error).message }));
  };
}
