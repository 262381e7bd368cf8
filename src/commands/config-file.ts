import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { nonEmpty } from '../wire/schemas.ts';
import { ConfigError, configProblem, contentTypesSchema } from '../sync/config.ts';
import { readEnv, withEnv } from '../api/env.ts';

const configNames = [
  'comfortable.config.ts',
  'comfortable.config.mjs',
  'comfortable.config.js',
  'comfortable.config.json',
];

/**
 * What a config file holds: the sync config, and for `types` the integration's `contentTypes` and
 * the Markdown fields of each content type (`markdown`), when it names them.
 */
type ConfigFile = { file: string; config: unknown } & z.infer<typeof forTypesSchema>;

/**
 * Loads a sync config file: JSON, or a module whose default export (or `sync` export) is the
 * config. Without a path, the first of `comfortable.config.{ts,mjs,js,json}` in the folder.
 * A `contentTypes` member (content type → Astro collection) is taken apart from the sync config.
 *
 * The `CMFT_*` variables of the folder's `.env` files (as Vite reads them, for the mode in
 * NODE_ENV, default development) join the environment before the file loads, so a config that
 * reads `process.env.CMFT_API_KEY` finds it; the connection options the config leaves out are
 * taken from them (`CMFT_BASE_URL`, `CMFT_REPOSITORY`, `CMFT_API_KEY`).
 */
export async function loadConfigFile(path: string | undefined, cwd = process.cwd()): Promise<ConfigFile> {
  const env = readEnv(cwd, process.env.NODE_ENV || 'development');
  for (const [name, value] of Object.entries(env)) process.env[name] ??= value;
  const loaded = await loadFile(path, cwd);
  return { ...loaded, config: withEnv(loaded.config as object, env, ['baseUrl', 'repository', 'apiKey']) };
}

async function loadFile(path: string | undefined, cwd: string): Promise<ConfigFile> {
  const file = path ? resolve(cwd, path) : configNames.map((name) => resolve(cwd, name)).find(existsSync);
  if (!file)
    throw new ConfigError(
      '--config',
      `No config file: pass --config <file>, or create one of ${configNames.join(', ')} in ${cwd}`,
    );
  if (!existsSync(file)) throw new ConfigError('--config', `Config file not found: ${file}`);
  if (file.endsWith('.json')) {
    let config: unknown;
    try {
      config = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      throw new ConfigError('--config', `Config file ${file} is not valid JSON: ${(error as Error).message}`);
    }
    return withContentTypes(file, config);
  }
  const module = (await import(pathToFileURL(file).href)) as { default?: unknown; sync?: unknown };
  const config = module.sync ?? module.default;
  if (typeof config !== 'object' || config === null)
    throw new ConfigError('--config', `Config file ${file} must export the sync config as default (or as "sync")`);
  return withContentTypes(file, config);
}

/** The members `types` reads beside the sync config. The Read API does not say which fields are Markdown. */
const forTypesSchema = z.object({
  contentTypes: contentTypesSchema.optional(),
  markdown: z
    .record(nonEmpty, z.array(nonEmpty), {
      error: 'expected content type → its Markdown fields, such as { article: ["body", "intro"] }',
    })
    .optional(),
});

function withContentTypes(file: string, config: unknown): ConfigFile {
  if (typeof config !== 'object' || config === null) return { file, config };
  const { contentTypes, markdown, ...rest } = config as { contentTypes?: unknown; markdown?: unknown };
  const parsed = forTypesSchema.safeParse({ contentTypes, markdown }, { reportInput: true });
  if (!parsed.success) throw configProblem(parsed.error);
  return {
    file,
    config: rest,
    ...(parsed.data.contentTypes && { contentTypes: parsed.data.contentTypes }),
    ...(parsed.data.markdown && { markdown: parsed.data.markdown }),
  };
}
