import { openCache } from '../cache/index.ts';
import type { SharedSync } from '../sync/shared.ts';
import { genericDeclarations, sourceDeclarations } from '../vite/declarations.ts';

/**
 * Declarations for Astro's `injectTypes`: the generic ones, and precise ones per synced source
 * when a cache exists (after the first sync). They import the entry type from the package root,
 * which an Astro project resolves with astro itself.
 */
export async function virtualModuleTypes(shared: SharedSync): Promise<string> {
  let precise = '';
  try {
    const config = shared.config();
    const cache = config.cacheDir ? openCache(config.cacheDir) : undefined;
    if (cache) precise = sourceDeclarations(cache, 'comfortable-loader');
  } catch {
    // no cache yet, or not configured: the generic declarations still apply
  }
  return genericDeclarations('comfortable-loader') + precise;
}
