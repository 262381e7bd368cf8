import { createHmac } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createReadStream, type FSWatcher, watch } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { collectionError } from './answer.ts';
import { ApiError } from './errors.ts';
import { redactKey } from './query-string.ts';
import { PreparedRepository } from './repository.ts';
import { errorResponse, handleApiRequest } from './routes.ts';
import { parseSnapshot, readSnapshotFile, type Snapshot, SnapshotError } from './snapshot.ts';

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
  /** After each successful reload, POST `{ repository, changed, removed }` here, signed with the secret. */
  webhook?: { url: string; secret: string };
}

export interface ReloadEvent {
  repository: string;
  changed: string[];
  removed: string[];
}

export interface ReadApiServer {
  /** The API's base URL, such as `http://127.0.0.1:4010/v1`. */
  readonly url: string;
  /** `http://host:port` */
  readonly origin: string;
  readonly port: number;
  /** Emits `reload` (ReloadEvent) after a snapshot is swapped in, `reload-error` ({ file, error }) when a reload is refused. */
  readonly events: EventEmitter;
  /** The API ids of the repositories served. */
  repositories(): string[];
  /** Validates a snapshot and swaps it in for its repository atomically (as a file reload would). */
  replaceSnapshot(snapshot: unknown, label?: string): Promise<ReloadEvent>;
  close(): Promise<void>;
}

interface Source {
  file?: string;
  /** The folder relative asset URLs are served from. */
  dir?: string;
}

const maxBodyBytes = 1024 * 1024;
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

async function expandPaths(paths: string[]): Promise<{ files: string[]; folders: string[] }> {
  const files: string[] = [];
  const folders: string[] = [];
  for (const path of paths.map((p) => resolve(p))) {
    const info = await stat(path).catch(() => {
      throw new Error(`Snapshot path not found: ${path}`);
    });
    if (info.isDirectory()) {
      folders.push(path);
      const names = (await readdir(path)).filter((n) => n.endsWith('.json')).sort();
      if (names.length === 0) throw new Error(`No snapshot (*.json) in folder ${path}`);
      files.push(...names.map((n) => join(path, n)));
    } else files.push(path);
  }
  return { files: [...new Set(files)], folders };
}

/** The ids of records added or changed, and of records removed, between two snapshots. */
export function diffSnapshots(before: Snapshot | undefined, after: Snapshot): { changed: string[]; removed: string[] } {
  const index = (s: Snapshot | undefined) => new Map([...(s?.documents ?? []), ...(s?.assets ?? [])].map((r) => [r.meta.id, JSON.stringify(r)]));
  const old = index(before);
  const now = index(after);
  return {
    changed: [...now].filter(([id, json]) => old.get(id) !== json).map(([id]) => id),
    removed: [...old.keys()].filter((id) => !now.has(id)),
  };
}

