import { describe, expect, it, vi } from 'vitest';
import { createClient } from '../src/api/client.ts';
import { sync } from '../src/sync/engine.ts';
import { failureKind, pollCms } from '../src/vite/poll.ts';
import { freePort } from './helpers/astro.ts';
import { configFor, tempDir } from './helpers/magazine.ts';

/**
 * Dev's asks of the CMS (`pollCms`): one at a time, a failure said once until the CMS answers
 * again or fails another way, and nothing asked once stopped.
 */

/** Keeps what the poll prints, one line each, with its level. */
function recorder() {
  const lines: string[] = [];
  return {
    lines,
    info: (m: string) => void lines.push(`info ${m}`),
    warn: (m: string) => void lines.push(`warn ${m}`),
  };
}

const until = async (done: () => boolean) => {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
};

const failing = (code: string, message: string) => Object.assign(new Error(message), { code, attempts: 1 });

describe('a failure of the CMS', () => {
  it('is the same failure from one ask to the next while the CMS is down, whatever the message says', async () => {
    const dir = await tempDir();
    const down = `http://127.0.0.1:${await freePort()}`;
    const first = await sync(configFor(down, dir), { info() {}, warn() {} }).catch((error: unknown) => error);
    const client = createClient({
      baseUrl: down,
      repository: 'mag',
      apiKey: 'k',
      retry: { attempts: 2, baseDelayMs: 1 },
    });
    const second = await client.repository().catch((error: unknown) => error);
    expect((first as Error).message).not.toBe((second as Error).message);
    expect(failureKind(first)).toBe('server_failed network');
    expect(failureKind(second)).toBe('network');
    expect(failureKind(new Error('plain'))).toBe('plain');
  });
});

describe('pollCms', () => {
  it('says a failure once, another failure once, and that the CMS answers again', async () => {
    const answers = [
      failing('network', 'refused after 5 attempts'),
      failing('network', 'reset after 3 attempts'),
      failing('authentication', 'answered 401'),
      failing('authentication', 'answered 401'),
      undefined,
      failing('network', 'refused after 5 attempts'),
      undefined,
    ];
    const log = recorder();
    let asks = 0;
    let running = 0;
    let overlapped = false;
    const stop = pollCms(
      10,
      async () => {
        overlapped ||= running > 0;
        running++;
        await new Promise((resolve) => setTimeout(resolve, 15)); // longer than the interval
        running--;
        const answer = answers[asks++];
        if (answer) throw answer;
      },
      log,
    );
    await until(() => asks >= answers.length);
    stop();
    expect(overlapped).toBe(false);
    expect(log.lines.map((line) => line.replace(/\. Dev keeps.*/, ''))).toEqual([
      'warn Could not ask the CMS for changes: refused after 5 attempts',
      'warn Could not ask the CMS for changes: answered 401',
      'info The CMS answers again: dev follows its changes',
      'warn Could not ask the CMS for changes: refused after 5 attempts',
      'info The CMS answers again: dev follows its changes',
    ]);
  });

  it('asks twice as late after each failure, never more than 15 s apart: an edit shows within 20 s of the return', async () => {
    vi.useFakeTimers();
    try {
      const asked: number[] = [];
      let down = true;
      const stop = pollCms(
        5_000,
        async () => {
          asked.push(Date.now());
          if (down) throw failing('network', 'refused after 5 attempts');
        },
        recorder(),
      );
      await vi.advanceTimersByTimeAsync(10 * 60_000); // ten minutes of outage
      const gaps = asked.slice(1).map((at, i) => at - asked[i]!);
      expect(gaps.slice(0, 3)).toEqual([10_000, 15_000, 15_000]);
      expect(Math.max(...gaps)).toBe(15_000);
      down = false;
      const back = Date.now();
      const before = asked.length;
      await vi.advanceTimersByTimeAsync(15_000);
      expect(asked.length).toBeGreaterThan(before);
      expect(asked[before]! - back).toBeLessThanOrEqual(15_000);
      stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('asks nothing once stopped', async () => {
    let asks = 0;
    const stop = pollCms(10, async () => void asks++, recorder());
    await until(() => asks >= 2);
    stop();
    const stoppedAt = asks;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(asks).toBe(stoppedAt);
  });
});
