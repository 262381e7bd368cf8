import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * A site that installed exactly some packages, as `npm install` leaves it: those packages, what
 * they depend on (peers too, but the optional ones npm leaves out, such as vite's @types/node),
 * and nothing else, so that a page that needs another package fails as it would for a user. The
 * dependencies are those package-lock.json records; each is a link into this repository's
 * node_modules, so no registry is asked. This package is copied in as `npm pack` ships it, from
 * dist/ (which `npm test` compiles first). The site must be outside this repository, whose
 * node_modules would give it everything, and its tsconfig must set `preserveSymlinks`: else
 * TypeScript follows each link into this repository and finds what the site lacks there.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** The top-level folders of node_modules that `names` and their dependencies take, as the lock file has them. */
function dependencyClosure(names: string[]): string[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages as Record<string, LockEntry>;
  const taken = new Set<string>();
  /** Where node finds `name` from the package at `from`: its own node_modules, then each folder up. */
  const resolve = (from: string, name: string): string | undefined => {
    for (let dir = from; ; dir = dir.slice(0, Math.max(0, dir.lastIndexOf('/node_modules/')))) {
      const path = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (lock[path]) return path;
      if (!dir) return undefined;
    }
  };
  const visit = (path: string) => {
    // Optional packages of other platforms are in the lock file, not on disk.
    if (taken.has(path) || !existsSync(join(root, path))) return;
    taken.add(path);
    const entry = lock[path]!;
    const peers = Object.keys(entry.peerDependencies ?? {}).filter(
      (name) => !entry.peerDependenciesMeta?.[name]?.optional,
    );
    for (const name of [...Object.keys({ ...entry.dependencies, ...entry.optionalDependencies }), ...peers]) {
      const found = resolve(path, name);
      if (found) visit(found);
    }
  };
  for (const name of names) visit(`node_modules/${name}`);
  // Nested ones come with the folder of the package that holds them.
  return [...taken]
    .filter((path) => path.lastIndexOf('node_modules/') === 0)
    .map((path) => path.slice('node_modules/'.length));
}

/**
 * Makes `dir` a site that ran `npm install` of `dependencies` and `npm install -D` of
 * `devDependencies` (`comfortable-loader` among them is this package): its package.json names
 * them, as npm writes it, and its node_modules hold them and their dependencies only.
 */
export async function installPackages(
  dir: string,
  { dependencies, devDependencies }: { dependencies: string[]; devDependencies: string[] },
): Promise<void> {
  const own = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    version: string;
    dependencies: Record<string, string>;
  };
  const named = [...dependencies, ...devDependencies];
  const self = named.includes('comfortable-loader');
  const others = named.filter((name) => name !== 'comfortable-loader');
  for (const name of dependencyClosure([...others, ...(self ? Object.keys(own.dependencies) : [])])) {
    await mkdir(dirname(join(dir, 'node_modules', name)), { recursive: true });
    await symlink(join(root, 'node_modules', name), join(dir, 'node_modules', name), 'dir');
  }
  if (self) {
    if (!existsSync(join(root, 'dist/astro/index.js')))
      throw new Error('dist/ is not built: run the tests with npm test');
    for (const name of ['package.json', 'dist', 'components', 'types']) {
      await cp(join(root, name), join(dir, 'node_modules/comfortable-loader', name), { recursive: true });
    }
  }
  const versions = (names: string[]) =>
    Object.fromEntries(
      names.map((name) => [name, name === 'comfortable-loader' ? own.version : packageVersion(name)] as const),
    );
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, unknown>;
  manifest.dependencies = versions(dependencies);
  manifest.devDependencies = versions(devDependencies);
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
}

function packageVersion(name: string): string {
  return `^${JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version}`;
}
