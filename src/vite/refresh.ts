import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { WebhookVerifier } from '../wire/webhook.ts';
import { pollIntervalSchema } from './poll.ts';

/**
 * The dev refresh endpoint: a POST signed as the local server's webhooks are (spec §10:
 * `X-Webhook-Id`, `X-Webhook-Timestamp`, and `X-Webhook-Signature` over
 * `<id>.<timestamp>.<body>`). A delivery that is unsigned, wrongly signed, more than 5 minutes
 * off, or already accepted gets 401 and causes no work.
 */

export const defaultRefreshPath = '/_comfortable/refresh';

/** The dev options the Astro integration and the Vite plugin share: the signed endpoint and the polls. */
export const devOptionsShape = {
  /**
   * Turns on the signed dev refresh endpoint, at least 16 characters; without it the endpoint is
   * off. Default: `CMFT_REFRESH_SECRET`.
   */
  refreshSecret: z.string().min(16, 'expected a secret of at least 16 characters').optional(),
  /** Path of the dev refresh endpoint. Default `/_comfortable/refresh`. */
  refreshPath: z
    .string()
    .regex(/^\/[^?#]*$/, 'expected a path such as /_comfortable/refresh')
    .optional(),
  /**
   * How often dev asks the CMS whether anything synced has changed, in milliseconds (at least
   * 500), refreshing what did; `false` turns it off. Not with a `snapshot` (its file is watched),
   * never under Vitest (mode `test`). Default 5000, or `CMFT_POLL_INTERVAL`.
   */
  pollInterval: pollIntervalSchema.optional(),
};
const maxBody = 1024 * 1024;

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
export function refreshMiddleware(options: {
  secret: string;
  path?: string;
  run: (payload: unknown) => Promise<unknown>;
}) {
  const path = options.path ?? defaultRefreshPath;
  const verifier = new WebhookVerifier(options.secret);
  return (request: IncomingMessage, response: ServerResponse, next: () => void): void => {
    if ((request.url ?? '').split('?')[0] !== path) {
      next();
      return;
    }
    if (request.method !== 'POST') {
      response.setHeader('allow', 'POST');
      answer(response, 405, { error: 'POST a signed webhook here' });
      return;
    }
    void (async () => {
      const body = await readBody(request);
      if (!body) return answer(response, 413, { error: 'body too large' });
      const refused = verifier.check(request.headers, body);
      if (refused) return answer(response, 401, { error: refused });
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
