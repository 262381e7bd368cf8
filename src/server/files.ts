import { open, realpath } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, extname, resolve, sep } from 'node:path';
import { ApiError } from './errors.ts';
import { sendJson } from './http.ts';
import { isSnapshotName, type Repositories } from './registry.ts';

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

/** True when `real` is, once symlinks are resolved, a snapshot file the server loads or would load. */
async function isSnapshot(real: string, snapshots: SnapshotPaths): Promise<boolean> {
  const files = await Promise.all([...snapshots.files()].map(realOrUndefined));
  if (files.includes(real)) return true;
  if (!isSnapshotName(real)) return false;
  const folders = await Promise.all([...snapshots.folders()].map(realOrUndefined));
  return folders.includes(dirname(real));
}

/** The real path of the file `/files/<repo>/<relative>` may serve, or undefined (404). */
async function servable(repositories: Repositories, snapshots: SnapshotPaths, repo: string, relative: string): Promise<string | undefined> {
  const folder = repositories.folderOf(repo);
  const pointedTo = repositories.live.get(repo)?.localFiles().has(relative) ?? false;
  if (folder === undefined || !pointedTo || relative.includes('\0')) return undefined;
  const lexical = resolve(folder, relative);
  if (!lexical.startsWith(folder + sep)) return undefined;
  const [real, realFolder] = await Promise.all([realOrUndefined(lexical), realOrUndefined(folder)]);
  if (real === undefined || realFolder === undefined || !real.startsWith(realFolder + sep)) return undefined;
  return (await isSnapshot(real, snapshots)) ? undefined : real;
}

/**
 * Answers a `/files/...` path (GET or HEAD) and returns true; returns false for any other path.
 * The file is opened by its real path and streamed from that descriptor.
 */
export function serveFile(repositories: Repositories, snapshots: SnapshotPaths, request: IncomingMessage, response: ServerResponse, path: string): boolean {
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
    response.writeHead(200, {
      'access-control-allow-origin': '*',
      'content-type': mimeTypes[extname(real!).toLowerCase()] ?? 'application/octet-stream',
      'content-length': String(info.size),
      'cache-control': 'public, max-age=60',
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
