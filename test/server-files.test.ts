import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import {
  fixture,
  getJson,
  rawGet,
  snapshotFolder,
  startTiny,
  tinyKey,
  tinySnapshot as tiny,
} from './helpers/server.ts';

/**
 * Spec §10, asset files: `/files/<repo>/<path>` serves a file only when an asset of that
 * repository points to it, its real path (symlinks resolved) lies inside the snapshot's folder,
 * and it is no snapshot file the server loads. A key must never be downloadable.
 */

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'read-api-files-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
/** Numbers the other folders and files these tests make under the scratch folder. */
let folders = 0;

describe('§10 a relative asset URL is answered as an absolute URL under /files/<repo>/', () => {
  let server: ReadApiServer;
  beforeAll(async () => {
    server = await startTiny();
  });
  afterAll(() => server.close());

  it('on the asset route', async () => {
    const { body } = await getJson(server, '/tiny/assets/300');
    expect(body.fields.file).toEqual({
      url: `${server.origin}/files/tiny/images/apples.svg`,
      fileName: 'apples.svg',
      mimeType: 'image/svg+xml',
      size: 114,
      width: 100,
      height: 80,
    });
  });

  it('in embedded assets, in includes and with locale=all', async () => {
    const url = `${server.origin}/files/tiny/images/apples.svg`;
    expect((await getJson(server, '/tiny/documents/100?embedAssets=true')).body.fields.images[0].fields.file.url).toBe(
      url,
    );
    expect((await getJson(server, '/tiny/documents/100?includes=1')).body.includes.images[0].fields.file.url).toBe(url);
    expect((await getJson(server, '/tiny/assets/300?locale=all')).body.fields.file.url).toBe(url);
  });

  it('leaves an absolute URL as it is', async () => {
    expect((await getJson(server, '/tiny/assets/301')).body.fields.file.url).toBe('https://images.example.com/ada.png');
  });

  it('serves the file at that URL with its content type, without a key', async () => {
    const response = await fetch(`${server.origin}/files/tiny/images/apples.svg`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/svg+xml');
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(Buffer.from(await response.arrayBuffer())).toEqual(readFileSync(fixture('images/apples.svg')));
  });

  it('answers HEAD on the file with its length and no body', async () => {
    const response = await fetch(`${server.origin}/files/tiny/images/apples.svg`, { method: 'HEAD' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe(String(readFileSync(fixture('images/apples.svg')).length));
    expect(await response.text()).toBe('');
  });

  it('gives the file an ETag and answers 304 to a request that has it, so a client that keeps the file does not download it again', async () => {
    const url = `${server.origin}/files/tiny/images/apples.svg`;
    const first = await fetch(url);
    const etag = first.headers.get('etag');
    await first.arrayBuffer();
    expect(etag).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
    for (const header of [etag!, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await fetch(url, { headers: { 'if-none-match': header } });
      expect(again.status, header).toBe(304);
      expect(again.headers.get('etag')).toBe(etag);
      expect(await again.text()).toBe('');
    }
    const changed = await fetch(url, { headers: { 'if-none-match': '"other"' } });
    expect(changed.status).toBe(200);
    expect(Buffer.from(await changed.arrayBuffer())).toEqual(readFileSync(fixture('images/apples.svg')));
  });

  it('encodes a file name with spaces, and serves it under the encoded URL', async () => {
    const snapshot = tiny();
    snapshot.assets[0].fields.file.url = './images/green apples.svg';
    const file = snapshotFolder(scratch, snapshot);
    renameSync(join(file, '..', 'images', 'apples.svg'), join(file, '..', 'images', 'green apples.svg'));
    const other = await startServer({ paths: [file], watch: false });
    try {
      const url = (await getJson(other, '/tiny/assets/300')).body.fields.file.url;
      expect(url).toBe(`${other.origin}/files/tiny/images/green%20apples.svg`);
      const response = await fetch(url);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/svg+xml');
    } finally {
      await other.close();
    }
  });
});

describe('§10 an image in richtext whose relative src an asset points to is answered absolute too', () => {
  it('in one locale and with locale=all; other images are left as they are', async () => {
    const snapshot = tiny();
    const news = snapshot.documents.find((d: any) => d.meta.id === '100');
    news.fields.text.en_US.html =
      '<p><img src="images/apples.svg" alt="a"><img src="./images/apples.svg" alt="b"><img src="images/other.svg" alt="c"><img src="https://x.example/y.png" alt="d"></p>';
    const server = await startServer({ paths: [snapshotFolder(scratch, snapshot)], watch: false });
    try {
      const url = `${server.origin}/files/tiny/images/apples.svg`;
      const expected = `<p><img src="${url}" alt="a"><img src="${url}" alt="b"><img src="images/other.svg" alt="c"><img src="https://x.example/y.png" alt="d"></p>`;
      expect((await getJson(server, '/tiny/documents/100?locale=en_US')).body.fields.text.html).toBe(expected);
      expect((await getJson(server, '/tiny/documents/100?locale=all')).body.fields.text.en_US.html).toBe(expected);
      // plain stays as it was
      expect((await getJson(server, '/tiny/documents/100?locale=en_US')).body.fields.text.plain).toBe(
        news.fields.text.en_US.plain,
      );
    } finally {
      await server.close();
    }
  });
});

describe('§10 only asset files are served: anything else under /files is 404', () => {
  let server: ReadApiServer;
  beforeAll(async () => {
    server = await startTiny();
  });
  afterAll(() => server.close());

  const paths = [
    '/files/tiny/../tiny.json',
    '/files/tiny/%2e%2e/tiny.json',
    '/files/tiny/%2E%2E%2Ftiny.json',
    '/files/tiny/images/../../fixtures/tiny.json',
    '/files/tiny/images/%2e%2e/%2e%2e/helpers/server.ts',
    '/files/tiny/..%5Ctiny.json',
    '/files/tiny/%2Fetc%2Fpasswd',
    '/files/tiny//etc/passwd',
    // The snapshot sits in the folder it serves files from, and holds the API keys.
    '/files/tiny/tiny.json',
    '/files/tiny/images/../tiny.json',
    '/files/tiny/images/%2e%2e/tiny.json',
    '/files/tiny/images/missing.svg',
    '/files/nowhere/images/apples.svg',
  ];
  for (const path of paths) {
    it(`GET ${path}`, async () => {
      const answer = await rawGet(server, path);
      expect(answer.status).toBe(404);
      expect(answer.body).not.toContain(tinyKey);
      expect(JSON.parse(answer.body).error.code).toBe('not_found');
    });
  }

  it('serves no files for a snapshot given as an object, which has no folder', async () => {
    const other = await startServer({ snapshots: [tiny()], watch: false });
    try {
      expect((await rawGet(other, '/files/tiny/images/apples.svg')).status).toBe(404);
    } finally {
      await other.close();
    }
  });
});
describe('§10 an asset pointing at a snapshot, or through a symlink, does not serve it', () => {
  /**
   * A folder holding two snapshots, `a.json` (repository a) and `b.json` (repository b, with
   * its own key), as an attacker who can edit one repository's asset URLs would set it up.
   */
  function twoSnapshots(urls: string[]): { dir: string; keys: string[] } {
    const dir = join(scratch, `pair-${++folders}`);
    mkdirSync(join(dir, 'images'), { recursive: true });
    writeFileSync(join(dir, 'images', 'apples.svg'), readFileSync(fixture('images/apples.svg')));
    const keys = ['key-of-a-0123456789', 'key-of-b-0123456789'];
    ['a', 'b'].forEach((name, i) => {
      const snapshot = tiny();
      snapshot.repository.apiId = name;
      snapshot.repository.id = `90000000000000000${i}`;
      snapshot.repository.apiKeys = [keys[i]];
      if (name === 'a') {
        // One asset per URL to try, each a copy of the first.
        snapshot.assets = urls.map((url, n) => ({
          ...snapshot.assets[0],
          fields: { ...snapshot.assets[0].fields, file: { ...snapshot.assets[0].fields.file, url } },
          meta: { ...snapshot.assets[0].meta, id: String(300 + n) },
        }));
      }
      writeFileSync(join(dir, `${name}.json`), JSON.stringify(snapshot));
    });
    return { dir, keys };
  }

  const refused = async (server: ReadApiServer, path: string, keys: string[]) => {
    const answer = await rawGet(server, path);
    for (const key of keys) expect(answer.body, path).not.toContain(key);
    expect(answer.status, path).toBe(404);
    expect(JSON.parse(answer.body).error.code).toBe('not_found');
  };

  const urls = ['b.json', 'a.json', './b.json', 'images/../b.json', 'images/../a.json'];
  for (const form of ['a folder', 'two files'] as const) {
    it(`does not serve another repository's snapshot, nor its own, that an asset points to (served as ${form})`, async () => {
      const { dir, keys } = twoSnapshots(urls);
      const server = await startServer({
        paths: form === 'a folder' ? [dir] : [join(dir, 'a.json'), join(dir, 'b.json')],
        watch: false,
      });
      try {
        const served = (await getJson(server, '/a/assets/300', {}, keys[0])).body.fields.file.url;
        expect(served).toBe(`${server.origin}/files/a/b.json`);
        for (const path of [
          '/files/a/b.json',
          '/files/a/a.json',
          '/files/a/./b.json',
          '/files/a/images/../b.json',
          '/files/a/images/%2e%2e/a.json',
        ]) {
          await refused(server, path, keys);
        }
      } finally {
        await server.close();
      }
    });
  }

  it('does not serve a snapshot or a file outside the folder through a symlink an asset points to', async () => {
    const outside = join(scratch, `outside-${++folders}.txt`);
    writeFileSync(outside, 'a secret outside the snapshot folder');
    const { dir, keys } = twoSnapshots(['images/x.png', 'images/y.png', 'linked/z.png', 'images/apples.svg']);
    symlinkSync('../a.json', join(dir, 'images', 'x.png'));
    symlinkSync(outside, join(dir, 'images', 'y.png'));
    mkdirSync(join(scratch, `linked-${folders}`));
    writeFileSync(join(scratch, `linked-${folders}`, 'z.png'), 'outside, through a linked folder');
    symlinkSync(join(scratch, `linked-${folders}`), join(dir, 'linked'));
    const server = await startServer({ paths: [dir], watch: false });
    try {
      for (const path of ['/files/a/images/x.png', '/files/a/images/y.png', '/files/a/linked/z.png']) {
        const answer = await rawGet(server, path);
        expect(answer.body, path).not.toContain('secret');
        expect(answer.body, path).not.toContain('outside');
        await refused(server, path, keys);
      }
      expect((await rawGet(server, '/files/a/images/apples.svg')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('serves a symlink whose real path is an ordinary file inside the folder', async () => {
    const { dir, keys } = twoSnapshots(['images/alias.svg']);
    symlinkSync('apples.svg', join(dir, 'images', 'alias.svg'));
    const server = await startServer({ paths: [dir], watch: false });
    try {
      const answer = await rawGet(server, '/files/a/images/alias.svg');
      expect(answer.status).toBe(200);
      expect(answer.body).toBe(readFileSync(fixture('images/apples.svg'), 'utf8'));
      expect(answer.headers['content-type']).toBe('image/svg+xml');
      for (const key of keys) expect(answer.body).not.toContain(key);
    } finally {
      await server.close();
    }
  });
});
