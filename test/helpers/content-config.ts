import type { ContentConfigObserver } from '../../src/astro/content-config.ts';

/**
 * Astro's content config observer as a loader driven without Astro sees it (a bench, a test of
 * one loader): a config loaded once, whose collections have these loaders.
 */
export function loadedConfig(collections: Record<string, { name: string }>, digest = 'fixed'): ContentConfigObserver {
  const state = {
    status: 'loaded' as const,
    config: {
      digest,
      collections: Object.fromEntries(Object.entries(collections).map(([c, loader]) => [c, { loader }])),
    },
  };
  return { get: () => state };
}
