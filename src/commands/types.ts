import { access, mkdir, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { z } from 'zod';
import { fieldsSchema, relationSchema, unresolvedSchema } from '../astro/schema.ts';
import { CacheError, type CacheReader, openCache } from '../cache/index.ts';
import type { Model } from '../sync/records.ts';
import { ConfigError, parseSyncConfig, type SyncConfig } from '../sync/config.ts';
import { defaultCacheDir, sync, type SyncLogger } from '../sync/engine.ts';
import { imageSchema } from '../sync/entries.ts';
import { loadConfigFile } from './config-file.ts';
import { usageError } from './usage.ts';

/**
 * `types [--config file] [--out dir] [--zod module] [--force]`: one zod schema file per content
 * type, from the cache of the config (synced first when there is none). The files are meant to
 * be committed and edited; every field is nullable and optional, as in the loader's own schema,
 * so an editor emptying a field never breaks a build. Existing files are kept unless --force.
 */

const defaultOut = 'src/content/schemas';

/** Shared value schemas get a name in the file instead of being repeated in every field. */
const named = new Map<z.ZodType, string>([
  [unresolvedSchema, 'unresolved'],
  [relationSchema, 'reference'],
  [imageSchema, 'image'],
]);

export async function typesCommand(args: string[]): Promise<number> {
  let values: { config?: string; out?: string; zod?: string; force?: boolean };
  try {
    ({ values } = parseArgs({ args, options: { config: { type: 'string' }, out: { type: 'string' }, zod: { type: 'string' }, force: { type: 'boolean', default: false } } }));
  } catch (error) {
    return usageError((error as Error).message);
  }
  const logger: SyncLogger = { info: (m) => console.log(m), warn: (m) => console.error(`warning: ${m}`) };
  try {
    const { file, config: input } = await loadConfigFile(values.config);
    const config = parseSyncConfig(input);
    const { model } = (await cachedContent({ ...config, cacheDir: resolve(config.cacheDir ?? defaultCacheDir()) }, logger)).head;
    const out = resolve(values.out ?? defaultOut);
    await mkdir(out, { recursive: true });
    const written: string[] = [];
    const kept: string[] = [];
    for (const contentType of Object.keys(model).filter((t) => !t.startsWith('_')).sort()) {
      const target = join(out, `${contentType.replace(/[^A-Za-z0-9_-]/g, '-')}.ts`);
      if (!values.force && (await access(target).then(() => true, () => false))) {
        kept.push(relative(process.cwd(), target));
        continue;
      }
      await writeFile(target, schemaFile(model, contentType, values.zod ?? 'zod', file));
      written.push(relative(process.cwd(), target));
    }
    console.log(`Wrote ${written.length} schema files${written.length ? `: ${written.join(', ')}` : ''}`);
    if (kept.length) console.log(`Kept ${kept.length} existing files (pass --force to overwrite them): ${kept.join(', ')}`);
    return 0;
  } catch (error) {
    console.error(`Error: ${(error as Error).message}`);
    return error instanceof ConfigError ? 2 : 1;
  }
}

/** The cache, or a sync's when there is no usable cache of this repository. */
async function cachedContent(config: SyncConfig & { cacheDir: string }, logger: SyncLogger): Promise<CacheReader> {
  let cache: CacheReader | undefined;
  try {
    cache = openCache(config.cacheDir);
  } catch (error) {
    if (!(error instanceof CacheError)) throw error;
  }
  if (cache && cache.head.repository === config.repository && cache.head.baseUrl === config.baseUrl.replace(/\/+$/, '')) {
    logger.info(`Reading the cache in ${config.cacheDir} (synced ${cache.head.lastSync})`);
    return cache;
  }
  logger.info(`No cache of ${config.repository} in ${config.cacheDir}: syncing first`);
  return (await sync(config, logger)).cache;
}

/** The source of one content type's schema file. */
export function schemaFile(model: Model, contentType: string, zodModule: string, configFile: string): string {
  const name = identifier(contentType);
  const used = new Set<string>();
  const body = zodSource(fieldsSchema(model, contentType), used, '', true);
  const shared = [...named].filter(([, n]) => used.has(n)).map(([schema, n]) => `const ${n} = ${zodSource(schema, new Set(), '', false, n)};\n`);
  const type = name[0]!.toUpperCase() + name.slice(1);
  return `// The fields of the content type "${contentType}", from the content synced with ${relative(process.cwd(), configFile) || configFile}
// by \`comfortable-loader types\`. Commit this file and edit it: running the command again keeps
// it (unless --force). Every field may be null or missing, so an emptied field never breaks types.
import { z } from '${zodModule}';

${shared.join('')}${shared.length ? '\n' : ''}export const ${name}Fields = ${body};

export type ${type}Fields = z.infer<typeof ${name}Fields>;
`;
}

/** `blog-post` → `blogPost`, safe as a JavaScript identifier. */
function identifier(apiId: string): string {
  const words = apiId.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const name = words.map((w, i) => (i === 0 ? w[0]!.toLowerCase() + w.slice(1) : w[0]!.toUpperCase() + w.slice(1))).join('') || 'contentType';
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

const key = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name));

/** Prints a zod schema of the kinds `fieldsSchema` builds as zod source; the top object one field a line. */
function zodSource(schema: z.ZodType, used: Set<string>, indent: string, multiline: boolean, self?: string): string {
  const name = named.get(schema);
  if (name && name !== self) {
    used.add(name);
    if (name === 'reference') used.add('unresolved');
    return name;
  }
  const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
  const inner = (s: unknown) => zodSource(s as z.ZodType, used, indent, false);
  switch (def.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'unknown':
      return `z.${def.type}()`;
    case 'literal':
      return `z.literal(${(def.values as unknown[]).map((v) => JSON.stringify(v)).join(', ')})`;
    case 'nullable':
    case 'optional':
      return `${inner(def.innerType)}.${def.type}()`;
    case 'array':
      return `z.array(${inner(def.element)})`;
    case 'union':
      return `z.union([${(def.options as unknown[]).map(inner).join(', ')}])`;
    case 'record':
      return `z.record(z.string(), ${inner(def.valueType)})`;
    case 'object': {
      const fields = Object.entries(def.shape as Record<string, z.ZodType>).map(([k, v]) => [key(k), zodSource(v, used, `${indent}  `, false)]);
      if (fields.length === 0) return 'z.object({})';
      if (!multiline) return `z.object({ ${fields.map(([k, v]) => `${k}: ${v}`).join(', ')} })`;
      return `z.object({\n${fields.map(([k, v]) => `${indent}  ${k}: ${v},\n`).join('')}${indent}})`;
    }
    default:
      return 'z.unknown()';
  }
}
