import type { StoredSource } from '../cache/index.ts';
import type { SyncSource } from './config.ts';

/**
 * The plan phase: how each source is fetched. An alias is asked again (a conditional GET); a
 * source the cache holds with the same options is listed by stamps and fetched where they
 * changed; any other is fetched in full.
 */

export interface SourcePlan {
  source: SyncSource;
  how: 'alias' | 'full' | 'incremental';
  /** Of an incremental source: when it was last fetched. */
  syncedAt?: string;
}

export function planSources(
  sources: readonly SyncSource[],
  stored: ReadonlyMap<string, StoredSource>,
  fresh: boolean,
): SourcePlan[] {
  return sources.map((source) => {
    if (source.kind === 'alias') return { source, how: 'alias' };
    const before = stored.get(source.key);
    if (fresh || !before || before.fingerprint !== source.fingerprint) return { source, how: 'full' };
    return { source, how: 'incremental', syncedAt: before.syncedAt };
  });
}
