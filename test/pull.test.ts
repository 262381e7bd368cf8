import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, readSnapshotFile, startServer } from '../src/server/index.ts';
import { closeFaultyServers, startFaulty } from './helpers/client-faults.ts';
import { demoCopy, projectWith, runIn } from './helpers/pull.ts';
import { demoKey } from './helpers/server.ts';

/**
 * `comfortable-loader pull` against the real local server over HTTP: what it writes, that a
 * second pull rewrites nothing and an edit changes only its document, files with --assets, and
 * every bad input a clear error with the previous snapshot intact and the real key nowhere.
 */

let server: ReadApiServer;
let source: string;
const demo = () => JSON.parse(readFileSync(source, 'utf8'));
const configFor = (baseUrl: string, extra: object = {}) => ({
  baseUrl,
  repository: 'demo',
  apiKey: demoKey,
  collections: { posts: {}, authors: {}, longReads: {} },
  aliases: ['about', 'home'],
  ...extra,
});

beforeAll(async () => {
  source = demoCopy();
  server = await startServer({ paths: [source], watch: false });
});
afterAll(() => server.close());
afterEach(() => closeFaultyServers());

describe('pull', () => {
  it('writes a snapshot that serve loads, with a local key and the collections as member lists', async () => {
    const project = projectWith(configFor(server.url));
    const run = await runIn(project, ['pull']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const file = join(project, 'content', 'demo.json');
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(demoKey);
    expect(run.stdout).not.toContain(demoKey);
    const snapshot = await readSnapshotFile(file);
    const [key] = snapshot.repository.apiKeys;
    expect(key).toMatch(/^local-/);
    expect(run.stdout.split(key!).length - 1).toBe(1); // printed once
    const original = demo();
    expect(snapshot.documents.map((d) => d.meta.id)).toEqual(original.documents.map((d: any) => d.meta.id).sort());
    expect(snapshot.assets.map((a) => a.meta.id).sort()).toEqual(original.assets.map((a: any) => a.meta.id).sort());
    expect(snapshot.contentTypes.find((t) => t.apiId === 'post')!.fields).toEqual(
      original.contentTypes.find((t: any) => t.apiId === 'post').fields,
    );
    expect(snapshot.aliases).toEqual([
      { apiId: 'about', document: '100000000000000402' },
      { apiId: 'home', document: '100000000000000401' },
    ]);
    const longReads = await fetch(`${server.url}/demo/collections/longReads?limit=100&fields=meta(id)`, {
      headers: { authorization: demoKey },
    }).then((r) => r.json() as Promise<any>);
    expect(snapshot.collections.find((c) => c.apiId === 'longReads')!.members).toEqual(
      longReads.data.map((d: any) => d.meta.id),
    );
    expect(snapshot.repository.locales).toEqual(original.repository.locales);
  });

  it('rewrites nothing when nothing changed, and only the edited document after one edit', async () => {
    const project = projectWith(configFor(server.url));
    expect((await runIn(project, ['pull'])).code).toBe(0);
    const file = join(project, 'content', 'demo.json');
    const before = readFileSync(file, 'utf8');
    const stamp = statSync(file).mtimeMs;
    const again = await runIn(project, ['pull']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Unchanged');
    expect(statSync(file).mtimeMs).toBe(stamp);

    const edited = demo();
    const post = edited.documents.find((d: any) => d.meta.id === '100000000000000111');
    post.fields.title.de_DE = 'Ein neuer Titel';
    post.meta.revision += 1;
    await server.replaceSnapshot(edited);
    try {
      expect((await runIn(project, ['pull'])).code).toBe(0);
      const after = readFileSync(file, 'utf8');
      const [a, b] = [before.split('\n'), after.split('\n')];
      expect(b.length).toBe(a.length);
      const changed = a.map((line, i) => (line === b[i] ? -1 : i)).filter((i) => i >= 0);
      expect(changed.map((i) => b[i]!.trim())).toEqual([
        '"de_DE": "Ein neuer Titel",',
        `"revision": ${post.meta.revision},`,
      ]);
      // Both lines lie within the edited document's entry: no other record's id between them and its own.
      // A record's own id stands at the indentation of documents[i].meta.id; references stand deeper.
      const idLine = b.indexOf('        "id": "100000000000000111",');
      const [first, last] = [Math.min(changed[0]!, idLine), Math.max(changed.at(-1)!, idLine)];
      expect(b.slice(first, last + 1).filter((line) => /^ {8}"id": "\d+",$/.test(line))).toEqual([b[idLine]]);
    } finally {
      await server.replaceSnapshot(JSON.parse(readFileSync(source, 'utf8')));
    }
  });

  it('downloads files with --assets, serves them from the copy, and downloads only what changed', async () => {
    const project = projectWith(configFor(server.url));
    const first = await runIn(project, ['pull', '--assets', '--json']);
    expect(first.code).toBe(0);
    const summary = JSON.parse(first.stdout);
    expect(summary.files).toEqual({ downloaded: 11, kept: 0, failed: 0 });
    const file = join(project, 'content', 'demo.json');
    const pulled = await readSnapshotFile(file);
    const fjord = pulled.assets.find((a) => a.meta.id === '100000000000000501')!;
    expect((fjord.fields.file as { url: string }).url).toBe('images/fjord-dawn.svg');
    const copy = await startServer({ paths: [file], watch: false });
    try {
      const served = await fetch(`${copy.origin}/files/demo/images/fjord-dawn.svg`);
      expect(Buffer.from(await served.arrayBuffer())).toEqual(
        readFileSync(join(dirname(source), 'images', 'fjord-dawn.svg')),
      );
    } finally {
      await copy.close();
    }
    const second = await runIn(project, ['pull', '--assets', '--json']);
    expect(JSON.parse(second.stdout).files).toEqual({ downloaded: 0, kept: 11, failed: 0 });
    expect(JSON.parse(second.stdout).written).toBe(false);
  });

  it('downloads again only the file of a changed asset, and removes the file of an asset gone', async () => {
    const project = projectWith(configFor(server.url));
    expect((await runIn(project, ['pull', '--assets'])).code).toBe(0);
    const image = join(dirname(source), 'images', 'fjord-dawn.svg');
    const original = readFileSync(image);
    const changed = Buffer.from(original.toString().replace('</svg>', '<!-- new --></svg>'));
    const edited = demo();
    const asset = edited.assets.find((a: any) => a.meta.id === '100000000000000501');
    asset.meta.revision += 1;
    asset.fields.file.size = changed.length;
    writeFileSync(image, changed);
    try {
      await server.replaceSnapshot(edited);
      const second = await runIn(project, ['pull', '--assets', '--json']);
      expect(JSON.parse(second.stdout).files).toEqual({ downloaded: 1, kept: 10, failed: 0 });
      expect(readFileSync(join(project, 'content', 'images', 'fjord-dawn.svg'))).toEqual(changed);

      // No document references the asset any more: it leaves the copy, and so does its file.
      const drop = (value: any): any =>
        Array.isArray(value)
          ? value.filter((v) => v?.meta?.id !== asset.meta.id).map(drop)
          : value && typeof value === 'object'
            ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, drop(v)]))
            : value;
      edited.documents = edited.documents.map((d: any) => ({ ...d, fields: drop(d.fields) }));
      edited.assets = edited.assets.filter((a: any) => a !== asset);
      await server.replaceSnapshot(edited);
      const third = await runIn(project, ['pull', '--assets', '--json']);
      expect(JSON.parse(third.stdout).files).toEqual({ downloaded: 0, kept: 10, failed: 0 });
      expect(existsSync(join(project, 'content', 'images', 'fjord-dawn.svg'))).toBe(false);
      expect(existsSync(join(project, 'content', 'images', 'alpine-lake.svg'))).toBe(true);
    } finally {
      writeFileSync(image, original);
      await server.replaceSnapshot(JSON.parse(readFileSync(source, 'utf8')));
    }
  });

  it('keeps one file for two assets with one URL: the second keeps its remote URL, and the file stays', async () => {
    const edited = demo();
    const [first, second] = edited.assets;
    second.fields.file = { ...first.fields.file };
    await server.replaceSnapshot(edited);
    try {
      const project = projectWith(configFor(server.url));
      const run = await runIn(project, ['pull', '--assets']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(
        `warning: Asset ${second.meta.id}: its file was not downloaded (another asset's file has the path ${first.fields.file.url})`,
      );
      const again = await runIn(project, ['pull', '--assets']);
      expect(again.code, again.stderr).toBe(0);
      const pulled = await readSnapshotFile(join(project, 'content', 'demo.json'));
      expect((pulled.assets.find((a) => a.meta.id === first.meta.id)!.fields.file as { url: string }).url).toBe(
        first.fields.file.url,
      );
      expect((pulled.assets.find((a) => a.meta.id === second.meta.id)!.fields.file as { url: string }).url).toMatch(
        /^http:/,
      );
      expect(existsSync(join(project, 'content', ...first.fields.file.url.split('/')))).toBe(true);
    } finally {
      await server.replaceSnapshot(JSON.parse(readFileSync(source, 'utf8')));
    }
  });

  it('keeps the remote URL of a file that cannot be downloaded, with a warning naming the asset', async () => {
    const copyOfSource = demoCopy();
    rmSync(join(dirname(copyOfSource), 'images', 'fjord-dawn.svg'));
    const broken = await startServer({ paths: [copyOfSource], watch: false });
    try {
      const project = projectWith(configFor(broken.url));
      const run = await runIn(project, ['pull', '--assets']);
      expect(run.code).toBe(0);
      expect(run.stderr).toMatch(
        /warning: Asset 100000000000000501: its file was not downloaded \(.*404.*\); the snapshot keeps its remote URL/,
      );
      const pulled = await readSnapshotFile(join(project, 'content', 'demo.json'));
      const fjord = pulled.assets.find((a) => a.meta.id === '100000000000000501')!;
      expect((fjord.fields.file as { url: string }).url).toBe(`${broken.origin}/files/demo/images/fjord-dawn.svg`);
      expect(existsSync(join(project, 'content', 'images', 'alpine-lake.svg'))).toBe(true);
    } finally {
      await broken.close();
    }
  });
});

