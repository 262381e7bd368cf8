import { hash } from 'node:crypto';
import { access } from 'node:fs/promises';
import { type ReadApiServer, startServer } from '../server/server.ts';
import { assetFilePath, readSnapshotFile } from '../wire/snapshot.ts';
import { ConfigError } from '../sync/config.ts';

/**
 * The integration's `snapshot` option: a snapshot file (as `comfortable-loader pull` writes it)
 * served by the local Read API in the Astro process, so dev and build need neither the CMS nor a
 * key. The server's port is part of every URL of the content, images included, whose optimised
 * file names Astro derives from their URL. It is derived from the copy itself, its local key
 * (made by its first pull, kept by the next ones), never from where the project lives: the
 * content's URLs (and with them the cache, the incremental build's keys and the optimised
 * images) stay the same from one build to the next, and in another folder, a CI runner's too;
 * two copies pulled apart get two ports. When that port is taken, a free one serves, and the
 * cache starts over once.
 */

export interface ServedSnapshot {
  /** The snapshot file, absolute. */
  file: string;
  /** The files its assets point to, relative to its folder: the only files `/files` serves, or a build copies. */
  files: ReadonlySet<string>;
  baseUrl: string;
  repository: string;
  apiKey: string;
  server: ReadApiServer;
  /** Set when the usual port was taken. */
  portNote?: string;
}

/**
 * The port of a copy, from its local key: 20000–29999, below Linux's ephemeral range, so an
 * outgoing connection does not hold it.
 */
export function snapshotPort(localKey: string): number {
  return 20_000 + (Number.parseInt(hash('sha1', localKey, 'hex').slice(0, 8), 16) % 10_000);
}

/**
 * `fromEnv`: the file was named by CMFT_SNAPSHOT, not by the option (the error for a missing file says which to
 * change).
 */
export async function serveSnapshot(
  file: string,
  options: {
    repository?: string | undefined;
    fromEnv: boolean;
    watch: boolean;
    warn: (line: string) => void;
    log?: (line: string) => void;
  },
): Promise<ServedSnapshot> {
  if (
    !(await access(file).then(
      () => true,
      () => false,
    ))
  ) {
    const instead = options.fromEnv ? 'unset CMFT_SNAPSHOT' : 'remove the snapshot option of comfortable()';
    throw new ConfigError(
      'comfortable.snapshot',
      `Invalid option comfortable.snapshot: no snapshot at ${file}; make one with npx comfortable-loader ` +
        `pull (or ${instead} to use the CMS)`,
    );
  }
  const snapshot = await readSnapshotFile(file);
  const { apiId, apiKeys } = snapshot.repository;
  if (options.repository !== undefined && options.repository !== apiId) {
    throw new ConfigError(
      'comfortable.snapshot',
      `Invalid option comfortable.snapshot: ${file} holds the repository "${apiId}", not ` +
        `"${options.repository}" (the repository option or CMFT_REPOSITORY)`,
    );
  }
  const start = (port: number) =>
    startServer({
      paths: [file],
      port,
      watch: options.watch,
      unref: !options.watch,
      warn: options.warn,
      ...(options.log ? { log: options.log } : {}),
    });
  const port = snapshotPort(apiKeys[0]!);
  let server: ReadApiServer;
  let portNote: string | undefined;
  try {
    server = await start(port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    server = await start(0);
    portNote =
      `port ${port}, where this snapshot is usually served, is taken (another build or dev ` +
      `server?): serving on ${server.port}, so the content cache is fetched again`;
  }
  const files = new Set(snapshot.assets.flatMap((asset) => assetFilePath(asset) || []));
  return {
    file,
    files,
    baseUrl: server.url,
    repository: apiId,
    apiKey: apiKeys[0]!,
    server,
    ...(portNote ? { portNote } : {}),
  };
}
