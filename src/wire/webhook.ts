import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/**
 * The signed webhook of spec §10, which the local server sends after a reload and the dev
 * refresh endpoint accepts:
 *
 *   X-Webhook-Id: <unique id>
 *   X-Webhook-Timestamp: <unix seconds>
 *   X-Webhook-Signature: sha256=<hex HMAC-SHA256 of "<id>.<timestamp>.<raw body>" with the secret>
 *
 * Signing the id and the time with the body is what lets a receiver refuse a captured delivery
 * sent again: a stale timestamp, or an id it has accepted before.
 */

export const webhookHeaders = {
  id: 'x-webhook-id',
  timestamp: 'x-webhook-timestamp',
  signature: 'x-webhook-signature',
} as const;

/** How far a delivery's timestamp may be from the receiver's clock. */
export const webhookToleranceSeconds = 5 * 60;

const idPattern = /^[A-Za-z0-9_-]{1,128}$/;
const timestampPattern = /^\d{1,12}$/;

function signature(secret: string, id: string, timestamp: string, body: string | Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(body).digest();
}

/** The headers of a delivery of `body`: a new id, the time, and the signature over both and the body. */
export function signWebhook(secret: string, body: string | Uint8Array, now = Date.now()): Record<string, string> {
  const id = randomUUID();
  const timestamp = String(Math.floor(now / 1000));
  return {
    [webhookHeaders.id]: id,
    [webhookHeaders.timestamp]: timestamp,
    [webhookHeaders.signature]: `sha256=${signature(secret, id, timestamp, body).toString('hex')}`,
  };
}

type Headers = Record<string, string | string[] | undefined>;

const header = (headers: Headers, name: string): string => {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
};

/**
 * Checks deliveries for one secret: the signature in constant time, the timestamp against the
 * clock, and the id against those accepted in the last ten minutes. Memory is bounded: past
 * `maxIds` remembered ids the oldest is forgotten (only the secret's holder can make deliveries
 * that fill it).
 */
export class WebhookVerifier {
  readonly #secret: string;
  readonly #now: () => number;
  readonly #maxIds: number;
  /** Accepted ids, oldest first, each with the time (ms) after which its timestamp is stale anyway. */
  readonly #seen = new Map<string, number>();

  constructor(secret: string, options: { now?: () => number; maxIds?: number } = {}) {
    this.#secret = secret;
    this.#now = options.now ?? Date.now;
    this.#maxIds = options.maxIds ?? 10_000;
  }

  /** How many accepted ids are remembered now. */
  get remembered(): number {
    return this.#seen.size;
  }

  /**
   * Undefined when the delivery is genuine and new (its id is then remembered), else why not.
   * `body` is the raw body, or its text (`await request.text()`), which a genuine delivery's
   * UTF-8 JSON gives back byte for byte.
   */
  check(headers: Headers, body: string | Uint8Array): string | undefined {
    const id = header(headers, webhookHeaders.id);
    const timestamp = header(headers, webhookHeaders.timestamp);
    const given = /^sha256=([0-9a-f]{64})$/i.exec(header(headers, webhookHeaders.signature))?.[1];
    if (!given || !idPattern.test(id) || !timestampPattern.test(timestamp))
      return `missing or invalid ${signatureHeaders}`;
    if (!timingSafeEqual(Buffer.from(given, 'hex'), signature(this.#secret, id, timestamp, body)))
      return `missing or invalid ${signatureHeaders}`;
    const now = this.#now();
    const sent = Number(timestamp) * 1000;
    if (Math.abs(now - sent) > webhookToleranceSeconds * 1000)
      return 'stale X-Webhook-Timestamp: more than 5 minutes from this clock';
    this.#forgetStale(now);
    if (this.#seen.has(id)) return 'replayed X-Webhook-Id: this delivery was accepted before';
    if (this.#seen.size >= this.#maxIds) this.#seen.delete(this.#seen.keys().next().value!);
    this.#seen.set(id, sent + webhookToleranceSeconds * 1000);
    return undefined;
  }

  #forgetStale(now: number): void {
    for (const [id, staleAfter] of this.#seen) {
      if (staleAfter >= now) break; // kept in the order accepted: roughly the order of their times
      this.#seen.delete(id);
    }
  }
}

const signatureHeaders = 'X-Webhook-Signature (with X-Webhook-Id and X-Webhook-Timestamp)';
