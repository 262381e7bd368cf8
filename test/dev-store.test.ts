import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, isRunnableDevEnvironment, type Plugin, type ViteDevServer } from 'vite';
import { reloadDataStore } from '../src/astro/dev-store.ts';

/**
 * Why a dev page could keep old content after a refresh, on a real Vite dev server: Astro's data
 * store module (`astro:data-layer-content`), a reader that keeps what it read (as
 * astro/dist/content/data-store.js does) and a page that imports the reader; Astro invalidates
 * the store module after each write as an HMR update (as vite-plugin-content-virtual-mod.js
 * does). Twice it leaves the page with the old store: a read begun before the last write, and
 * the modules transformed again by another consumer before the page's runner asks for them.
 * `reloadDataStore` makes the next page read the store again in both.
 */

const id = 'astro:data-layer-content';
const resolved = `\0${id}`;

/** What the store file holds, and a gate that holds a read of it half-way (after it has read the file). */
const store = { content: 'before', gate: Promise.resolve() };

/** The reader keeps the store it read first, until it is evaluated again. */
const modules: Record<string, string> = {
  '\0virtual:reader': `let kept; export async function get() { return (kept ??= (await import('${id}')).default); }`,
  '\0virtual:page': `import { get } from 'virtual:reader'; export const read = () => get();`,
};

const dataStorePlugin: Plugin = {
  name: 'data-store',
  resolveId: (source) => (source === id || `\0${source}` in modules ? `\0${source}` : undefined),
  async load(module) {
    if (module in modules) return modules[module];
    if (module !== resolved) return undefined;
    const read = store.content;
    await store.gate;
    return `export default ${JSON.stringify(read)};`;
  },
};

let server: ViteDevServer;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'comfortable-dev-store-'));
  server = await createServer({
    root,
    configFile: false,
    logLevel: 'silent',
    appType: 'custom',
    plugins: [dataStorePlugin],
    server: { middlewareMode: true, ws: false, watch: null },
  });
});

afterAll(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

/** The ssr environment, which renders pages through its module runner. */
function ssr() {
  const environment = server.environments.ssr!;
  if (!isRunnableDevEnvironment(environment)) throw new Error('expected a runnable ssr environment');
  return environment;
}

/** Astro's invalidation after it writes the store: an HMR update of the module, in the graph and the runner. */
function astroInvalidates(): void {
  const environment = ssr();
  const module = environment.moduleGraph.getModuleById(resolved);
  if (module) environment.moduleGraph.invalidateModule(module, undefined, Date.now(), true);
  const evaluated = environment.runner.evaluatedModules.getModuleById(resolved);
  if (evaluated) environment.runner.evaluatedModules.invalidateModule(evaluated);
}

async function read(): Promise<string> {
  return ((await ssr().runner.import(id)) as { default: string }).default;
}

/** What the page shows: the store its reader kept. */
async function readPage(): Promise<string> {
  return ((await ssr().runner.import('virtual:page')) as { read(): Promise<string> }).read();
}

/** Another consumer of the dev server (Astro's own) transforms the page's modules again. */
async function transformAgain(): Promise<void> {
  for (const url of ['virtual:page', 'virtual:reader', id]) await ssr().fetchModule(url);
}

describe('the data store module of astro dev, after a refresh', () => {
  it('keeps what a read begun before the last write saw, until reloadDataStore discards it', async () => {
    expect(await read()).toBe('before');

    // A refresh: a first write of the store (its old entries), a page reading it, the last write.
    astroInvalidates();
    let open!: () => void;
    store.gate = new Promise<void>((resolve) => (open = resolve));
    const page = read();
    await new Promise((resolve) => setTimeout(resolve, 50)); // the read has the file's old content
    store.content = 'after';
    astroInvalidates();
    open();
    expect(await page).toBe('before');

    expect(await read()).toBe('before'); // Vite kept the read begun before the last write
    reloadDataStore(server);
    expect(await read()).toBe('after');
  });

  it('keeps the page on the store its reader kept, when the modules were transformed again before it asked', async () => {
    store.content = 'first';
    reloadDataStore(server);
    expect(await readPage()).toBe('first');

    store.content = 'second';
    astroInvalidates();
    await transformAgain();
    expect(await readPage()).toBe('first'); // the runner was never told the reader is stale

    reloadDataStore(server);
    await transformAgain();
    expect(await readPage()).toBe('second');
  });

  it('does nothing where the module was never loaded', async () => {
    const other = await createServer({
      root,
      configFile: false,
      logLevel: 'silent',
      appType: 'custom',
      server: { middlewareMode: true, ws: false, watch: null },
    });
    try {
      expect(() => reloadDataStore(other)).not.toThrow();
      expect(other.environments.ssr!.moduleGraph.getModuleById(resolved)).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});
