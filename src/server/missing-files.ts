import { posix } from 'node:path';
import { fileBounds, type FileProblem, fileProblem, type SnapshotPaths } from './files.ts';
import { assetFilePath } from '../wire/snapshot.ts';
import type { Snapshot } from '../wire/snapshot-format.ts';

/**
 * Asset files `/files` would answer 404 for: a snapshot copied without its `images/` folder
 * serves no image, and says so once when it loads, not once per request.
 */

/** An asset whose relative `fields.file.url` names a file the server cannot find or will not serve. */
export interface MissingFile {
  id: string;
  /** The path under the snapshot's folder, as the asset's URL names it. */
  path: string;
  problem: FileProblem;
}

/** How many assets a warning names; the rest are counted. */
const named = 3;

/**
 * The assets of a snapshot served from `folder` whose local file is missing or refused, in the
 * snapshot's order. Each distinct file is checked once, all of them concurrently; absolute URLs
 * (a CDN) are not checked.
 */
export async function findMissingFiles(
  snapshot: Snapshot,
  folder: string,
  snapshots: SnapshotPaths,
): Promise<MissingFile[]> {
  const local = snapshot.assets.flatMap((asset) => {
    const path = assetFilePath(asset);
    return path === undefined ? [] : [{ id: asset.meta.id, path }];
  });
  if (local.length === 0) return [];
  const bounds = await fileBounds(folder, snapshots);
  const paths = [...new Set(local.map(({ path }) => path))];
  const problems = new Map(
    await Promise.all(paths.map(async (path) => [path, await fileProblem(path, bounds)] as const)),
  );
  return local.flatMap(({ id, path }) => {
    const problem = problems.get(path);
    return problem === undefined ? [] : [{ id, path, problem }];
  });
}

/**
 * The one line the server logs for a repository's missing files: how many, the first few, and
 * what to do.
 *
 * @example
 * missingFilesWarning('demo', '/site/demo.json', [{ id: '7', path: 'images/a.svg', problem: 'missing' }]);
 * // 'Warning: 1 asset of repository demo names a file the server cannot find, so /files/demo/
 * //  answers 404 for it: 7 images/a.svg. Copy the images/ folder beside /site/demo.json.'
 */
export function missingFilesWarning(repository: string, snapshotFile: string, missing: MissingFile[]): string {
  const one = missing.length === 1;
  const absent = missing.filter((file) => file.problem === 'missing');
  const refused = absent.length < missing.length;
  const listed = missing
    .slice(0, named)
    .map(({ id, path, problem }) => `${id} ${path}${problem === 'missing' ? '' : ` (${problem})`}`)
    .join(', ');
  const more = missing.length > named ? ` and ${missing.length - named} more` : '';
  const advice: string[] = [];
  if (absent.length > 0) {
    const folders = new Set(absent.map(({ path }) => posix.normalize(path).split('/')));
    const inFolders = [...folders].every((segments) => segments.length > 1);
    const names = [...new Set([...folders].map((segments) => `${segments[0]}/`))];
    const what = !inFolders
      ? 'the missing files'
      : names.length === 1
        ? `the ${names[0]} folder`
        : `the ${names.join(', ')} folders`;
    advice.push(`Copy ${what} beside ${snapshotFile}.`);
  }
  if (refused) advice.push(`A file outside the snapshot's folder, or a snapshot file, is never served.`);
  return [
    `Warning: ${missing.length} ${one ? 'asset' : 'assets'} of repository ${repository} ${one ? 'names' : 'name'} ` +
      `a file the server cannot find${refused ? ' or will not serve' : ''},`,
    `so /files/${repository}/ answers 404 for ${one ? 'it' : 'them'}: ${listed}${more}.`,
    ...advice,
  ].join(' ');
}
