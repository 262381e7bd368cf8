import type { EnvironmentModuleNode, RunnableDevEnvironment, ViteDevServer } from 'vite';

/** The module through which Astro's dev server reads its data store (astro/dist/content/consts.js). */
const dataStoreModule = '\0astro:data-layer-content';

/**
 * Makes the next page of `astro dev` read the data store as a refresh left it.
 *
 * Astro invalidates its data store module when it writes the store, as an HMR update, and tells
 * the module runner that renders pages of that one module. The module that keeps the store once
 * read (astro/dist/content/data-store.js) is evaluated again only when the runner learns that a
 * module above it changed, which it learns from the server's transform cache. Under load that
 * fails two ways: a page asked while the store was written keeps the store read before (Vite
 * keeps a transform begun before an HMR update), and the modules above are transformed again by
 * another part of the dev server before the runner asks. Either way dev said it had refreshed
 * and the page showed the old content until the next write.
 *
 * So, once a refresh is over, this invalidates the store module and every module that imports
 * it, on the server (a plain invalidation, which discards transforms under way) and in the
 * runner. Where the module is not loaded (no page asked yet, or an Astro that names it
 * otherwise) nothing happens.
 */
export function reloadDataStore(server: Pick<ViteDevServer, 'environments'>): void {
  for (const environment of Object.values(server.environments)) {
    const module = environment.moduleGraph.getModuleById(dataStoreModule);
    if (!module) continue;
    const importers = importersOf(module);
    environment.moduleGraph.invalidateModule(module);
    // A runnable environment's runner (no import of vite's isRunnableDevEnvironment: vite is an optional peer).
    const evaluatedModules = (environment as Partial<RunnableDevEnvironment>).runner?.evaluatedModules;
    if (!evaluatedModules) continue;
    for (const id of importers) {
      const evaluated = evaluatedModules.getModuleById(id);
      if (evaluated) evaluatedModules.invalidateModule(evaluated);
    }
  }
}

/** The ids of a module and of every module that imports it, directly or not. */
function importersOf(module: EnvironmentModuleNode): Set<string> {
  const ids = new Set<string>();
  const visit = (node: EnvironmentModuleNode) => {
    if (!node.id || ids.has(node.id)) return;
    ids.add(node.id);
    for (const importer of node.importers) visit(importer);
  };
  visit(module);
  return ids;
}
