import { join } from 'node:path';
import type { Plugin } from 'vite';
import { defaultBaseUrl } from '../api/client.ts';
import { fileLinks } from '../astro/copy-files.ts';
import { originCacheDir } from '../cache/origins.ts';
import { ConfigError } from '../sync/config.ts';
import type { SyncResult } from '../sync/engine.ts';
import { loadEntries } from '../sync/entries.ts';
import { cacheKeys } from '../sync/page-keys.ts';
import { readEnv, withEnv } from '../sync/env.ts';
import { changedIds, type SharedConfig, sharedSync } from '../sync/shared.ts';
import { refreshMiddleware } from './refresh.ts';

/**
 * Build-time imports of synced content through virtual modules:
 * - `virtual:comfortable/collections/<apiId>` (and `queries/<name>`): `entries` in every locale, `getEntry(id, locale?)`, `locales`;
 * - `virtual:comfortable/collections/<apiId>/<locale>`: the entries of one locale, `getEntry(id)`;
 * - `virtual:comfortable/aliases/<apiId>`: the entry in the default locale, `entries` by locale,
 *   `getEntry(locale?)`; `.../<locale>`: the entry in that locale.
 * In dev, a refresh invalidates them and reloads the page.
 */

export const virtualPrefix = 'virtual:comfortable/';

export interface ComfortableViteOptions extends Partial<SharedConfig> {
  /** Enables the signed dev refresh endpoint (see docs/astro.md, "Dev refresh"). Default: `CMFT_REFRESH_SECRET`. */
  refreshSecret?: string;
  refreshPath?: string;
}

const kinds = { collections: 'collection', aliases: 'alias', queries: 'query' } as const;

/** Parses `virtual:comfortable/<kind>/<name>[/<locale>]`. */
export function parseVirtualId(id: string): { kind: keyof typeof kinds; name: string; locale?: string } | undefined {
  if (!id.startsWith(virtualPrefix)) return undefined;
  const [kind, name, locale, ...rest] = id.slice(virtualPrefix.length).split('/');
  if (!kind || !(kind in kinds) || !name || rest.length > 0) return undefined;
  return { kind: kind as keyof typeof kinds, name, ...(locale ? { locale } : {}) };
}

/** Generates a virtual module's code. */
export async function virtualModule(result: SyncResult, id: string): Promise<string> {
  const parsed = parseVirtualId(id)!;
  const sourceKey = `${kinds[parsed.kind]}:${parsed.name}`;
  const { cache } = result;
  if (!cache.sources().some((source) => source.key === sourceKey)) {
    throw new Error(`${id}: "${parsed.name}" is not synced; add it to the ${parsed.kind} option of the comfortable integration or Vite plugin`);
  }
  const { locales } = cache.head;
  const all = locales.locales.map((l) => l.key);
  if (parsed.locale && !all.includes(parsed.locale)) throw new Error(`${id}: unknown locale "${parsed.locale}"; the repository has ${all.join(', ')}`);
  const ids = cache.members(sourceKey).map((member) => member.id);
  const keys = cacheKeys(cache, ids);
  // In an Astro site built from a copy, its files are files of the site (see astro/copy-files.ts).
  const links = fileLinks();
  const entries = loadEntries(cache, ids, locales, parsed.locale ? [parsed.locale] : all).map((entry) => ({ ...entry, fields: links.fields(entry.fields), cacheKey: keys.get(entry.id)! }));
  const data = JSON.stringify({ entries, locales: all, defaultLocale: locales.defaultLocale });
  const head = `const data = JSON.parse(${JSON.stringify(data)});\nexport const locales = data.locales;\nexport const defaultLocale = data.defaultLocale;\n`;
  // A locale variant looks entries up in its own locale; the whole module in the default one.
  const locale = `const locale = ${JSON.stringify(parsed.locale ?? null)} ?? data.defaultLocale;\n`;
  if (parsed.kind === 'aliases') {
    // Both variants have the same exports, so one declaration types them: the default is the entry.
    return `${head}${locale}export const entries = Object.fromEntries(data.entries.map((e) => [e.locale, e]));\nexport const entry = entries[locale];\nexport function getEntry(l = locale) { return entries[l]; }\nexport default entry;\n`;
  }
  return `${head}${locale}export const entries = data.entries;\nexport function getEntry(id, l = locale) { return entries.find((e) => e.id === id && e.locale === l); }\nexport default entries;\n`;
}

