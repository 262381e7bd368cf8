import { open, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, extname, resolve, sep } from 'node:path';
import { ApiError } from './errors.ts';
import { sendJson } from './http.ts';
import type { Repositories } from './repositories.ts';
import { matchesEtag } from './routes.ts';
import { isSnapshotName } from './snapshot-files.ts';

/**
 * Asset files (spec §10): `/files/<repo>/<path>` serves a file only when an asset of that
 * repository points to it, its real path (symlinks resolved) lies inside the snapshot's folder,
 * and it is not a snapshot file the server loads, of any repository: the folder beside a
 * snapshot holds the snapshot too, API keys included. Everything else is 404.
 */

const mimeTypes: Record<string, string> = {
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.pdf': 'application/pdf',
  '.txt': 'text/plain; charset=utf-8',
};

/** What the server loads snapshots from: files given or found, and folders whose `*.json` it loads. */
export interface SnapshotPaths {
  files(): Iterable<string>;
  folders(): Iterable<string>;
}

const realOrUndefined = (path: string) => realpath(path).catch(() => undefined);

/** Why a file an asset names is not served. */
export type FileProblem = 'missing' | 'outside the folder' | 'a snapshot file';

/** A snapshot's folder and the snapshot files, real paths resolved: what a file is checked against. */
interface FileBounds {
  folder: string;
  realFolder: string | undefined;
  snapshotFiles: Set<string | undefined>;
  snapshotFolders: Set<string | undefined>;
}

/** Resolves once what any number of files of the folder are checked against. */
export async function fileBounds(folder: string, snapshots: SnapshotPaths): Promise<FileBounds> {
  const [realFolder, files, folders] = await Promise.all([
    realOrUndefined(folder),
    Promise.all([...snapshots.files()].map(realOrUndefined)),
    Promise.all([...snapshots.folders()].map(realOrUndefined)),
  ]);
  return { folder, realFolder, snapshotFiles: new Set(files), snapshotFolders: new Set(folders) };
}

/**
 * The real path of the file `relative` names under the folder, or why it is not served: it is
 * missing, lies outside the folder (symlinks resolved), or is a snapshot file the server loads
 * or would load. Not checked here: that it is a regular file (see `fileProblem`).
 */
export async function locateFile(
  relative: string,
  bounds: FileBounds,
): Promise<{ real: string } | { problem: FileProblem }> {
  if (relative.includes('\0')) return { problem: 'missing' };
  const lexical = resolve(bounds.folder, relative);
  if (!lexical.startsWith(bounds.folder + sep)) return { problem: 'outside the folder' };
  const real = await realOrUndefined(lexical);
  if (real === undefined || bounds.realFolder === undefined) return { problem: 'missing' };
  if (!real.startsWith(bounds.realFolder + sep)) return { problem: 'outside the folder' };
  const snapshot =
    bounds.snapshotFiles.has(real) || (isSnapshotName(real) && bounds.snapshotFolders.has(dirname(real)));
  return snapshot ? { problem: 'a snapshot file' } : { real };
}

/** Why `/files` would answer 404 for the file `relative` names, or undefined when it would serve it. */
export async function fileProblem(relative: string, bounds: FileBounds): Promise<FileProblem | undefined> {
  const located = await locateFile(relative, bounds);
  if ('problem' in located) return located.problem;
  const info = await stat(located.real).catch(() => undefined);
  return info?.isFile() ? undefined : 'missing';
}

/**
 * A file's ETag, from its size and modification time (as nginx makes one): a client that keeps
 * the file (Astro's image cache, which asks again once `max-age` has passed) revalidates it with
 * a 304 instead of downloading it again. A pull rewrites only the files whose asset changed.
 */
const fileEtag = (size: number, mtimeMs: number): string =>
  `"${size.toString(16)}-${Math.floor(mtimeMs).toString(16)}"`;

/** The real path of the file `/files/<repo>/<relative>` may serve, or undefined (404). */
async function servable(
  repositories: Repositories,
  snapshots: SnapshotPaths,
  repo: string,
  relative: string,
): Promise<string | undefined> {
  const folder = repositories.folderOf(repo);
  const pointedTo = repositories.live.get(repo)?.localFiles().has(relative) ?? false;
  if (folder === undefined || !pointedTo) return undefined;
  const located = await locateFile(relative, await fileBounds(folder, snapshots));
  return 'real' in located ? located.real : undefined;
}

/**
 * Answers a `/files/...` path (GET or HEAD) and returns true; returns false for any other path.
 * The file is opened by its real path and streamed from that descriptor.
 */
export function serveFile(
  repositories: Repositories,
  snapshots: SnapshotPaths,
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
): boolean {
  const match = /^\/files\/([^/]+)\/(.+)$/.exec(path);
  if (!match) return false;
  let repo: string;
  let relative: string;
  try {
    repo = decodeURIComponent(match[1]!);
    relative = decodeURIComponent(match[2]!);
  } catch {
    sendJson(request, response, new ApiError(400, 'Malformed percent-encoding in path'));
    return true;
  }
  const notFound = () => sendJson(request, response, new ApiError(404, `No file ${JSON.stringify(relative)}`));
  void (async () => {
    const real = await servable(repositories, snapshots, repo, relative);
    const handle = real === undefined ? undefined : await open(real, 'r').catch(() => undefined);
    if (!handle) return notFound();
    const info = await handle.stat();
    if (!info.isFile()) {
      await handle.close();
      return notFound();
    }
    const etag = fileEtag(info.size, info.mtimeMs);
    const headers = { 'access-control-allow-origin': '*', 'cache-control': 'public, max-age=60', etag };
    if (matchesEtag(request.headers['if-none-match'], etag)) {
      await handle.close();
      response.writeHead(304, headers);
      return void response.end();
    }
    response.writeHead(200, {
      ...headers,
      'content-type': mimeTypes[extname(real!).toLowerCase()] ?? 'application/octet-stream',
      'content-length': String(info.size),
    });
    if (request.method === 'HEAD') {
      await handle.close();
      return void response.end();
    }
    handle
      .createReadStream()
      .on('error', () => response.destroy())
      .pipe(response);
  })().catch(() => (response.headersSent ? response.destroy() : notFound()));
  return true;
}
