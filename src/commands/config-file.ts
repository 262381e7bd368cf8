import { access, readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../sync/config.ts';

export const configNames = ['comfortable.config.ts', 'comfortable.config.mjs', 'comfortable.config.js', 'comfortable.config.json'];

/**
 * Loads a sync config file: JSON, or a module whose default export (or `sync` export) is the
 * config. Without a path, the first of `comfortable.config.{ts,mjs,js,json}` in the folder.
 */
export async function loadConfigFile(path: string | undefined, cwd = process.cwd()): Promise<{ file: string; config: unknown }> {
  let file: string | undefined;
  if (path) file = resolve(cwd, path);
  else {
    for (const name of configNames) {
      const candidate = resolve(cwd, name);
      if (await access(candidate).then(() => true, () => false)) {
        file = candidate;
        break;
      }
    }
    if (!file) throw new ConfigError('--config', `No config file: pass --config <file>, or create one of ${configNames.join(', ')} in ${cwd}`);
  }
  if (!(await access(file).then(() => true, () => false))) throw new ConfigError('--config', `Config file not found: ${file}`);
  if (file.endsWith('.json')) {
    try {
      return { file, config: JSON.parse(await readFile(file, 'utf8')) };
    } catch (error) {
      throw new ConfigError('--config', `Config file ${file} is not valid JSON: ${(error as Error).message}`);
    }
  }
  const module = (await import(pathToFileURL(file).href)) as { default?: unknown; sync?: unknown };
  const config = module.sync ?? module.default;
  if (typeof config !== 'object' || config === null) throw new ConfigError('--config', `Config file ${file} must export the sync config as default (or as "sync")`);
  return { file, config };
}