/** Starts the local Read API on snapshot files and/or snapshot objects. */
export async function startServer(options: ServerOptions = {}): Promise<ReadApiServer> {
  const log = options.log ?? (() => {});
  const events = new EventEmitter();
  const live = new Map<string, PreparedRepository>();
  const sources = new Map<string, Source>(); // repository apiId → where it came from
  const { files, folders } = await expandPaths(options.paths ?? []);

  const initial: { snapshot: Snapshot; source: Source; label: string }[] = [];
  for (const file of files) initial.push({ snapshot: await readSnapshotFile(file), source: { file, dir: dirname(file) }, label: file });
  (options.snapshots ?? []).forEach((raw, i) => initial.push({ snapshot: parseSnapshot(raw, `snapshot #${i}`), source: {}, label: `snapshot #${i}` }));
  const seen = new Map<string, string>();
  for (const { snapshot, label } of initial) {
    const apiId = snapshot.repository.apiId;
    if (seen.has(apiId)) throw new SnapshotError(label, '$.repository.apiId', `repository ${JSON.stringify(apiId)} is also served from ${seen.get(apiId)}`);
    seen.set(apiId, label);
  }

  let origin = '';
  const prepare = (snapshot: Snapshot, label: string): PreparedRepository => {
    const repository = new PreparedRepository(snapshot, origin);
    snapshot.collections.forEach((collection, i) => {
      const problem = collectionError(repository, collection);
      if (problem) throw new SnapshotError(label, `$.collections[${i}].${problem.key}`, problem.error.message);
    });
    return repository;
  };

  const swap = (snapshot: Snapshot, source: Source, label: string): ReloadEvent => {
    const apiId = snapshot.repository.apiId;
    const owner = [...sources].find(([id, s]) => id !== apiId && s.file !== undefined && s.file === source.file);
    const other = sources.get(apiId);
    if (other && other.file !== source.file && source.file !== undefined) {
      throw new SnapshotError(label, '$.repository.apiId', `repository ${JSON.stringify(apiId)} is also served from ${other.file ?? 'another snapshot'}`);
    }
    const repository = prepare(snapshot, label);
    const previous = live.get(apiId);
    // Before it goes live, so the first requests after a reload are as fast as those before it.
    if (previous) repository.warmLike(previous);
    live.set(apiId, repository); // the atomic swap: a request holds the repository it started with
    sources.set(apiId, source);
    if (owner) {
      // The file now serves another repository: the one it served before is gone.
      live.delete(owner[0]);
      sources.delete(owner[0]);
    }
    return { repository: apiId, ...diffSnapshots(previous?.snapshot, snapshot) };
  };

  const notify = async (event: ReloadEvent): Promise<void> => {
    events.emit('reload', event);
    if (!options.webhook) return;
    const body = JSON.stringify(event);
    const signature = createHmac('sha256', options.webhook.secret).update(body).digest('hex');
    try {
      const response = await fetch(options.webhook.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-signature': `sha256=${signature}` },
        body,
      });
      await response.arrayBuffer();
      log(`webhook ${options.webhook.url} answered ${response.status}`);
    } catch (error) {
      log(`webhook ${options.webhook.url} failed: ${(error as Error).message}`);
    }
  };

  const server = createServer((request, response) => {
    void serve(request, response).catch((error: unknown) => {
      log(`internal error: ${(error as Error).stack ?? String(error)}`);
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ status: 500, message: 'Internal error', error: { code: 'internal', message: 'Internal error' } }));
    });
  });
  server.keepAliveTimeout = 65_000;
  // Node's HTTP parser refuses some requests before `serve` sees them (a URL or headers over its
  // 16 KiB limit, a malformed request line) with a bare 400/431; answer the spec's JSON error instead.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!error.code?.startsWith('HPE_') || !socket.writable) return void socket.destroy();
    const message =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? 'The request line and headers are too large; send long options as a JSON body with POST'
        : `Malformed HTTP request (${error.code})`;
    const body = JSON.stringify(new ApiError(400, message).body());
    socket.end(
      'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json; charset=utf-8\r\naccess-control-allow-origin: *\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });

  const send = (request: IncomingMessage, response: ServerResponse, status: number, headers: Record<string, string>, body: string | Buffer[]) => {
    const parts = typeof body === 'string' ? [Buffer.from(body)] : body;
    let length = 0;
    for (const part of parts) length += part.length;
    response.writeHead(status, {
      'access-control-allow-origin': '*',
      'access-control-expose-headers': 'ETag',
      ...headers,
      ...(status === 304 ? {} : { 'content-length': String(length) }),
    });
    if (request.method === 'HEAD' || status === 304) return void response.end();
    // A small answer is cheaper joined; a big one leaves corked in one writev, as joining
    // megabytes would cost a copy and garbage collection.
    if (length <= 256 * 1024) return void response.end(parts.length === 1 ? parts[0] : Buffer.concat(parts, length));
    response.cork();
    for (const part of parts) response.write(part);
    response.end();
  };

  const readBody = (request: IncomingMessage): Promise<string> =>
    new Promise((resolveBody, reject) => {
      const declared = Number(request.headers['content-length'] ?? 0);
      if (declared > maxBodyBytes) return reject(new ApiError(413, `The request body is larger than ${maxBodyBytes} bytes`));
      const chunks: Buffer[] = [];
      let size = 0;
      request.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBodyBytes) {
          request.removeAllListeners('data');
          request.resume();
          reject(new ApiError(413, `The request body is larger than ${maxBodyBytes} bytes`));
        } else chunks.push(chunk);
      });
      request.on('end', () => resolveBody(Buffer.concat(chunks).toString('utf8')));
      request.on('error', reject);
    });

  const serveFile = (request: IncomingMessage, response: ServerResponse, path: string): boolean => {
    const match = /^\/files\/([^/]+)\/(.+)$/.exec(path);
    if (!match) return false;
    let repo: string;
    let relative: string;
    try {
      repo = decodeURIComponent(match[1]!);
      relative = decodeURIComponent(match[2]!);
    } catch {
      send(request, response, 400, { 'content-type': 'application/json' }, JSON.stringify(new ApiError(400, 'Malformed percent-encoding in path').body()));
      return true;
    }
    const dir = sources.get(repo)?.dir;
    const file = dir && resolve(dir, relative);
    const isAssetFile = live.get(repo)?.localFiles().has(relative) ?? false;
    if (!dir || !file || !isAssetFile || !file.startsWith(dir + sep) || relative.includes('\0')) {
      send(request, response, 404, { 'content-type': 'application/json' }, JSON.stringify(new ApiError(404, `No file ${JSON.stringify(relative)}`).body()));
      return true;
    }
    stat(file).then(
      (info) => {
        if (!info.isFile()) throw new Error('not a file');
        response.writeHead(200, {
          'access-control-allow-origin': '*',
          'content-type': mimeTypes[extname(file).toLowerCase()] ?? 'application/octet-stream',
          'content-length': String(info.size),
          'cache-control': 'public, max-age=60',
        });
        if (request.method === 'HEAD') response.end();
        else createReadStream(file).on('error', () => response.destroy()).pipe(response);
      },
      () => send(request, response, 404, { 'content-type': 'application/json' }, JSON.stringify(new ApiError(404, `No file ${JSON.stringify(relative)}`).body())),
    );
    return true;
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
        log(`${request.method} ${shown.replace(/\?$/, '')} ${response.statusCode} ${(performance.now() - started).toFixed(1)}ms`);
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
      response.end();
      return;
    }
    if ((method === 'GET' || method === 'HEAD') && serveFile(request, response, path)) return;
    let body: unknown;
    if (method === 'POST') {
      try {
        const text = await readBody(request);
        if (text.trim() !== '') body = JSON.parse(text);
      } catch (error) {
        const apiError = error instanceof ApiError ? error : new ApiError(400, `The request body is not valid JSON (${(error as Error).message})`);
        const answer = errorResponse(apiError);
        if (apiError.status === 413) response.setHeader('connection', 'close');
        send(request, response, answer.status, answer.headers, answer.body);
        return;
      }
    }
    const answer = handleApiRequest(live, {
      method,
      path,
      query,
      authorization: request.headers.authorization,
      ifNoneMatch: request.headers['if-none-match'],
      body,
    });
    send(request, response, answer.status, answer.headers, answer.body);
  }

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolveListen());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address === '::' ? '::1' : address.address}]` : address.address === '0.0.0.0' ? '127.0.0.1' : address.address;
  origin = `http://${host}:${address.port}`;
  try {
    for (const { snapshot, source, label } of initial) swap(snapshot, source, label);
  } catch (error) {
    server.close();
    throw error;
  }

  // Reload changed files; a broken edit keeps the old snapshot in service.
  const watchers: FSWatcher[] = [];
  const timers = new Map<string, NodeJS.Timeout>();
  const reloadFile = async (file: string): Promise<void> => {
    try {
      const snapshot = await readSnapshotFile(file);
      const event = swap(snapshot, { file, dir: dirname(file) }, file);
      log(`reloaded ${event.repository} from ${file}: ${event.changed.length} changed, ${event.removed.length} removed`);
      await notify(event);
    } catch (error) {
      log(`reload of ${file} failed, the previous snapshot stays in service: ${(error as Error).message}`);
      events.emit('reload-error', { file, error });
    }
  };
  if (options.watch !== false) {
    const tracked = new Set(files);
    const dirs = new Set([...files.map((f) => dirname(f)), ...folders]);
    for (const dir of dirs) {
      const watcher = watch(dir, (_event, name) => {
        if (!name) return;
        const file = join(dir, name.toString());
        if (!tracked.has(file) && !(folders.includes(dir) && file.endsWith('.json') && !basename(file).startsWith('.'))) return;
        clearTimeout(timers.get(file));
        timers.set(
          file,
          setTimeout(() => {
            timers.delete(file);
            stat(file).then(
              () => {
                tracked.add(file);
                void reloadFile(file);
              },
              () => {}, // removed or renamed away: keep serving what it held
            );
          }, 60),
        );
      });
      watchers.push(watcher);
    }
  }

  return {
    url: `${origin}/v1`,
    origin,
    port: address.port,
    events,
    repositories: () => [...live.keys()],
    async replaceSnapshot(raw, label = 'replaced snapshot') {
      const snapshot = parseSnapshot(raw, label);
      const previous = sources.get(snapshot.repository.apiId);
      const event = swap(snapshot, previous ?? {}, label);
      await notify(event);
      return event;
    },
    async close() {
      for (const watcher of watchers) watcher.close();
      for (const timer of timers.values()) clearTimeout(timer);
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
    },
  };
}
