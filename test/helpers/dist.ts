import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { filesUnder } from './playground.ts';

/** Every file of a site's dist/, by its path there, with its bytes. */
export async function tree(site: string): Promise<Map<string, Buffer>> {
  const dist = join(site, 'dist');
  const files = (await filesUnder(dist)).sort();
  return new Map(await Promise.all(files.map(async (file) => [relative(dist, file), await readFile(file)] as const)));
}

/** Paths that differ between two trees (present in one only, or with other bytes). */
export function differences(a: Map<string, Buffer>, b: Map<string, Buffer>): string[] {
  return [...new Set([...a.keys(), ...b.keys()])]
    .filter((path) => !a.get(path)?.equals(b.get(path) ?? Buffer.alloc(0)))
    .sort();
}
