import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pLimit from 'p-limit';
import { fetch } from 'undici';
import { assetFilePath } from '../wire/snapshot.ts';
import type { SnapshotRecord } from '../wire/snapshot-format.ts';

/**
 * `pull --assets`: each asset's file downloaded beside the snapshot and its `fields.file.url`
 * made relative, so the local server serves it under `/files/<repo>/`. A file's path comes from
 * its URL: a local server's `/files/<repo>/<path>` keeps `<path>`; any other URL goes under
 * `files/<host>/<path>`. An asset whose revision and URL are those of the previous snapshot,
 * and whose file is there whole, is not downloaded again. Downloads land in temporary files
 * and move into place only when all are done; the API key is never sent with them.
 *
 * The server decides the paths, so it is not trusted with them: a file never goes where a file
 * of the previous snapshot's assets was not (it replaces nothing else of the folder: not the
 * snapshot, not another one, not the user's files), never to a name starting with a dot, never
 * to a `.json` beside the snapshot (`serve` would read it as one), and never longer than the
 * file system allows; a file larger than its asset says is not kept. Such an asset keeps its
 * remote URL, with a warning.
 */

type File = { url: string; fileName: string; size?: number };

export interface FileOutcome {
  downloaded: string[];
  kept: string[];
  /** Asset id → why its file could not be downloaded (the asset keeps its remote URL). */
  failed: Map<string, string>;
  /** Absolute URL → the relative path now serving it, for richtext images. */
  moved: Map<string, string>;
  /** Relative paths the snapshot now uses. */
  paths: Set<string>;
  /** Moves the downloaded files into place. */
  commit(): Promise<void>;
  /** Removes the downloaded files (the pull failed). */
  discard(): Promise<void>;
}

/** The relative path a file URL is kept under, or undefined when its path cannot be one. */
function localPath(url: string, serverOrigin: string, repository: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return undefined;
  const own = `/files/${encodeURIComponent(repository)}/`;
  const raw =
    parsed.origin === serverOrigin && parsed.pathname.startsWith(own)
      ? parsed.pathname.slice(own.length)
      : `files/${parsed.host.replace(':', '_')}${parsed.pathname}`;
  let segments: string[];
  try {
    segments = raw.split('/').map(decodeURIComponent);
  } catch {
    return undefined;
  }
  return writable(segments) ? segments.join('/') : undefined;
}

/** Whether a pull may write a file at the path of these segments, relative to the snapshot's folder. */
function writable(segments: string[]): boolean {
  if (
    segments.some(
      (s) => s === '' || s.startsWith('.') || /[\\\0]/.test(s) || s.includes('/') || Buffer.byteLength(s) > 200,
    )
  )
    return false;
  // beside the snapshot, serve would read it as one
  return !(segments.length === 1 && segments[0]!.toLowerCase().endsWith('.json'));
}

/** The relative paths of the files the assets of a snapshot have (those a pull wrote, and may replace or remove). */
export function filePaths(assets: Iterable<SnapshotRecord>): Set<string> {
  const paths = new Set<string>();
  for (const asset of assets) {
    const path = assetFilePath(asset);
    // Checked again as a download's path is: a snapshot written by hand may name anything.
    if (path !== undefined && writable(path.split('/'))) paths.add(path);
  }
  return paths;
}

export async function syncFiles(options: {
  assets: SnapshotRecord[];
  previous: Map<string, SnapshotRecord>;
  dir: string;
  serverOrigin: string;
  repository: string;
  concurrency: number;
  timeoutMs?: number;
  onProgress?: (done: number, total: number) => void;
}): Promise<FileOutcome> {
  const { assets, previous, dir } = options;
  const ours = filePaths(previous.values());
  const outcome: Omit<FileOutcome, 'commit' | 'discard'> = {
    downloaded: [],
    kept: [],
    failed: new Map(),
    moved: new Map(),
    paths: new Set(),
  };
  const staged: { temp: string; path: string }[] = [];
  const discard = async () => {
    await Promise.all(staged.map(({ temp }) => rm(temp, { force: true })));
  };
  const limit = pLimit(options.concurrency);
  const temp = () => `.pull-${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  let done = 0;
  const work = assets.map((asset) =>
    limit(async () => {
      const file = asset.fields.file as File | undefined;
      if (!file) return; // (a URL the server gave relative was resolved against it: every URL here is the server's)
      const path = localPath(file.url, options.serverOrigin, options.repository);
      const before = previous.get(asset.meta.id);
      const beforeFile = before?.fields.file as File | undefined;
      let claimed = false;
      try {
        if (path === undefined) throw new Error(`its URL ${file.url} gives no file path`);
        if (outcome.paths.has(path)) throw new Error(`another asset's file has the path ${path}`);
        outcome.paths.add(path);
        claimed = true;
        const target = join(dir, ...path.split('/'));
        if (!target.startsWith(dir + sep)) throw new Error(`its path ${path} leaves ${dir}`);
        const existing = await sizeOf(target);
        if (existing !== undefined && !ours.has(path))
          throw new Error(
            `its path ${path} is a file the previous snapshot's assets did not have, which a pull does not replace`,
          );
        if (
          existing !== undefined &&
          before?.meta.revision === asset.meta.revision &&
          beforeFile?.url === path &&
          (file.size === undefined || existing === file.size)
        ) {
          outcome.kept.push(asset.meta.id);
        } else {
          await mkdir(dirname(target), { recursive: true });
          const staging = join(dirname(target), temp());
          staged.push({ temp: staging, path: target });
          await download(file.url, staging, file.size, options.timeoutMs ?? 60_000);
          outcome.downloaded.push(asset.meta.id);
        }
        outcome.moved.set(file.url, path);
        file.url = path;
      } catch (error) {
        if (claimed) outcome.paths.delete(path!); // the path stays the other asset's when it was taken
        outcome.failed.set(asset.meta.id, (error as Error).message);
      } finally {
        options.onProgress?.(++done, assets.length);
      }
    }),
  );
  try {
    await Promise.all(work);
  } catch (error) {
    await discard();
    throw error;
  }
  return {
    ...outcome,
    commit: async () => {
      for (const { temp, path } of staged) {
        try {
          await rename(temp, path);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // a failed download left no file
        }
      }
    },
    discard,
  };
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}

/** Downloads `url` to `to`; a body larger than `size` (when the asset gives one) or of another size fails. */
async function download(url: string, to: string, size: number | undefined, timeoutMs: number): Promise<void> {
  const response = await fetch(url, { redirect: 'follow', signal: AbortSignal.timeout(timeoutMs) }).catch(
    (error: Error) => {
      throw new Error(`${url} could not be fetched: ${(error.cause as Error | undefined)?.message ?? error.message}`);
    },
  );
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    throw new Error(`${url} answered ${response.status}`);
  }
  let received = 0;
  const counted = async function* (chunks: AsyncIterable<Uint8Array>) {
    for await (const chunk of chunks) {
      received += chunk.byteLength;
      if (size !== undefined && received > size) throw new Error(`it is larger than the ${size} bytes its asset says`);
      yield chunk;
    }
  };
  try {
    await pipeline(
      Readable.fromWeb(response.body as import('node:stream/web').ReadableStream),
      counted,
      createWriteStream(to),
    );
    if (size !== undefined && received !== size)
      throw new Error(`it has ${received} bytes where its asset says ${size}`);
  } catch (error) {
    await rm(to, { force: true });
    throw new Error(`downloading ${url} failed: ${(error as Error).message}`);
  }
}