/**
 * The Vite plugin. With options it configures the shared sync (plain Vite); inside Astro the
 * integration configures it and adds this plugin without options.
 *
 * @example plugins: [comfortable({ baseUrl, repository: 'demo', apiKey: process.env.CMFT_API_KEY!, collections: { posts: {} } })]
 */
export function comfortableVite(options?: ComfortableViteOptions): Plugin {
  if (options && 'snapshot' in options) {
    throw new ConfigError('snapshot', `Invalid option snapshot: the Vite plugin does not serve a copy. Serve it with npx comfortable-loader serve ${String((options as { snapshot: unknown }).snapshot)} and point baseUrl and apiKey (CMFT_BASE_URL, CMFT_API_KEY) at it, with the local key the pull printed; the Astro integration's snapshot option serves one in-process.`);
  }
  const shared = sharedSync();
  const { refreshPath, ...given } = options ?? ({} as ComfortableViteOptions);
  let refreshSecret = given.refreshSecret;
  let latest: Promise<SyncResult> | undefined;
  const current = () => (latest ??= shared.acquire('vite'));

  return {
    name: 'comfortable-loader',
    configResolved(resolved) {
      // Plain Vite: the cache goes inside Vite's cache folder unless configured, and the sync
      // logs through Vite (Astro's integration configures both itself and passes no options).
      // Options it is not given come from CMFT_* in the environment or Vite's .env files for its mode.
      if (!options) return;
      const env = readEnv(resolved.envDir, resolved.mode);
      const { refreshSecret: secret, ...config } = withEnv(given, env, ['baseUrl', 'repository', 'apiKey', 'refreshSecret']);
      refreshSecret = secret;
      const logger = { info: (message: string) => resolved.logger.info(message), warn: (message: string) => resolved.logger.warn(message) };
      const baseUrl = config.baseUrl ?? defaultBaseUrl;
      if (env.CMFT_SNAPSHOT) {
        logger.warn(`CMFT_SNAPSHOT is set (${env.CMFT_SNAPSHOT}), but the Vite plugin does not serve a copy: it asks ${baseUrl}. Serve the copy with npx comfortable-loader serve ${env.CMFT_SNAPSHOT} and set CMFT_BASE_URL and CMFT_API_KEY to its URL and local key.`);
      }
      // One cache per base URL and repository, so switching between two keeps each one's content.
      // (Checked with the sources when the first sync starts: a missing repository or key is named then.)
      const root = config.cacheDir ?? join(resolved.cacheDir, 'comfortable');
      const cacheDir = config.repository ? originCacheDir(root, { baseUrl, repository: config.repository }) : root;
      shared.configure({ ...config, cacheDir } as SharedConfig, logger);
    },
    resolveId: {
      filter: { id: /^virtual:comfortable\// },
      handler(id) {
        return parseVirtualId(id) ? `\0${id}` : undefined;
      },
    },
    load: {
      filter: { id: /^\0virtual:comfortable\// },
      async handler(id) {
        return shared.read(await current(), (result) => virtualModule(result, id.slice(1)));
      },
    },
    configureServer(server) {
      // One subscription per dev server (Astro may run more than one with this plugin), ended with it.
      const unsubscribe = shared.onResult((result) => {
        latest = Promise.resolve(result);
        for (const environment of Object.values(server.environments)) {
          for (const module of environment.moduleGraph.idToModuleMap.values()) {
            if (module.id?.startsWith(`\0${virtualPrefix}`)) environment.moduleGraph.invalidateModule(module);
          }
        }
        server.ws.send({ type: 'full-reload' });
      });
      server.httpServer?.once('close', unsubscribe);
      if (refreshSecret) {
        server.middlewares.use(
          refreshMiddleware({
            secret: refreshSecret,
            ...(refreshPath ? { path: refreshPath } : {}),
            run: async (payload) => {
              const result = await shared.refresh(changedIds(payload));
              return { changeset: result.changeset };
            },
          }),
        );
      }
    },
  };
}
