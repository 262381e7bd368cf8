import { fileURLToPath } from 'node:url';
import { type ReadApiServer, startServer, type ServerOptions } from '../../src/server/index.ts';

export const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
export const demoSnapshot = fileURLToPath(new URL('../../playground/content/demo.json', import.meta.url));

export const tinyKey = 'tiny-key';
export const demoKey = 'demo-read-key-0123456789abcdef';

/** Starts the local Read API on the tiny fixture (or other options) on a free port. */
export function startTiny(options: ServerOptions = {}): Promise<ReadApiServer> {
  return startServer({ paths: [fixture('tiny.json')], watch: false, ...options });
}

/** GETs a path under the server's base URL with the tiny key, and parses the JSON answer. */
export async function getJson(server: ReadApiServer, path: string, init: RequestInit = {}, key = tinyKey): Promise<{ status: number; body: any; headers: Headers }> {
  const response = await fetch(`${server.url}${path}`, { ...init, headers: { authorization: key, ...(init.headers ?? {}) } });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}