describe('pull of ids of several lengths', () => {
  it('writes documents and assets sorted by id as numbers (99, 100, 1000), as docs/pull.md says', async () => {
    const at = '2024-01-01T00:00:00.000Z';
    const meta = (id: string, contentType: string) => ({
      id,
      contentType,
      revision: 1,
      tags: [],
      createdAt: at,
      updatedAt: at,
    });
    const asset = (id: string) => ({
      fields: {
        title: { en_US: `Image ${id}` },
        file: {
          url: `https://example.org/${id}.png`,
          fileName: `${id}.png`,
          mimeType: 'image/png',
          size: 1,
          width: 1,
          height: 1,
        },
      },
      meta: meta(id, '_asset'),
    });
    const ids = ['1000', '99', '100', '9'];
    const numbers = await startServer({
      watch: false,
      snapshots: [
        {
          repository: {
            id: '5',
            apiId: 'numbers',
            name: 'Numbers',
            defaultLocale: 'en_US',
            locales: [{ key: 'en_US' }],
            apiKeys: ['numbers-key'],
          },
          contentTypes: [
            {
              apiId: 'note',
              fields: [
                { apiId: 'title', type: 'text' },
                { apiId: 'image', type: 'asset' },
              ],
            },
          ],
          documents: ids.map((id, i) => ({
            fields: {
              title: `Note ${id}`,
              image: [{ meta: { id: ['70', '8', '700', '8'][i]!, contentType: '_asset' } }],
            },
            meta: meta(id, 'note'),
          })),
          assets: ['700', '8', '70'].map(asset),
          collections: [{ apiId: 'notes', contentType: 'note' }],
          aliases: [],
        },
      ],
    });
    try {
      const project = projectWith({
        baseUrl: numbers.url,
        repository: 'numbers',
        apiKey: 'numbers-key',
        collections: { notes: {} },
      });
      const run = await runIn(project, ['pull']);
      expect(run.code, run.stderr).toBe(0);
      const snapshot = await readSnapshotFile(join(project, 'content', 'numbers.json'));
      expect(snapshot.documents.map((d) => d.meta.id)).toEqual(['9', '99', '100', '1000']);
      expect(snapshot.assets.map((a) => a.meta.id)).toEqual(['8', '70', '700']);
    } finally {
      await numbers.close();
    }
  });
});

