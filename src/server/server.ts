import { EventEmitter } from 'node:events';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { ApiError } from './errors.ts';
import { serveFile } from './files.ts';
import {
  createHttpServer,
  defaultRequestTimeouts,
  inTurn,
  largeBody,
  readBody,
  send,
  sendJson,
  type RequestTimeouts,
} from './http.ts';
import { findMissingFiles, type MissingFile, missingFilesWarning } from './missing-files.ts';
import { redactKey } from './query-string.ts';
import { checkDistinct, type ReloadEvent, Repositories, type SnapshotSource } from './repositories.ts';
import { SnapshotFiles } from './snapshot-files.ts';
import { handleApiRequest } from './routes.ts';
import { parseSnapshot, readSnapshotFile } from '../wire/snapshot.ts';
import type { Snapshot } from '../wire/snapshot-format.ts';
import { sendWebhook, type WebhookTarget } from './webhooks.ts';

export { diffSnapshots, type ReloadEvent } from './repositories.ts';
export type { MissingFile } from './missing-files.ts';

/** Emitted as `missing-files` when a loaded snapshot's assets name files `/files` would answer 404 for. */
export interface MissingFilesEvent {
  repository: string;
  /** The snapshot file; the asset paths are relative to its folder. */
  file: string;
  missing: MissingFile[];
}

export interface ServerOptions {
  /** Snapshot files, or folders whose `*.json` files are snapshots. Watched for changes unless `watch` is false. */
  paths?: string[];
  /** Snapshots given as objects (for tests); their relative asset URLs have no folder to be served from. */
  snapshots?: unknown[];
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Host to bind; default 127.0.0.1. */
  host?: string;
  /** Reload snapshot files when they change on disk. Default true. */
  watch?: boolean;
  /** Receives one line per request and per reload; default: no logging. */
  log?: (line: string) => void;
  /** Receives warnings: asset files missing, a reload refused. Default: `log`. */
  warn?: (line: string) => void;
  /** After each successful reload, POST `{ repository, changed, removed }` here, signed with the secret (spec §10). */
  webhook?: WebhookTarget;
  /** Let the process exit while the server listens (an in-process server of a build tool). Default false. */
  unref?: boolean;
  /** How long a request's headers and its body may take to arrive (default 30 s each); later, 408. */
  timeouts?: Partial<RequestTimeouts>;
}

export interface ReadApiServer {
  /** The API's base URL, such as `http://127.0.0.1:4010/v1`. */
  readonly url: string;
  /** `http://host:port` */
  readonly origin: string;
  readonly port: number;
  /**
   * Emits `reload` (ReloadEvent) after a snapshot is swapped in, `reload-error` ({ file, error })
   * when a reload is refused, and `missing-files` (MissingFilesEvent) when a snapshot loaded, at
   * start (just after `startServer` resolves) or on a reload, has assets whose files are missing.
   */
  readonly events: EventEmitter;
  /** The API ids of the repositories served. */
  repositories(): string[];
  /** Validates a snapshot and swaps it in for its repository atomically (as a file reload would). */
  replaceSnapshot(snapshot: unknown, label?: string): Promise<ReloadEvent>;
  close(): Promise<void>;
}

