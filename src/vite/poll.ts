import { z } from 'zod';
import type { SyncLogger } from '../sync/engine.ts';

/**
 * Dev that follows the CMS: `astro dev` and the Vite plugin's dev server ask the CMS every few
 * seconds whether anything synced has changed (a sync, which costs a dozen small requests when
 * nothing has) and refresh what did. One ask at a time; after a failure the next ask waits
 * twice as long, up to 15 seconds (a failing ask costs one request, and an edit must show soon
 * after the CMS is back), and a failure is printed once, not at every ask, until the CMS answers
 * again or fails in another way (a wrong key after a network failure).
 */

/** How often dev asks the CMS by default, in milliseconds. */
export const defaultPollInterval = 5_000;
/** The longest wait between two asks while the CMS fails. */
const maxBackoff = 15_000;

const pollIntervalError = 'expected milliseconds between two asks of the CMS (at least 500), or false to turn it off';

/** The `pollInterval` option: milliseconds (at least 500), or false for off; from the environment as a string. */
export const pollIntervalSchema = z.preprocess(
  (value: unknown) =>
    typeof value !== 'string'
      ? value
      : /^(false|off)$/i.test(value.trim())
        ? false
        : /^\d+$/.test(value.trim())
          ? Number(value)
          : value,
  z.union([z.number().int(pollIntervalError).min(500, pollIntervalError), z.literal(false)], {
    error: pollIntervalError,
  }),
) as z.ZodType<number | false, number | false>; // typed as users write it; a string comes only from CMFT_POLL_INTERVAL

/**
 * What makes two failures the same: the codes of the error and its causes down to the Read API
 * client's (`server_failed network`), not the message, which names the attempts and the request
 * that failed and so differs from one ask to the next while the CMS is down.
 */
export function failureKind(error: unknown): string {
  const codes: string[] = [];
  let at = error as { code?: unknown; attempts?: unknown; cause?: unknown } | undefined;
  while (at && typeof at === 'object') {
    if (typeof at.code === 'string') codes.push(at.code);
    if (typeof at.attempts === 'number') break; // the client's error: its cause is the socket's, which varies
    at = at.cause as typeof at;
  }
  return codes.length > 0 ? codes.join(' ') : String((error as Error | undefined)?.message);
}

/**
 * Calls `ask` every `interval` ms, never two at once, until the returned function is called
 * (the timer never keeps the process alive). `ask` throws when the CMS fails.
 */
export function pollCms(interval: number, ask: () => Promise<void>, log: SyncLogger): () => void {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let failures = 0;
  let printed: string | undefined;
  const next = (wait: number) => {
    if (stopped) return;
    timer = setTimeout(tick, wait);
    timer.unref();
  };
  const tick = async () => {
    try {
      await ask();
      if (failures > 0) log.info('The CMS answers again: dev follows its changes');
      failures = 0;
      printed = undefined;
    } catch (error) {
      failures++;
      const kind = failureKind(error);
      if (kind !== printed) {
        log.warn(
          `Could not ask the CMS for changes: ${(error as Error).message.replace(/\.+$/, '')}. Dev keeps serving ` +
            `the content of its last sync and asks again, less often while it fails`,
        );
        printed = kind;
      }
    }
    next(Math.min(interval * 2 ** failures, Math.max(maxBackoff, interval)));
  };
  next(interval);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
