import type { Connect } from 'vite';
import type { SyncLogger, SyncResult } from '../sync/engine.ts';
import { changedIds, changedSources, type RoundKind, type SharedSync } from '../sync/shared.ts';
import { pollCms } from './poll.ts';
import { refreshMiddleware } from './refresh.ts';

/**
 * Dev that follows the content, one path for every way a change arrives: the polls of the CMS,
 * the signed refresh endpoint, the dev toolbar's "Sync now" and a served copy's file watch all
 * run a sync of the shared sync, and every sync that ends, whoever started it, goes to the
 * host's `follow`, which makes what is served follow it (the Astro integration refreshes the
 * loaders whose sources changed, the Vite plugin its modules). So no sync changes the cache
 * without the pages seeing it. One loop per dev server, stopped with it.
 */

interface DevLoopOptions {
  shared: SharedSync;
  /** Makes what is served follow a sync; resolves with the names of what it refreshed (none for no change). */
  follow(result: SyncResult, kind: RoundKind): Promise<string[]>;
  /** Milliseconds between two asks of the CMS, or false for none. */
  pollInterval: number | false;
  /** The signed refresh endpoint, when a secret is set. */
  endpoint?: { secret: string; path?: string | undefined } | undefined;
  /** Where the endpoint is mounted (the dev server's connect stack). */
  middlewares?: Connect.Server;
  log: SyncLogger & { error(message: string): void };
}

/** The dev loop of a dev server: `refresh` syncs now, `stop` ends it. */
export function startDevLoop(options: DevLoopOptions) {
  const { shared, log } = options;
  const followed = new WeakMap<SyncResult, Promise<string[]>>();
  let stopped = false;
  const unsubscribe = shared.onResult((result, kind) => {
    if (stopped) return;
    const done = options.follow(result, kind).catch((error: Error) => {
      log.error(`The content changed, but refreshing what dev serves failed: ${error.message}`);
      return [];
    });
    followed.set(result, done);
  });
  /**
   * Syncs now, fetching again the ids `payload` names (a webhook's `changed`); resolves once what
   * is served follows, with what the endpoint answers: the sources that changed, what was
   * refreshed for them, the changeset.
   */
  const refresh = async (payload: unknown) => {
    const result = await shared.refresh(changedIds(payload));
    const refreshed = await (followed.get(result) ?? []);
    const sources = changedSources(result.changeset);
    const count = `${sources.length} changed source${sources.length === 1 ? '' : 's'}`;
    log.info(sources.length === 0 ? 'Refreshed: nothing changed' : `Refreshed ${refreshed.join(', ')} (${count})`);
    return { sources, refreshed, changeset: result.changeset };
  };
  const stopPolling = options.pollInterval
    ? pollCms(
        options.pollInterval,
        async () => {
          const result = await shared.poll();
          const refreshed = result && (await followed.get(result));
          if (refreshed?.length) log.info(`The CMS changed: refreshed ${refreshed.join(', ')}`);
        },
        log,
      )
    : () => {};
  if (options.endpoint && options.middlewares) {
    // A restarted server has a new connect stack, so the endpoint goes with the server it was added to.
    options.middlewares.use(refreshMiddleware({ ...options.endpoint, run: refresh }));
  }
  return {
    refresh,
    stop: () => {
      stopped = true;
      stopPolling();
      unsubscribe();
    },
  };
}