/** Starts the local Read API on snapshot files and/or snapshot objects. */
export async function startServer(options: ServerOptions = {}): Promise<ReadApiServer> {
  const log = options.log ?? (() => {});
  const warn = options.warn ?? log;
  const timeouts: RequestTimeouts = { ...defaultRequestTimeouts, ...options.timeouts };
  const events = new EventEmitter();
  const repositories = new Repositories();
  const files = await SnapshotFiles.expand(options.paths ?? []);

  const initial: { snapshot: Snapshot; source: SnapshotSource; label: string }[] = [];
  for (const file of files.files())
    initial.push({ snapshot: await readSnapshotFile(file), source: { file }, label: file });
  (options.snapshots ?? []).forEach((raw, i) => {
    initial.push({ snapshot: parseSnapshot(raw, `snapshot #${i}`), source: {}, label: `snapshot #${i}` });
  });
  checkDistinct(initial);

  let closed = false;
  /**
   * Warns, once per load, about the asset files of a repository `/files` would answer 404 for. A
   * check that a later reload overtook says nothing: that reload's own check speaks.
   */
  const checkFiles = async (apiId: string): Promise<void> => {
    const repository = repositories.live.get(apiId);
    const file = repositories.sourceOf(apiId)?.file;
    if (!repository || file === undefined) return;
    try {
      const missing = await findMissingFiles(repository.snapshot, dirname(file), files);
      if (missing.length === 0 || closed || repositories.live.get(apiId) !== repository) return;
      warn(missingFilesWarning(apiId, file, missing));
      events.emit('missing-files', { repository: apiId, file, missing } satisfies MissingFilesEvent);
    } catch (error) {
      warn(`could not check the asset files of ${apiId} beside ${file}: ${(error as Error).message}`);
    }
  };

  const notify = async (event: ReloadEvent): Promise<void> => {
    events.emit('reload', event);
    if (options.webhook) await sendWebhook(options.webhook, event, log);
  };

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const started = performance.now();
    const url = request.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? '' : url.slice(q + 1);
    // Only with a logger: the line costs a decode of every query parameter.
    if (options.log) {
      response.on('finish', () => {
        const shown = query ? `${path}?${redactKey(query)}` : path;
        log(
          `${request.method} ${shown.replace(/\?$/, '')} ${response.statusCode} ` +
            `${(performance.now() - started).toFixed(1)}ms`,
        );
      });
    }
    const method = request.method ?? 'GET';
    if (method === 'OPTIONS') {
      response.writeHead(204, {
        'access-control-allow-origin': '*',
        'access-control-allow-methods': 'GET, HEAD, POST, OPTIONS',
        'access-control-allow-headers': 'Authorization, Content-Type, If-None-Match',
        'access-control-max-age': '86400',
      });
      return void response.end();
    }
    if ((method === 'GET' || method === 'HEAD') && serveFile(repositories, files, request, response, path)) return;
    let body: unknown;
    let large = false;
    if (method === 'POST') {
      try {
        const text = await readBody(request, timeouts);
        const parse = () => (text.trim() === '' ? undefined : (JSON.parse(text) as unknown));
        large = text.length > largeBody;
        body = large ? await inTurn(parse) : parse();
      } catch (error) {
        if (!(error instanceof ApiError) && !(error instanceof SyntaxError)) throw error;
        return sendJson(
          request,
          response,
          error instanceof ApiError
            ? error
            : new ApiError(400, `The request body is not valid JSON (${error.message})`),
        );
      }
    }
    const handle = () =>
      handleApiRequest(repositories.live, {
        method,
        path,
        query,
        authorization: request.headers.authorization,
        ifNoneMatch: request.headers['if-none-match'],
        body,
      });
    const answer = large ? await inTurn(handle) : handle();
    send(request, response, answer.status, answer.headers, answer.body);
  }

  const server = createHttpServer(serve, timeouts, log);
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolveListen());
  });
  if (options.unref) server.unref();
  const address = server.address() as AddressInfo;
  const host =
    address.family === 'IPv6'
      ? `[${address.address === '::' ? '::1' : address.address}]`
      : address.address === '0.0.0.0'
        ? '127.0.0.1'
        : address.address;
  const origin = `http://${host}:${address.port}`;
  repositories.origin = origin;
  try {
    for (const { snapshot, source, label } of initial) repositories.swap(snapshot, source, label);
  } catch (error) {
    server.close();
    throw error;
  }
  // Not awaited, so the start is not slowed; after this function has returned (setImmediate
  // runs once the awaiting caller's microtasks are done), so the CLI's first line is still its
  // URL and a caller can listen for the event.
  setImmediate(() => void Promise.all(repositories.apiIds().map(checkFiles)));

  // A broken edit keeps the old snapshot in service.
  if (options.watch !== false) {
    files.watch((file) => {
      void (async () => {
        try {
          const event = repositories.swap(await readSnapshotFile(file), { file }, file);
          log(
            `reloaded ${event.repository} from ${file}: ` +
              `${event.changed.length} changed, ${event.removed.length} removed`,
          );
          await checkFiles(event.repository);
          await notify(event);
        } catch (error) {
          warn(`reload of ${file} failed, the previous snapshot stays in service: ${(error as Error).message}`);
          events.emit('reload-error', { file, error });
        }
      })();
    });
  }

  return {
    url: `${origin}/v1`,
    origin,
    port: address.port,
    events,
    repositories: () => repositories.apiIds(),
    async replaceSnapshot(raw, label = 'replaced snapshot') {
      const snapshot = parseSnapshot(raw, label);
      const event = repositories.swap(snapshot, repositories.sourceOf(snapshot.repository.apiId) ?? {}, label);
      await checkFiles(event.repository);
      await notify(event);
      return event;
    },
    async close() {
      closed = true;
      files.close();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
    },
  };
}
