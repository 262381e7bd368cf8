import { createHmac, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../src/server/index.ts';
import { signWebhook, WebhookVerifier } from '../src/wire/webhook.ts';
import { serveProcess } from './helpers/cli.ts';
import { rewrite, tinyKey, tinySnapshot as tiny } from './helpers/server.ts';

/**
 * Spec §10, webhooks: after each reload the server POSTs `{ repository, changed, removed }` with
 * `X-Webhook-Id`, `X-Webhook-Timestamp` and `X-Webhook-Signature: sha256=<HMAC of
 * "<id>.<timestamp>.<body>">`; a receiver refuses a wrong signature, a stale timestamp and an id
 * it has accepted before, so a captured delivery cannot be sent again.
 */

const secret = 'webhook-secret-for-tests';
/** The signature as a receiver written from the spec alone computes it. */
const expectedSignature = (headers: IncomingHttpHeaders, body: Buffer, key = secret) =>
  `sha256=${createHmac('sha256', key).update(`${headers['x-webhook-id']}.${headers['x-webhook-timestamp']}.`).update(body).digest('hex')}`;

interface Delivery {
  method: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}
let deliveries: Delivery[];
let delivered: (delivery: Delivery) => void;
const nextDelivery = () => new Promise<Delivery>((resolve) => (delivered = resolve));
const receiver = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const delivery = { method: request.method!, headers: request.headers, body: Buffer.concat(chunks) };
    deliveries.push(delivery);
    response.end('ok');
    delivered(delivery);
  });
});
let receiverUrl: string;
let scratch: string;
beforeAll(async () => {
  deliveries = [];
  scratch = mkdtempSync(join(tmpdir(), 'read-api-webhooks-'));
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

let folders = 0;
/** A folder of its own holding `tiny.json`. */
function snapshotFile(): string {
  const dir = join(scratch, `case-${++folders}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'tiny.json'), JSON.stringify(tiny()));
  return join(dir, 'tiny.json');
}

describe('§10 after a reload the server POSTs a signed webhook', () => {
  it('sends { repository, changed, removed }, with an id, a timestamp and a signature over both and the body', async () => {
    deliveries = [];
    const file = snapshotFile();
    const server = await startServer({ paths: [file], watch: true, webhook: { url: receiverUrl, secret } });
    try {
      const next = tiny();
      next.documents[0].fields.title.en_US = 'Apple harvest, revised';
      next.documents = next.documents.filter((d: any) => d.meta.id !== '103');
      next.assets = next.assets.filter((a: any) => a.meta.id !== '301');
      next.assets.push({ ...next.assets[0], meta: { ...next.assets[0].meta, id: '302' } });
      const delivery = nextDelivery();
      rewrite(file, JSON.stringify(next));
      const { method, headers, body } = await delivery;

      expect(method).toBe('POST');
      expect(headers['content-type']).toMatch(/^application\/json/);
      const payload = JSON.parse(body.toString('utf8'));
      expect(Object.keys(payload).sort()).toEqual(['changed', 'removed', 'repository']);
      expect(payload.repository).toBe('tiny');
      expect([...payload.changed].sort()).toEqual(['100', '302']);
      expect([...payload.removed].sort()).toEqual(['103', '301']);

      expect(headers['x-webhook-id']).toMatch(/^[A-Za-z0-9_-]{8,128}$/);
      expect(Math.abs(Number(headers['x-webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
      const signature = headers['x-webhook-signature'] as string;
      expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
      expect(timingSafeEqual(Buffer.from(signature), Buffer.from(expectedSignature(headers, body)))).toBe(true);
      // The body alone is not what is signed any more: a captured signature says nothing of another id or time.
      expect(signature).not.toBe(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
    } finally {
      await server.close();
    }
  });

  it('is not called for a refused reload', async () => {
    deliveries = [];
    const file = snapshotFile();
    const server = await startServer({ paths: [file], watch: true, webhook: { url: receiverUrl, secret } });
    try {
      const refused = once(server.events, 'reload-error');
      rewrite(file, 'not json');
      await refused;
      const next = tiny();
      next.documents[1].fields.rating = 2;
      const delivery = nextDelivery();
      rewrite(file, JSON.stringify(next));
      await delivery;
      expect(deliveries).toHaveLength(1);
      expect(JSON.parse(deliveries[0]!.body.toString())).toEqual({ repository: 'tiny', changed: ['101'], removed: [] });
    } finally {
      await server.close();
    }
  });

  it('is called after replaceSnapshot too, each delivery with an id of its own', async () => {
    deliveries = [];
    const server = await startServer({ snapshots: [tiny()], watch: false, webhook: { url: receiverUrl, secret } });
    try {
      const verifier = new WebhookVerifier(secret);
      for (const name of ['Robert', 'Roberta']) {
        const next = tiny();
        next.documents[5].fields.name = name;
        const delivery = nextDelivery();
        await server.replaceSnapshot(next);
        const { headers, body } = await delivery;
        expect(JSON.parse(body.toString())).toEqual({ repository: 'tiny', changed: ['201'], removed: [] });
        expect(verifier.check(headers, body)).toBeUndefined();
      }
      expect(deliveries[0]!.headers['x-webhook-id']).not.toBe(deliveries[1]!.headers['x-webhook-id']);
    } finally {
      await server.close();
    }
  });

  it('signs with the secret from CMFT_WEBHOOK_SECRET, which then appears on no command line', async () => {
    deliveries = [];
    const file = snapshotFile();
    const envSecret = 'secret-from-the-environment-0123';
    const server = await serveProcess({
      paths: [file],
      flags: ['--quiet', '--webhook', receiverUrl],
      env: { CMFT_WEBHOOK_SECRET: envSecret },
    });
    try {
      expect(readFileSync(`/proc/${server.run.child.pid}/cmdline`, 'utf8')).not.toContain(envSecret);
      const next = tiny();
      next.documents[2].fields.rating = 1;
      const delivery = nextDelivery();
      rewrite(file, JSON.stringify(next));
      const { headers, body } = await delivery;
      expect(new WebhookVerifier(envSecret).check(headers, body)).toBeUndefined();
      expect(new WebhookVerifier(secret).check(headers, body)).toMatch(/X-Webhook-Signature/);
      expect((await fetch(`${server.url}/tiny`, { headers: { authorization: tinyKey } })).status).toBe(200);
    } finally {
      await server.stop();
    }
  });
});

describe('§10 a receiver refuses what is not a genuine, fresh and new delivery', () => {
  const body = Buffer.from(JSON.stringify({ repository: 'tiny', changed: ['102'], removed: [] }));
  const now = Date.parse('2026-01-01T00:00:00Z');
  const fresh = () => new WebhookVerifier(secret, { now: () => now });

  it('accepts a genuine delivery once, and refuses it sent again', () => {
    const verifier = fresh();
    const headers = signWebhook(secret, body, now);
    expect(verifier.check(headers, body)).toBeUndefined();
    expect(verifier.check(headers, body)).toMatch(/replayed X-Webhook-Id/);
  });

  it.each([
    ['another secret', () => signWebhook('another secret', body, now), body],
    ['a tampered body', () => signWebhook(secret, body, now), Buffer.from(body.toString().replace('102', '100'))],
    [
      'another id under the signature',
      () => ({ ...signWebhook(secret, body, now), 'x-webhook-id': 'forged-id' }),
      body,
    ],
    [
      'another time under the signature',
      () => ({ ...signWebhook(secret, body, now), 'x-webhook-timestamp': String(now / 1000 + 1) }),
      body,
    ],
    ['no signature', () => ({ ...signWebhook(secret, body, now), 'x-webhook-signature': undefined }), body],
    ['no id', () => ({ ...signWebhook(secret, body, now), 'x-webhook-id': undefined }), body],
    ['no timestamp', () => ({ ...signWebhook(secret, body, now), 'x-webhook-timestamp': undefined }), body],
    ['a sha1 signature', () => ({ ...signWebhook(secret, body, now), 'x-webhook-signature': 'sha1=00' }), body],
  ])('refuses %s', (_name, headers, sent) => {
    expect(fresh().check(headers(), sent)).toMatch(/missing or invalid X-Webhook-Signature/);
  });

  it.each([
    ['six minutes old', -6 * 60_000],
    ['six minutes ahead', 6 * 60_000],
  ])('refuses a timestamp %s, and accepts one four minutes off', (_name, offset) => {
    expect(fresh().check(signWebhook(secret, body, now + offset), body)).toMatch(/stale X-Webhook-Timestamp/);
    expect(fresh().check(signWebhook(secret, body, now + Math.sign(offset) * 4 * 60_000), body)).toBeUndefined();
  });

  it('remembers a bounded number of ids, forgetting those whose time is past first', () => {
    let clock = now;
    const verifier = new WebhookVerifier(secret, { now: () => clock, maxIds: 100 });
    const old = signWebhook(secret, body, clock);
    expect(verifier.check(old, body)).toBeUndefined();
    for (let i = 0; i < 1_000; i++) expect(verifier.check(signWebhook(secret, body, clock), body)).toBeUndefined();
    expect(verifier.remembered).toBe(100);
    clock += 6 * 60_000; // every id remembered is stale now, and is forgotten
    expect(verifier.check(signWebhook(secret, body, clock), body)).toBeUndefined();
    expect(verifier.remembered).toBe(1);
    expect(verifier.check(old, body)).toMatch(/stale/); // forgotten, but refused all the same
  });
});
