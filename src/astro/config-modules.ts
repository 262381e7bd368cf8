import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fingerprintOf } from '../model/digests.ts';

/**
 * A digest of the content config and every module of the project it imports, directly or not.
 * Astro clears its content store when the text of `src/content.config.ts` changes, but not when
 * a schema module that file imports does (the schemas `comfortable-loader types` writes, say),
 * and the loader skips entries whose digest is unchanged: an edited schema would check no
 * entry until the store was deleted. With this digest in the loader's fingerprint, an edit to
 * any of those modules makes the next build validate every entry again.
 *
 * Imports are found in the source text (`import … from`, `export … from`, `import()`), and
 * followed when they are relative or match the `paths` of the project's tsconfig.json (as
 * Astro resolves them); packages are not followed. What cannot be read is left out.
 */

const configNames = [
  'content.config.mjs',
  'content.config.js',
  'content.config.mts',
  'content.config.ts',
  'content/config.ts',
  'content/config.js',
  'content/config.mjs',
  'content/config.mts',
];
const extensions = ['', '.ts', '.mts', '.tsx', '.js', '.mjs', '.jsx', '.json', '/index.ts', '/index.js', '/index.mjs'];
const specifiers =
  /(?:^|[^\w$.])(?:import|export)\s*(?:[\w$*{}\s,]*?\s*from\s*)?['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;

/**
 * The path of the first of these files in `srcDir` that exists: the config Astro takes, of those it
 * looks for in its order.
 */
export function configFile(srcDir: URL, names: readonly string[]): string | undefined {
  return names.map((name) => fileURLToPath(new URL(name, srcDir))).find((path) => existsSync(path));
}

/** The digest of the content config's module graph in the project, or '' when there is no content config. */
export function contentConfigDigest(root: URL, srcDir: URL): string {
  const config = configFile(srcDir, configNames);
  if (!config) return '';
  const aliases = tsconfigPaths(fileURLToPath(root));
  const seen = new Map<string, string>();
  const pending = [config];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    seen.set(file, text);
    for (const [, from, dynamic] of text.matchAll(specifiers)) {
      const target = resolveModule(from ?? dynamic!, dirname(file), aliases);
      if (target && !seen.has(target)) pending.push(target);
    }
  }
  // Paths relative to the project: a cache restored into another checkout (CI) keeps its digest.
  const project = fileURLToPath(root);
  const parts = [...seen.keys()].sort().map((file) => `${relative(project, file)}\u0000${seen.get(file)}`);
  return fingerprintOf(parts.join('\u0000'));
}

interface Aliases {
  baseDir: string;
  paths: [prefix: string, suffix: string | undefined, targets: string[]][];
}

/**
 * The `paths` of the project's `tsconfig.json` (comments allowed), as prefix → targets, from the
 * file itself or the nearest file it `extends` by a relative path that has them (a base config).
 */
function tsconfigPaths(root: string): Aliases | undefined {
  let file = join(root, 'tsconfig.json');
  for (let depth = 0; depth < 8; depth++) {
    const options = compilerOptionsOf(file);
    if (!options) return undefined;
    if (options.paths) {
      const paths = Object.entries(options.paths).map(([pattern, targets]): Aliases['paths'][number] => {
        const star = pattern.indexOf('*');
        return star < 0 ? [pattern, undefined, targets] : [pattern.slice(0, star), pattern.slice(star + 1), targets];
      });
      return { baseDir: resolve(dirname(file), options.baseUrl ?? '.'), paths };
    }
    const base = [options.extends ?? []]
      .flat()
      .reverse()
      .find((path) => path.startsWith('.'));
    if (!base) return undefined;
    file = resolve(dirname(file), base.endsWith('.json') ? base : `${base}.json`);
  }
  return undefined;
}

/** A tsconfig file's compiler options and what it extends; undefined when it cannot be read. */
function compilerOptionsOf(
  file: string,
): { baseUrl?: string; paths?: Record<string, string[]>; extends?: string | string[] } | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    // JSON with comments and trailing commas, as tsconfig.json may be written.
    const json = JSON.parse(
      text
        .replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*|\/\*[\s\S]*?\*\//g, (_, string: string | undefined) => string ?? '')
        .replace(/,(\s*[}\]])/g, '$1'),
    );
    return { ...(json?.compilerOptions ?? {}), extends: json?.extends };
  } catch {
    return undefined;
  }
}

/** The file a specifier names in the project, or undefined (a package, a virtual module, not found). */
function resolveModule(specifier: string, from: string, aliases: Aliases | undefined): string | undefined {
  let candidates: string[] = [];
  if (specifier.startsWith('./') || specifier.startsWith('../')) candidates = [resolve(from, specifier)];
  else if (aliases) {
    for (const [prefix, suffix, targets] of aliases.paths) {
      if (suffix === undefined ? specifier !== prefix : !(specifier.startsWith(prefix) && specifier.endsWith(suffix)))
        continue;
      const matched = suffix === undefined ? '' : specifier.slice(prefix.length, specifier.length - suffix.length);
      candidates = targets.map((target) => resolve(aliases.baseDir, target.replace('*', matched)));
      break;
    }
  }
  for (const base of candidates) {
    // TypeScript lets `./post.js` name `./post.ts`.
    for (const path of [...extensions.map((ext) => base + ext), base.replace(/\.(m?)js$/, '.$1ts')]) {
      if (!path.includes('/node_modules/') && isFile(path)) return path;
    }
  }
  return undefined;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
