import { access, mkdir, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { z } from 'zod';
import { fieldsSchema, referenceTargets, relationSchema, unresolvedSchema } from '../astro/schema.ts';
import { CacheError, type CacheReader, openCache } from '../cache/index.ts';
import { ConfigError, parseSyncConfig, type SyncConfig } from '../sync/config.ts';
import { cacheDirOf, sync, type SyncLogger } from '../sync/engine.ts';
import { defOf } from '../sync/option-keys.ts';
import { assetSchema, sectionSchemas } from '../entries/entries.ts';
import { loadConfigFile } from './config-file.ts';
import { argsOf } from './usage.ts';

/**
 * `types [--config file] [--out dir] [--zod module] [--force]`: one zod schema file per content
 * type, from the cache of the config (synced first when there is none). The files are meant to
 * be committed and edited; every field is nullable and optional, as in the loader's own schema,
 * so an editor emptying a field never breaks a build. Existing files are kept unless --force.
 * With the config's `contentTypes` (content type → Astro collection, as the integration has
 * it), a relation into a mapped type is Astro's `reference('<collection>')`.
 */

const defaultOut = 'src/content/schemas';

/** Shared value schemas get a name in the file instead of being repeated in every field. */
const named = new Map<z.ZodType, string>([
  [unresolvedSchema, 'unresolved'],
  [relationSchema, 'relation'],
  [assetSchema, 'asset'],
]);

const comments: Record<string, string> = {
  unresolved:
    '/** A relation no collection holds (not synced, or a content type no collection is mapped to): ' +
    '`collection` is null. */',
  relation:
    '/** A relation into a content type no collection is mapped to (the contentTypes option), or unresolved. */',
  asset: '/** An asset: an image (with the size <Image> needs), another file, or one not synced; narrow on `kind`. */',
};

export async function typesCommand(args: string[]): Promise<number> {
  const parsed = argsOf(args, {
    config: { type: 'string' },
    out: { type: 'string' },
    zod: { type: 'string' },
    force: { type: 'boolean', default: false },
  });
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const logger: SyncLogger = { info: (m) => console.log(m), warn: (m) => console.error(`warning: ${m}`) };
  try {
    const { file, config: input, contentTypes, markdown } = await loadConfigFile(values.config);
    const config = parseSyncConfig(input);
    const cache = await cachedContent({ ...config, cacheDir: cacheDirOf(config) }, logger);
    const out = resolve(values.out ?? defaultOut);
    await mkdir(out, { recursive: true });
    const written: string[] = [];
    const kept: string[] = [];
    for (const contentType of Object.keys(cache.head.model)
      .filter((t) => !t.startsWith('_'))
      .sort()) {
      const target = join(out, `${contentType.replace(/[^A-Za-z0-9_-]/g, '-')}.ts`);
      if (
        !values.force &&
        (await access(target).then(
          () => true,
          () => false,
        ))
      ) {
        kept.push(relative(process.cwd(), target));
        continue;
      }
      await writeFile(
        target,
        schemaFile(cache, contentType, {
          zodModule: values.zod ?? 'astro/zod',
          configFile: file,
          contentTypes,
          markdown: markdown?.[contentType],
          warn: logger.warn,
        }),
      );
      written.push(relative(process.cwd(), target));
    }
    console.log(`Wrote ${written.length} schema files${written.length ? `: ${written.join(', ')}` : ''}`);
    if (kept.length)
      console.log(`Kept ${kept.length} existing files (pass --force to overwrite them): ${kept.join(', ')}`);
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
  if (
    cache &&
    cache.head.repository === config.repository &&
    cache.head.baseUrl === config.baseUrl.replace(/\/+$/, '')
  ) {
    logger.info(`Reading the cache in ${config.cacheDir} (synced ${cache.head.lastSync})`);
    return cache;
  }
  logger.info(`No cache of ${config.repository} in ${config.cacheDir}: syncing first`);
  return (await sync(config, logger)).cache;
}

/** The source of one content type's schema file. */
function schemaFile(
  cache: CacheReader,
  contentType: string,
  options: {
    zodModule: string;
    configFile: string;
    contentTypes?: Record<string, string> | undefined;
    /** The content type's Markdown fields (the config's `markdown`), by path: each gets a comment naming `render`. */
    markdown?: string[] | undefined;
    warn?: (message: string) => void;
  },
): string {
  const name = identifier(contentType);
  const used = new Set<string>();
  const references = new Map<z.ZodType, string>();
  const reference = (collection: string) => {
    const marker = z.object({ collection: z.literal(collection), id: z.string() });
    references.set(marker, collection);
    return marker;
  };
  const targets = referenceTargets(cache, contentType, (type) => options.contentTypes?.[type]);
  const fields = fieldsSchema(cache.head.model, contentType, targets, reference);
  const printer: Printer = { used, references, notes: markdownNotes(fields, contentType, options) };
  const body = zodSource(fields, printer, '', true);
  const shared = [...named]
    .filter(([, n]) => used.has(n))
    .map(
      ([schema, n]) =>
        `${comments[n]}\nconst ${n} = ${zodSource(schema, { used: new Set(), references }, '', true, n)};\n`,
    );
  const type = name[0]!.toUpperCase() + name.slice(1);
  const from = relative(process.cwd(), options.configFile) || options.configFile;
  const imports = [
    ...(printer.usesReference ? ["import { reference } from 'astro:content';"] : []),
    `import { z } from '${options.zodModule}';`,
  ];
  return `// The fields of the content type "${contentType}", from the content synced with ${from}
// by \`comfortable-loader types\`. Commit this file and edit it: running the command again keeps
// it (unless --force). Every field may be null or missing, so an emptied field never breaks types.
// In src/content.config.ts: schema: entrySchema(${name}Fields, '${contentType}'), with entrySchema from
// 'comfortable-loader/astro'.
${imports.join('\n')}

${shared.join('')}${shared.length ? '\n' : ''}export const ${name}Fields = ${body};

export type ${type}Fields = z.infer<typeof ${name}Fields>;
`;
}

/**
 * The comment of each Markdown field, by its schema: a string like a text's, which the loader
 * renders only where the site names it. A field no document holds as a string is told instead.
 */
function markdownNotes(
  fields: z.ZodType,
  contentType: string,
  { markdown = [], warn }: { markdown?: string[] | undefined; warn?: ((message: string) => void) | undefined },
): Map<z.ZodType, string> {
  const notes = new Map<z.ZodType, string>();
  for (const path of markdown) {
    let schema: z.ZodType | undefined = fields;
    for (const name of path.split('.')) schema = schema && shapeOf(unwrapped(schema))?.[name];
    if (!schema || defOf(unwrapped(schema)).type !== 'string') {
      warn?.(
        `The markdown option of the config names ${contentType}.${path}, which no synced document of ` +
          `${contentType} holds as a string: write the path of a Markdown field (a section's field as 'section.field')`,
      );
      continue;
    }
    notes.set(
      schema,
      `/** Markdown source: comfortableLoader({ render: '${path}' }) renders it for render(entry), ` +
        `or markdown: ['${path}'] into data.markdown. */`,
    );
  }
  return notes;
}

const shapeOf = (schema: z.ZodType) => (defOf(schema).type === 'object' ? defOf(schema).shape : undefined);

/** A schema without its `.nullable()` and `.optional()`. */
function unwrapped(schema: z.ZodType): z.ZodType {
  const def = defOf(schema);
  return def.type === 'nullable' || def.type === 'optional' ? unwrapped(def.innerType!) : schema;
}

/** `blog-post` → `blogPost`, safe as a JavaScript identifier. */
function identifier(apiId: string): string {
  const words = apiId.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const name =
    words.map((w, i) => (i === 0 ? w[0]!.toLowerCase() + w.slice(1) : w[0]!.toUpperCase() + w.slice(1))).join('') ||
    'contentType';
  return /^[0-9]/.test(name) ? `_${name}` : name;
}

const key = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : quote(name));
const quote = (text: string) => `'${text.replace(/[\\']/g, '\\$&')}'`;

/** What printing a schema found: the named schemas it used, and the references it wrote. */
interface Printer {
  used: Set<string>;
  references: Map<z.ZodType, string>;
  /** A comment to write above a field, by the field's schema. */
  notes?: Map<z.ZodType, string>;
  usesReference?: boolean;
}

/**
 * Prints a zod schema of the kinds `fieldsSchema` builds as zod source; with `multiline`, an
 * object one field a line and a union one option a line.
 */
function zodSource(schema: z.ZodType, printer: Printer, indent: string, multiline: boolean, self?: string): string {
  const name = named.get(schema);
  if (name && name !== self) {
    printer.used.add(name);
    if (name === 'relation') printer.used.add('unresolved');
    return name;
  }
  const collection = printer.references.get(schema);
  if (collection !== undefined) {
    printer.usesReference = true;
    return `reference(${quote(collection)})`;
  }
  const def = defOf(schema);
  const inner = (s: unknown) => zodSource(s as z.ZodType, printer, indent, false);
  switch (def.type) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'null':
    case 'unknown':
      return `z.${def.type}()`;
    case 'literal':
      return `z.literal(${def.values!.map((v) => (typeof v === 'string' ? quote(v) : JSON.stringify(v))).join(', ')})`;
    case 'nullable':
    case 'optional':
      return `${zodSource(def.innerType!, printer, indent, multiline)}.${def.type}()`;
    case 'array':
      return `z.array(${inner(def.element)})`;
    case 'union': {
      const options = def.options!.map(inner);
      const head =
        typeof def.discriminator === 'string' ? `z.discriminatedUnion(${quote(def.discriminator)}, [` : 'z.union([';
      if (!multiline) return `${head}${options.join(', ')}])`;
      return `${head}\n${options.map((option) => `${indent}  ${option},\n`).join('')}${indent}])`;
    }
    case 'record':
      return `z.record(z.string(), ${inner(def.valueType)})`;
    case 'object': {
      // A section one field a line too, as the content type's own fields.
      const fields = Object.entries(def.shape!).map(([k, v]) => [
        key(k),
        zodSource(v, printer, `${indent}  `, sectionSchemas.has(unwrapped(v))),
      ]);
      if (fields.length === 0) return 'z.object({})';
      if (!multiline) return `z.object({ ${fields.map(([k, v]) => `${k}: ${v}`).join(', ')} })`;
      const notes = Object.values(def.shape!).map((v) => printer.notes?.get(v));
      const line = ([k, v]: string[], i: number) =>
        `${notes[i] ? `${indent}  ${notes[i]}\n` : ''}${indent}  ${k}: ${v},\n`;
      return `z.object({\n${fields.map(line).join('')}${indent}})`;
    }
    default:
      return 'z.unknown()';
  }
}
