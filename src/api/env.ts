import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';

/**
 * The connection from `CMFT_*` variables, read as Vite reads `.env` files: `.env`, `.env.local`,
 * `.env.<mode>` and `.env.<mode>.local` in a folder, each later file winning, and the process's
 * environment over all of them. Values are taken as written (no `${VAR}` expansion).
 */

/** The variables the Astro integration, the Vite plugin and the CLI read, and the options they fill. */
const envOptions = {
  CMFT_BASE_URL: 'baseUrl',
  CMFT_REPOSITORY: 'repository',
  CMFT_API_KEY: 'apiKey',
  CMFT_REFRESH_SECRET: 'refreshSecret',
  CMFT_SNAPSHOT: 'snapshot',
  CMFT_POLL_INTERVAL: 'pollInterval',
} as const;

type EnvOption = (typeof envOptions)[keyof typeof envOptions];

/**
 * The `CMFT_*` variables of the environment and of the `.env` files of `dir` for `mode` (none read when `dir` is
 * false).
 */
export function readEnv(
  dir: string | false,
  mode: string,
  env: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const found: Record<string, string> = {};
  const files = dir === false ? [] : ['.env', '.env.local', `.env.${mode}`, `.env.${mode}.local`];
  for (const name of files) {
    let text: string;
    try {
      text = readFileSync(join(dir as string, name), 'utf8');
    } catch {
      continue; // no such file
    }
    Object.assign(found, parseEnv(text));
  }
  for (const [name, value] of Object.entries(env)) if (value !== undefined) found[name] = value;
  return Object.fromEntries(Object.entries(found).filter(([name]) => name.startsWith('CMFT_')));
}

/** The options with those they leave out (undefined) taken from the variables; `only` limits which. */
export function withEnv<T extends object>(
  options: T,
  env: Record<string, string>,
  only: readonly EnvOption[] = Object.values(envOptions),
): T & Partial<Record<EnvOption, string>> {
  const filled = { ...options } as Record<string, unknown>;
  for (const [name, option] of Object.entries(envOptions)) {
    if (only.includes(option) && filled[option] === undefined && env[name] !== undefined) filled[option] = env[name];
  }
  return filled as T & Partial<Record<EnvOption, string>>;
}
