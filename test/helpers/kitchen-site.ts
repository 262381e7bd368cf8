import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import * as devalue from 'devalue';
import { type ReadApiServer, startServer } from '../../src/server/index.ts';
import { type AstroDev, copyFixture, freePort, runAstro, startAstroDev } from './astro.ts';
import { kitchenKey, writeKitchen } from './kitchen.ts';

/**
 * test/fixtures/astro-kitchen as the tests use it: the local Read API on the kitchen repository,
 * copies of the site, its content config written from loader options (in any order, some
 * collections with a schema of their own), its contentTypes edited in astro.config.mjs, builds.
 */

/** The loaders of src/content.config.ts, by collection: the options as they are written there. */
export const defaultLoaders: Record<string, string> = {
  recipes:
    "{ collection: 'recipes', options: { includes: 1 }, entryId: ({ astroLocale, fields }) => `${lang(astroLocale)}/${fields.slug}` }",
  chefs: "{ contentType: 'chef', entryId: ({ astroLocale, fields }) => `${lang(astroLocale)}/${fields.slug}` }",
  cuisines: "{ contentType: 'cuisine' }",
  pages: "{ aliases: ['home', 'about'], entryId: ({ astroLocale, fields }) => `${lang(astroLocale)}/${fields.slug}` }",
};

/** The text of src/content.config.ts with these loaders, in this order; `schemas` get a loose schema of their own. */
export function contentConfig(
  loaders: Record<string, string>,
  order = Object.keys(loaders),
  schemas: string[] = [],
): string {
  const lines = order.map((name) => {
    const schema = schemas.includes(name)
      ? ', schema: z.looseObject({ id: z.string(), fields: z.looseObject({}) })'
      : '';
    return `  ${name}: defineCollection({ loader: comfortableLoader(${loaders[name]})${schema} }),`;
  });
  return [
    "import { defineCollection } from 'astro:content';",
    "import { z } from 'astro/zod';",
    "import { comfortableLoader } from '../../../../src/astro/index.ts';",
    '// Ids by the Astro locale, in lower case as the URLs have it (it-ch/polenta).',
    "const lang = (astroLocale = '') => astroLocale.toLowerCase();",
    '',
    'export const collections = {',
    ...lines,
    '};',
    '',
  ].join('\n');
}

export interface KitchenServer {
  server: ReadApiServer;
  /** The snapshot file the server serves (its files beside it). */
  file: string;
  close(): Promise<void>;
}

/** The local Read API on a fresh copy of the kitchen repository. */
export async function startKitchen(): Promise<KitchenServer> {
  const dir = await mkdtemp(join(tmpdir(), 'kitchen-'));
  const file = await writeKitchen(dir);
  const server = await startServer({ paths: [file], watch: false });
  return {
    server,
    file,
    close: async () => {
      await server.close().catch(() => {}); // a test may have stopped it already

      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface KitchenSite {
  dir: string;
  /** Writes src/content.config.ts. */
  loaders(loaders: Record<string, string>, order?: string[], schemas?: string[]): Promise<void>;
  /** Replaces the contentTypes of comfortable() in astro.config.mjs. */
  contentTypes(map: Record<string, string>): Promise<void>;
  /** Runs the Astro CLI (default `build`) against the server; the output without colours. */
  astro(
    server: ReadApiServer,
    args?: string[],
    env?: Record<string, string>,
  ): Promise<{ code: number | null; output: string }>;
  /** Collection → entry id → entry data, as the last sync left Astro's data store. */
  store(): Promise<Map<string, Map<string, { data: Record<string, unknown> }>>>;
  remove(): Promise<void>;
}

/** A copy of the kitchen site under test/.tmp. */
export async function kitchenSite(name: string): Promise<KitchenSite> {
  const site = await copyFixture('astro-kitchen', name);
  const config = join(site.dir, 'astro.config.mjs');
  return {
    dir: site.dir,
    loaders: (loaders, order, schemas) =>
      writeFile(join(site.dir, 'src/content.config.ts'), contentConfig(loaders, order, schemas)),
    contentTypes: async (map) => {
      const text = await readFile(config, 'utf8');
      const written = Object.entries(map)
        .map(([type, collection]) => `${type}: '${collection}'`)
        .join(', ');
      await writeFile(config, text.replace(/contentTypes: \{[^}]*\}/, `contentTypes: { ${written} }`));
    },
    astro: async (server, args = ['build'], env = {}) => {
      const { code, output } = await runAstro(site.dir, args, {
        CMFT_BASE_URL: server.url,
        CMFT_API_KEY: kitchenKey,
        CMFT_REPOSITORY: 'kitchen',
        ...env,
      });
      return { code, output: stripVTControlCharacters(output) };
    },
    store: async () => {
      const raw = devalue.parse(await readFile(join(site.dir, 'node_modules/.astro/data-store.json'), 'utf8')) as Map<
        string,
        Map<string, { data: Record<string, unknown> }>
      >;
      return new Map([...raw].filter(([key]) => !key.startsWith('meta:')));
    },
    remove: site.remove,
  };
}

/**
 * The kitchen site with the default loaders in `astro dev`, on its own Read API; `stop` ends all three.
 * `prepare` writes what the site needs before dev starts; `env` adds to the connection's variables.
 */
export async function kitchenDev(
  name: string,
  options: { env?: Record<string, string>; prepare?: (site: KitchenSite) => Promise<void> } = {},
): Promise<{ kitchen: KitchenServer; site: KitchenSite; dev: AstroDev; stop(): Promise<void> }> {
  const kitchen = await startKitchen();
  const site = await kitchenSite(name);
  await site.loaders(defaultLoaders);
  await options.prepare?.(site);
  const dev = await startAstroDev(site.dir, await freePort(), {
    CMFT_BASE_URL: kitchen.server.url,
    CMFT_API_KEY: kitchenKey,
    CMFT_REPOSITORY: 'kitchen',
    ...options.env,
  });
  const stop = async () => {
    await dev.stop();
    await site.remove();
    await kitchen.close();
  };
  return { kitchen, site, dev, stop };
}