describe('pull from a server that lists no locales', () => {
  it('takes the locale keys seen in the data, with a warning, and the id from the documents', async () => {
    const bare = await startFaulty(async (request, response) => {
      const answer = await fetch(`${server.origin}${request.url}`, {
        headers: { authorization: String(request.headers.authorization) },
      });
      let body = Buffer.from(await answer.arrayBuffer());
      if (new URL(request.url!, 'http://x').pathname === '/v1/demo') {
        const repository = JSON.parse(body.toString());
        delete repository.meta.locales;
        delete repository.meta.defaultLocale;
        delete repository.meta.id;
        body = Buffer.from(JSON.stringify(repository));
      }
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(body);
    });
    const project = projectWith(configFor(bare.url));
    const run = await runIn(project, ['pull']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(
      /warning: The server did not list the repository's locales; the snapshot has the locale keys seen in the data \(en_US, de_DE, de_CH\), default en_US, without fallbacks/,
    );
    const pulled = await readSnapshotFile(join(project, 'content', 'demo.json'));
    expect(pulled.repository.locales).toEqual([{ key: 'en_US' }, { key: 'de_DE' }, { key: 'de_CH' }]);
    expect(pulled.repository.id).toBe(demo().repository.id);
    expect(pulled.contentTypes.find((t) => t.apiId === 'post')!.fields.find((f) => f.apiId === 'title')).toEqual({
      apiId: 'title',
      type: 'text',
      localized: true,
    });
  });
});

describe('pull of a collection whose order depends on the locale', () => {
  it("keeps the default locale's list and warns about the others", async () => {
    const edited = demo();
    edited.collections.push({ apiId: 'byTitle', contentType: 'post', sorting: { 'fields.title': 'ASC' } });
    await server.replaceSnapshot(edited);
    try {
      const project = projectWith(configFor(server.url, { collections: { byTitle: {} } }));
      const run = await runIn(project, ['pull']);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toMatch(
        /warning: Collection byTitle lists other documents, or another order, in de_DE, de_CH \(its stored filters or sorting read localized values\): the snapshot keeps the default locale's list/,
      );
      const pulled = await readSnapshotFile(join(project, 'content', 'demo.json'));
      const english = await fetch(`${server.url}/demo/collections/byTitle?limit=100&fields=meta(id)`, {
        headers: { authorization: demoKey },
      }).then((r) => r.json() as Promise<any>);
      expect(pulled.collections).toEqual([{ apiId: 'byTitle', members: english.data.map((d: any) => d.meta.id) }]);
    } finally {
      await server.replaceSnapshot(JSON.parse(readFileSync(source, 'utf8')));
    }
  });
});

describe('pull: bad input fails clearly and leaves the previous snapshot as it was', () => {
  let project: string;
  let previous: string;
  const file = () => join(project, 'content', 'demo.json');
  beforeAll(async () => {
    project = projectWith(configFor(server.url));
    expect((await runIn(project, ['pull'])).code).toBe(0);
    previous = readFileSync(file(), 'utf8');
  });
  const failing = async (config: object, args: string[] = []) => {
    writeFileSync(join(project, 'comfortable.config.json'), JSON.stringify(config));
    const run = await runIn(project, ['pull', ...args]);
    expect(readFileSync(file(), 'utf8')).toBe(previous);
    expect(run.stdout + run.stderr).not.toContain(demoKey);
    return run;
  };

  it('a refused key', async () => {
    const run = await failing(configFor(server.url, { apiKey: 'not-the-key' }));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('The server refused the API key for repository "demo"');
    expect(run.stderr).toContain('the previous snapshot, if any, is as it was');
  });

  it('an unknown repository', async () => {
    const run = await failing(configFor(server.url, { repository: 'nope' }));
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('The server has no repository "nope"');
  });

  it('a collection or an alias that does not exist', async () => {
    const collection = await failing(configFor(server.url, { collections: { posts: {}, postz: {} } }));
    expect(collection.code).toBe(1);
    expect(collection.stderr).toContain('The repository has no collection "postz"');
    const alias = await failing(configFor(server.url, { aliases: ['abuot'] }));
    expect(alias.code).toBe(1);
    expect(alias.stderr).toContain('The repository has no alias "abuot"');
  });

  it('a server that fails halfway', async () => {
    let pages = 0;
    const flaky = await startFaulty(async (request, response) => {
      const url = new URL(request.url!, 'http://x');
      if (url.pathname.endsWith('/documents') && ++pages > 1) {
        response.writeHead(500, { 'content-type': 'application/json' }).end('{"status":500,"message":"down"}');
        return;
      }
      const answer = await fetch(`${server.origin}${request.url}`, {
        headers: { authorization: String(request.headers.authorization) },
      });
      response
        .writeHead(answer.status, { 'content-type': 'application/json' })
        .end(Buffer.from(await answer.arrayBuffer()));
    });
    const run = await failing(configFor(flaky.url, { pageSize: 10 }));
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Error: .*500.*Nothing was written/s);
  }, 60_000);

  it('an --out that cannot be written', async () => {
    writeFileSync(join(project, 'a-file'), 'not a folder');
    writeFileSync(join(project, 'comfortable.config.json'), JSON.stringify(configFor(server.url)));
    const run = await runIn(project, ['pull', '--out', 'a-file/content']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Could not write the snapshot');
    expect(run.stderr).toContain('--out');
  });

  it("bad usage and a bad config are exit 2; --help after a command is that command's usage, exit 0", async () => {
    expect((await runIn(project, ['pull', '--bogus'])).code).toBe(2);
    for (const [command, flag] of [
      ['pull', '--help'],
      ['types', '-h'],
      ['serve', '--help'],
      ['sync', '--help'],
    ] as const) {
      const help = await runIn(project, [command, flag]);
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`comfortable-loader ${command} `);
      const others = ['pull', 'types', 'serve', 'sync'].filter((other) => other !== command);
      for (const other of others) expect(help.stdout).not.toContain(`comfortable-loader ${other} `);
      expect(help.stderr).toBe('');
    }
    const run = await failing({ baseUrl: server.url, apiKey: demoKey, collections: { posts: {} } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('repository');
  });
});

describe('pull: the real key is never written', () => {
  it('even when the previous snapshot was given the real key by hand', async () => {
    const project = projectWith(configFor(server.url));
    mkdirSync(join(project, 'content'));
    const planted = demo();
    writeFileSync(join(project, 'content', 'demo.json'), JSON.stringify(planted));
    const run = await runIn(project, ['pull']);
    expect(run.code).toBe(0);
    const text = readFileSync(join(project, 'content', 'demo.json'), 'utf8');
    expect(text).not.toContain(demoKey);
    expect(run.stdout).toMatch(/local API key \(not your real one\): local-/);
  });
});
