import type { HintSettings } from '../api/hints.ts';
import { cacheRootOf } from '../cache/index.ts';
import type { SharedSync } from './shared.ts';

/** What a sync's failure tells the hints (api/hints.ts): the options of its config, and its root cause. */

/** The settings of the shared sync's configuration, or undefined when it has none (that error says so itself). */
export function hintSettings(shared: SharedSync): HintSettings | undefined {
  try {
    const config = shared.config();
    // The cacheDir option holds a cache per origin (see cache/origins.ts): a hint names the option.
    return { ...config, cacheDir: config.cacheDir && cacheRootOf(config.cacheDir), snapshot: shared.snapshot };
  } catch {
    return undefined;
  }
}

/** The error a sync's failure stands for (a server failure wraps what the client threw), with its code. */
export function rootOf(error: Error): Error & { code?: string; url?: string } {
  const { code, cause } = error as { code?: unknown; cause?: unknown };
  return code === 'server_failed' && cause instanceof Error ? cause : error;
}
