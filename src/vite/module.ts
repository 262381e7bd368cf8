import type { SyncResult } from '../sync/engine.ts';
import { entriesOf, type VirtualEntry } from '../entries/entries.ts';
import { cacheKeys } from '../entries/page-keys.ts';
import { fileLinks } from '../entries/file-links.ts';

/**
 * The `virtual:comfortable/...` modules: which source and locale an id names, the entries it
 * gives from a sync's result, and its code.
 * - `virtual:comfortable/collections/<apiId>` (and `queries/<name>`): `entries` in every locale, `getEntry(id,
 * locale?)`, `locales`;
 * - `virtual:comfortable/collections/<apiId>/<locale>`: the entries of one locale, `getEntry(id)`;
 * - `virtual:comfortable/aliases/<apiId>`: the entry in the default locale, `entries` by locale,
 *   `getEntry(locale?)`; `.../<locale>`: the entry in that locale.
 */

export const virtualPrefix = 'virtual:comfortable/';

const kinds = { collections: 'collection', aliases: 'alias', queries: 'query' } as const;

/** Parses `virtual:comfortable/<kind>/<name>[/<locale>]`. */
export function parseVirtualId(id: string): { kind: keyof typeof kinds; name: string; locale?: string } | undefined {
  if (!id.startsWith(virtualPrefix)) return undefined;
  const [kind, name, locale, ...rest] = id.slice(virtualPrefix.length).split('/');
  if (!kind || !(kind in kinds) || !name || rest.length > 0) return undefined;
  return { kind: kind as keyof typeof kinds, name, ...(locale ? { locale } : {}) };
}

/**
 * What a virtual module holds: its entries (an alias's, one per locale), the repository's locales and the default one.
 */
export interface ModuleData {
  entries: VirtualEntry[];
  locales: string[];
  defaultLocale: string;
}

/**
 * The data of the module `id` (`virtual:comfortable/collections/posts`); throws for a source the sync has not or a
 * locale the repository has not.
 */
export function moduleData(result: SyncResult, id: string): ModuleData {
  const parsed = parseVirtualId(id);
  if (!parsed)
    throw new Error(
      `${id}: not a module of comfortable-loader; expected virtual:comfortable/collections/<apiId>, ` +
        `aliases/<apiId> or queries/<name>, with /<locale> or not`,
    );
  const sourceKey = `${kinds[parsed.kind]}:${parsed.name}`;
  const { cache } = result;
  if (!cache.sources().some((source) => source.key === sourceKey)) {
    throw new Error(
      `${id}: "${parsed.name}" is not synced; add it to the ${parsed.kind} option of the comfortable ` +
        `integration or Vite plugin`,
    );
  }
  const { locales } = cache.head;
  const all = locales.locales.map((l) => l.key);
  if (parsed.locale && !all.includes(parsed.locale))
    throw new Error(`${id}: unknown locale "${parsed.locale}"; the repository has ${all.join(', ')}`);
  const ids = cache.members(sourceKey).map((member) => member.id);
  const keys = cacheKeys(cache, ids);
  // In an Astro site built from a copy, its files are files of the site (see astro/copy-files.ts).
  const links = fileLinks();
  const entries = entriesOf(cache, ids, locales, parsed.locale ? [parsed.locale] : all).map((entry) => ({
    ...entry,
    fields: links.fields(entry.fields),
    cacheKey: keys.get(entry.id)!,
  }));
  return { entries, locales: all, defaultLocale: locales.defaultLocale };
}

/** Generates a virtual module's code. */
export async function virtualModule(result: SyncResult, id: string): Promise<string> {
  const parsed = parseVirtualId(id)!;
  const data = JSON.stringify(moduleData(result, id));
  const head =
    `const data = JSON.parse(${JSON.stringify(data)});\nexport const locales = ` +
    `data.locales;\nexport const defaultLocale = data.defaultLocale;\n`;
  // A locale variant looks entries up in its own locale; the whole module in the default one.
  const locale = `const locale = ${JSON.stringify(parsed.locale ?? null)} ?? data.defaultLocale;\n`;
  if (parsed.kind === 'aliases') {
    // Both variants have the same exports, so one declaration types them: the default is the entry.
    return (
      `${head}${locale}export const entries = Object.fromEntries(data.entries.map((e) => [e.locale, ` +
      `e]));\nexport const entry = entries[locale];\nexport function getEntry(l = locale) { return ` +
      `entries[l]; }\nexport default entry;\n`
    );
  }
  return (
    `${head}${locale}export const entries = data.entries;\nexport function getEntry(id, l = locale) { ` +
    `return entries.find((e) => e.id === id && e.locale === l); }\nexport default entries;\n`
  );
}
