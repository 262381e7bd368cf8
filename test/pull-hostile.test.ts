import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { projectWith, runIn } from './helpers/pull.ts';
import { fixture, tinyKey } from './helpers/server.ts';

/**
 * `pull` against a server that is not to be trusted with what it answers: a real node:http
 * server in front of the local Read API (serving the tiny fixture) that edits its JSON answers
 * and serves the files its asset URLs name. The server decides the file paths, sizes, field
 * names and the paging; none of it may overwrite or delete what the pull did not write, lose
 * documents silently, or carry the key into what the command prints.
 */

type Json = Record<string, unknown> & { meta?: { id: string; contentType: string }; fields?: Record<string, unknown> };
interface Hostile {
  origin: string;
  /** Edits each JSON answer: `path` with its query, the parsed body, this server's origin. */
  edit: (path: string, body: Json, origin: string) => void;
  /** Bytes for a path under /files/, or undefined for a 404. */
  files: (path: string) => Buffer | undefined;
}

let upstream: ReadApiServer;
let http: Server;
const hostile: Hostile = { origin: '', edit: () => {}, files: () => undefined };

beforeAll(async () => {
  upstream = await startServer({ paths: [fixture('tiny.json')], watch: false, warn: () => {} });
  http = createServer(async (request, response) => {
    const url = request.url ?? '/';
    if (url.startsWith('/files/')) {
      const bytes = hostile.files(url);
      response.writeHead(bytes ? 200 : 404).end(bytes);
      return;
    }
    try {
      const answer = await fetch(`${upstream.origin}${url}`, {
        headers: { authorization: String(request.headers.authorization) },
      });
      const body = (await answer.json()) as Json;
      if (answer.ok) hostile.edit(url, body, hostile.origin);
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } catch (error) {
      response.writeHead(418).end(String(error)); // a mistake of the test's own edit: seen at once, not as a timeout
    }
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  hostile.origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await upstream.close();
  await new Promise((resolve) => http.close(resolve));
});

const config = (extra: object = {}) => ({
  baseUrl: `${hostile.origin}/v1`,
  repository: 'tiny',
  apiKey: tinyKey,
  collections: { news: {} },
  aliases: [],
  ...extra,
});

/** Every asset record in an answer, embedded or not. */
function assetsIn(value: unknown, found: Json[] = []): Json[] {
  if (Array.isArray(value))
    value.forEach((item) => {
      assetsIn(item, found);
    });
  else if (typeof value === 'object' && value !== null) {
    const record = value as Json;
    if (record.meta?.contentType === '_asset' && record.fields) found.push(record);
    Object.values(record).forEach((item) => {
      assetsIn(item, found);
    });
  }
  return found;
}

/** Asset 300's file at `url` (301 keeps its own), `size` as its asset says. */
const assetAt =
  (url: (origin: string) => string, size = 5) =>
  (_path: string, body: Json, origin: string) => {
    for (const asset of assetsIn(body))
      if (asset.meta!.id === '300')
        asset.fields!.file = { url: url(origin), fileName: 'x', mimeType: 'text/plain', size };
  };

describe('pull --assets: the server names the paths, and is not trusted with them', () => {
  it.each([
    ['the snapshot itself', '/files/tiny/tiny.json', 'tiny.json'],
    ['another snapshot beside it', '/files/tiny/other.json', 'other.json'],
    ['a dotfile', '/files/tiny/.env', '.env'],
    ['a file in a dot folder', '/files/tiny/.git/hooks/pre-commit', '.git/hooks/pre-commit'],
    ['a user file the previous copy had no asset at', '/files/tiny/notes.txt', 'notes.txt'],
    ['a name longer than a file system takes', `/files/tiny/${'n'.repeat(240)}.png`, undefined],
  ])(
    '%s: nothing is written there, the asset keeps its remote URL, with a warning',
    async (_what, path, local) => {
      const project = projectWith(config());
      const content = join(project, 'content');
      mkdirSync(content);
      for (const name of ['other.json', 'notes.txt', '.env']) writeFileSync(join(content, name), 'mine');
      hostile.edit = assetAt((origin) => `${origin}${path}`);
      hostile.files = () => Buffer.from('EVIL!');
      for (const round of [1, 2]) {
        const run = await runIn(project, ['pull', '--assets']);
        expect(run.code, `round ${round}: ${run.stderr}`).toBe(0);
        expect(run.stderr).toMatch(/warning: Asset 300: its file was not downloaded/);
        const snapshot = JSON.parse(readFileSync(join(content, 'tiny.json'), 'utf8'));
        expect(snapshot.assets.find((a: Json) => a.meta!.id === '300').fields.file.url).toBe(
          `${hostile.origin}${path}`,
        );
        for (const name of ['other.json', 'notes.txt', '.env'])
          expect(readFileSync(join(content, name), 'utf8')).toBe('mine');
        if (local)
          expect(existsSync(join(content, local)) && readFileSync(join(content, local), 'utf8')).not.toBe('EVIL!');
      }
      expect(readdirSync(content).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    },
    60_000,
  );

  it("a relative URL is the server's: resolved against it, never taken for a file of the copy, never removed", async () => {
    const project = projectWith(config());
    const user = join(project, 'content', 'src', 'pages');
    mkdirSync(user, { recursive: true });
    writeFileSync(join(user, 'index.astro'), 'mine');
    hostile.edit = assetAt(() => 'src/pages/index.astro');
    hostile.files = () => undefined;
    const first = await runIn(project, ['pull', '--assets']);
    expect(first.code, first.stderr).toBe(0);
    const snapshot = JSON.parse(readFileSync(join(project, 'content', 'tiny.json'), 'utf8'));
    expect(snapshot.assets.find((a: Json) => a.meta!.id === '300').fields.file.url).toBe(
      `${hostile.origin}/v1/src/pages/index.astro`,
    );
    hostile.edit = (path, body) => {
      if (path.includes('/documents'))
        for (const document of (body.data as Json[] | undefined) ?? [body]) delete document.fields?.images; // asset 300 is referenced no more
    };
    const second = await runIn(project, ['pull', '--assets']);
    expect(second.code, second.stderr).toBe(0);
    expect(readFileSync(join(user, 'index.astro'), 'utf8')).toBe('mine');
  }, 60_000);

  it('a file larger or smaller than its asset says is not kept', async () => {
    const project = projectWith(config());
    for (const [size, why] of [
      [3, /larger than the 3 bytes its asset says/],
      [50, /has 5 bytes where its asset says 50/],
    ] as const) {
      hostile.edit = assetAt((origin) => `${origin}/files/tiny/images/a.txt`, size);
      hostile.files = () => Buffer.from('12345');
      const run = await runIn(project, ['pull', '--assets']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(why);
      expect(existsSync(join(project, 'content', 'images', 'a.txt'))).toBe(false);
    }
  }, 60_000);
});

describe('pull: what the server answers cannot lose documents or show the key', () => {
  it('a list that changes while it is paged fails the pull, naming why; nothing is written', async () => {
    for (const edit of [
      (path: string, body: Json) =>
        path.includes('offset=2') && ((body.meta as unknown as { total: number }).total += 1),
      (path: string, body: Json) =>
        path.includes('offset=2') && (body.data as Json[]).unshift((body.data as Json[])[0]!),
    ]) {
      hostile.edit = (path, body) => path.includes('/documents?') && edit(path, body);
      const project = projectWith(config({ pageSize: 2 }));
      const run = await runIn(project, ['pull']);
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("The repository's documents changed while they were listed");
      expect(existsSync(join(project, 'content', 'tiny.json'))).toBe(false);
    }
  }, 60_000);

  it('a key sent back in a field name, an asset field and a file URL is never printed', async () => {
    hostile.edit = (path, body) => {
      for (const [i, document] of ((body.data as Json[] | undefined) ?? []).entries())
        if (document.fields) document.fields[tinyKey] = i % 2 ? 'text' : 1;
      for (const asset of assetsIn(body)) asset.fields![tinyKey] = 'x';
      assetAt((origin) => `${origin}/files/tiny/a.png?key=${tinyKey}`)(path, body, hostile.origin);
    };
    hostile.files = () => undefined;
    for (const args of [
      ['pull', '--assets'],
      ['pull', '--assets', '--json'],
    ]) {
      const run = await runIn(projectWith(config()), args);
      expect(run.code).toBe(1); // the snapshot would hold the key: not written
      expect(run.stderr).toContain('warning: ');
      expect(run.stdout + run.stderr).not.toContain(tinyKey);
    }
  }, 60_000);
});
