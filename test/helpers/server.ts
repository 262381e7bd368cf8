import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { type ReadApiServer, startServer, type ServerOptions } from '../../src/server/index.ts';

export const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
export const demoSnapshot = fileURLToPath(new URL('../../playground/content/demo.json', import.meta.url));

/** Starts a server before the tests of a file and closes it after them; the function returned gives it. */
export function servedForFile(start: () => Promise<ReadApiServer>): () => ReadApiServer {
  let server: ReadApiServer | undefined;
  beforeAll(async () => {
    server = await start();
  });
  afterAll(() => server?.close());
  return () => server!;
}

export const tinyKey = 'tiny-key';
export const demoKey = 'demo-read-key-0123456789abcdef';

/** Starts the local Read API on the tiny fixture (or other options) on a free port. */
export function startTiny(options: ServerOptions = {}): Promise<ReadApiServer> {
  return startServer({ paths: [fixture('tiny.json')], watch: false, ...options });
}

/** GETs a path under the server's base URL with the tiny key, and parses the JSON answer. */
export async function getJson(
  server: ReadApiServer,
  path: string,
  init: RequestInit = {},
  key = tinyKey,
): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${server.url}${path}`, {
    ...init,
    headers: { authorization: key, ...(init.headers ?? {}) },
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

/** GETs a path exactly as written (fetch would resolve `..` before sending it). */
export function rawGet(
  server: ReadApiServer,
  path: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest(`${server.origin}/`, { path }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks).toString() }),
      );
    })
      .on('error', reject)
      .end();
  });
}

/** A fresh deep copy of the tiny fixture, to edit. */
export const tinySnapshot = (): any => JSON.parse(readFileSync(fixture('tiny.json'), 'utf8'));

let folders = 0;
/** A new folder under `scratch` holding `tiny.json` with the given content (and the fixture's image); returns the file's path. */
export function snapshotFolder(scratch: string, snapshot: object = tinySnapshot()): string {
  const dir = join(scratch, `case-${++folders}`);
  mkdirSync(join(dir, 'images'), { recursive: true });
  writeFileSync(join(dir, 'images', 'apples.svg'), readFileSync(fixture('images/apples.svg')));
  writeFileSync(join(dir, 'tiny.json'), JSON.stringify(snapshot, null, 2));
  return join(dir, 'tiny.json');
}

/** Replaces a file in one step, as an editor that saves atomically does, so a watcher never reads half a file. */
export function rewrite(file: string, content: string): void {
  writeFileSync(`${file}.partial`, content);
  renameSync(`${file}.partial`, file);
}
