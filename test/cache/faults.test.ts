import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { generateSnapshot } from '../helpers/generate-snapshot.ts';
import { openCache } from '../../src/cache/index.ts';
import { DatabaseSync } from '../../src/cache/sqlite.ts';
import { sync } from '../../src/sync/engine.ts';
import { entriesOf } from '../../src/entries/entries.ts';
import { SharedSync } from '../../src/sync/shared.ts';
import { tryRun } from '../helpers/cache-processes.ts';
import { syncProcess } from '../helpers/cli.ts';
import { skipBecause } from '../helpers/skip.ts';
import {
  cacheContent,
  configFor,
  docOf,
  key,
  recorder,
  recordsOf,
  serve,
  startProxy,
  tempDir,
  touch,
} from '../helpers/magazine.ts';

/**
 * Faults of the cache, as they happen to users: a sync killed at any point, a damaged database
 * file, a record that does not parse, a read-only folder, a full
 * disk, and many syncs started at once. Every one ends with the old content or the new (never a
 * mix, never a damaged record served) and with a message that says what happened. Syncs that
 * are killed or run side by side run in processes of their own.
 */

const file = (dir: string) => join(dir, 'cache.sqlite');

/** A synced cache and the server, with the snapshot edited (title of 1001, 1003 removed) and published: the next sync has work to do. */
async function syncedThenEdited() {
  const served = await serve();
  const proxy = await startProxy(served.server);
  const dir = await tempDir();
  await sync(configFor(proxy.url, dir), recorder());
  const before = cacheContent(dir);
  (docOf(served.snapshot, '1001').fields.title as Record<string, string>).en_US = 'Pear harvest';
  touch(docOf(served.snapshot, '1001'));
  served.snapshot.documents = served.snapshot.documents.filter((d) => d.meta.id !== '1003');
  await served.publish();
  const after = contentOf(await freshCacheOf(served.server.url));
  return { served, proxy, dir, before, after };
}

/** The folder of a fresh sync of what the server serves now: the content a complete sync must end with. */
async function freshCacheOf(url: string): Promise<string> {
  const dir = await tempDir();
  await sync(configFor(url, dir), recorder());
  return dir;
}

/** What a cache holds that does not depend on when it was synced. */
function contentOf(dir: string) {
  const { record, body, reference, member, included, dangling } = cacheContent(dir);
  return { record, body, reference, member, included, dangling };
}

/** A process that opens the cache and holds its write lock (as a sync in its transaction does) until told, or until killed. */
function holdWriteLock(dir: string): Promise<ChildProcessByStdio<Writable, Readable, null>> {
  const script = `
    import { DatabaseSync } from 'node:sqlite';
    const db = new DatabaseSync(${JSON.stringify(file(dir))});
    db.exec('PRAGMA journal_mode = WAL; BEGIN IMMEDIATE');
    db.exec("UPDATE record SET revision = revision + 100");
    console.log('held');
    process.stdin.on('data', () => { db.exec('ROLLBACK'); console.log('released'); });
    process.stdin.resume();`;
  const child = spawn(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve) => createInterface({ input: child.stdout }).once('line', () => resolve(child)));
}

const kill = async (child: { kill(signal: NodeJS.Signals): boolean }, exited: Promise<unknown>) => {
  child.kill('SIGKILL');
  await exited;
};

describe('a sync killed (SIGKILL) leaves the old content or the new, never a mix', () => {
  it('before its transaction, while it waits for another sync', async () => {
    const { proxy, dir, before, after } = await syncedThenEdited();
    const holder = await holdWriteLock(dir);
    const killed = syncProcess(configFor(proxy.url, dir));
    await killed.line(/^info: Waiting for another sync/);
    await kill(killed.child, killed.exited);
    holder.stdin.write('go\n');
    holder.kill('SIGKILL');
    expect(cacheContent(dir)).toEqual(before);
    const next = await sync(configFor(proxy.url, dir), recorder());
    expect(next.warnings.filter((w) => /damaged|rebuild/.test(w))).toEqual([]);
    expect(contentOf(dir)).toEqual(after);
  });

  it('inside its transaction, after it wrote the changed records', async () => {
    const { proxy, dir, before, after } = await syncedThenEdited();
    proxy.hold = /\/alias\/home/; // the alias never answers: the sync waits for it inside its transaction
    const seenBefore = proxy.seen.length;
    const killed = syncProcess(configFor(proxy.url, dir));
    // The changed article came in (the listing found it changed and fetched it) before the kill.
    await until(() => proxy.seen.slice(seenBefore).some((line) => /meta\.updatedAt|meta\.id\]\[in\]|"in"/.test(line)));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await kill(killed.child, killed.exited);
    proxy.release();
    expect(cacheContent(dir)).toEqual(before);
    await sync(configFor(proxy.url, dir), recorder());
    expect(contentOf(dir)).toEqual(after);
  });

  it('inside a large transaction whose pages already went to the write-ahead log', async () => {
    const snapshot = generateSnapshot({ documents: 1500, seed: 9, apiId: 'big', key });
    const served = await serve(undefined, [snapshot]);
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const config = {
      baseUrl: proxy.url,
      repository: 'big',
      apiKey: key,
      cacheDir: dir,
      onError: 'fail' as const,
      pageSize: 250,
      collections: { latest: {}, authors: {} },
    };
    proxy.hold = /\/collections\/authors/;
    // A page cache of 1 MB: the transaction outgrows it and goes to the write-ahead log.
    const killed = syncProcess(config, { COMFORTABLE_CACHE_MEMORY_MB: '1' });
    await until(() => proxy.seen.filter((line) => line.includes('/collections/latest')).length >= 5);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(readFileSync(`${file(dir)}-wal`).length).toBeGreaterThan(1024 * 1024); // the transaction spilled to disk
    await kill(killed.child, killed.exited);
    proxy.release();
    // The first sync never committed: there is no cache, and the next sync builds it whole.
    expect(openCache(dir)).toBeUndefined();
    const next = await sync(config, recorder());
    expect(next.cache.recordCount()).toBeGreaterThan(1000);
    const db = new DatabaseSync(file(dir), { readOnly: true });
    expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
  });

  it('after its commit', async () => {
    const { proxy, dir, after } = await syncedThenEdited();
    const killed = syncProcess(configFor(proxy.url, dir));
    await killed.line(/^info: Synced mag/);
    await kill(killed.child, killed.exited);
    expect(contentOf(dir)).toEqual(after);
    expect(openCache(dir)!.record('1001')!.fields.title).toMatchObject({ en_US: 'Pear harvest' });
  });
});

/** Waits until `done` says so, for up to 20 s. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!done()) throw new Error('gave up waiting');
}

describe('a damaged database file is rebuilt from the server, with a warning that says why', () => {
  it('when the file is garbage', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const expected = contentOf(dir);
    writeFileSync(file(dir), Buffer.alloc(64 * 1024, 'garbage '));
    rmSync(`${file(dir)}-wal`, { force: true });
    rmSync(`${file(dir)}-shm`, { force: true });
    const result = await sync(configFor(server.url, dir), recorder());
    expect(
      result.warnings.some((w) => /damaged/.test(w) && /rebuild/.test(w)),
      result.warnings.join('\n'),
    ).toBe(true);
    expect(contentOf(dir)).toEqual(expected);
  });

  it('when pages of the file are overwritten with garbage', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const expected = contentOf(dir);
    checkpoint(dir);
    const handle = openSync(file(dir), 'r+');
    for (let page = 1; page < 6; page++) writeSync(handle, Buffer.alloc(512, 0xa5), 0, 512, page * 4096); // the headers of pages 2 to 6
    closeSync(handle);
    const log = recorder();
    const result = await sync(configFor(server.url, dir), log);
    expect(
      result.warnings.some((w) => /damaged/.test(w)),
      result.warnings.join('\n'),
    ).toBe(true);
    expect(contentOf(dir)).toEqual(expected);
  });
});

/** Moves everything committed from the write-ahead log into the database file. */
function checkpoint(dir: string): void {
  const db = new DatabaseSync(file(dir));
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  db.close();
}

/** Cuts a stored record's JSON short: it no longer parses. */
function tamper(dir: string, id: string): void {
  const db = new DatabaseSync(file(dir));
  const { changes } = db.prepare('UPDATE body SET json = substr(json, 1, length(json) - 3) WHERE id = ?').run(id);
  db.close();
  expect(changes).toBe(1);
}

// The recovery rule replaced the check of every read against the record's digest (and the
// repair of the records it found): a record that does not parse makes the cache be rebuilt.
describe('a record that does not parse is never served: the cache is rebuilt from the server', () => {
  it('reading it for a site finds it, rebuilds the cache with a warning, and serves what the server has', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const log = recorder();
    const shared = new SharedSync();
    shared.configure(configFor(server.url, dir), log);
    const first = await shared.acquire({});
    const expected = contentOf(dir);
    tamper(dir, '1002');
    const entries = await shared.read(first, ({ cache }) => entriesOf(cache, ['1002'], cache.head.locales, ['en_US']));
    expect(entries[0]!.fields.title).toBe('Banana boats');
    expect(log.warns.some((w) => /record 1002 does not parse; rebuilding it from the server/.test(w))).toBe(true);
    expect(contentOf(dir)).toEqual(expected);
  });

  it('with the server down too, the read fails naming the cache folder and what the server answered', async () => {
    const { server } = await serve();
    const proxy = await startProxy(server);
    const dir = await tempDir();
    const shared = new SharedSync();
    shared.configure({ ...configFor(proxy.url, dir), onError: 'use-cache' }, recorder());
    const first = await shared.acquire({});
    tamper(dir, '1002');
    proxy.failFrom = 0; // every request fails with a 500 from now on
    const error = await shared
      .read(first, ({ cache }) => entriesOf(cache, ['1002'], cache.head.locales, ['en_US']))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'SyncError', code: 'server_failed' });
    expect((error as Error).message).toContain(`The cache in ${dir} is damaged: record 1002 does not parse`);
    expect((error as Error).message).toMatch(/rebuilding it from the server failed: .*500/);
  }, 60_000);

  it('offline, nothing can be rebuilt: the read fails naming the cache folder instead of serving it', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    tamper(dir, '2002');
    const shared = new SharedSync();
    shared.configure({ ...configFor(server.url, dir), mode: 'offline' }, recorder());
    const first = await shared.acquire({});
    const error = await shared.read(first, ({ cache }) => cache.records(['2001', '2002'])).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'CacheError', code: 'cache_damaged' });
    expect((error as Error).message).toBe(`The cache in ${dir} is damaged: record 2002 does not parse`);
  });

  it('a sync that reads references that do not parse rebuilds the cache, with a warning', async () => {
    const { proxy, dir, after } = await syncedThenEdited();
    const db = new DatabaseSync(file(dir));
    db.prepare("UPDATE record SET refs = substr(refs, 1, length(refs) - 3) WHERE id = '1002'").run();
    db.close();
    // 1003 left the articles: the sync walks their references again, 1002's among them.
    const result = await sync(configFor(proxy.url, dir), recorder());
    expect(
      result.warnings.some((w) => /record 1002 does not parse; rebuilding it from the server/.test(w)),
      result.warnings.join('\n'),
    ).toBe(true);
    expect(contentOf(dir)).toEqual(after);
  });

  it('a sync that fetches it again (it changed on the server) stores what the server has', async () => {
    const served = await serve();
    const dir = await tempDir();
    const config = configFor(served.server.url, dir, {
      collections: { articles: { fields: 'fields(title)' } },
      aliases: [],
      queries: {},
    });
    await sync(config, recorder());
    tamper(dir, '1002');
    (docOf(served.snapshot, '1002').fields.title as Record<string, string>).de_DE = 'Bananenboote';
    touch(docOf(served.snapshot, '1002'));
    await served.publish();
    const result = await sync(config, recorder());
    expect(recordsOf(result).get('1002')!.fields.title).toEqual({ en_US: 'Banana boats', de_DE: 'Bananenboote' });
  });
});

describe('a cache folder that cannot be written', () => {
  it('fails with a message naming the folder, and leaves the cache as it was', async (context) => {
    const { server } = await serve();
    const writable = await tempDir();
    await sync(configFor(server.url, writable), recorder());
    const before = cacheContent(writable);
    // The same folder seen through a read-only mount: not even root may write there.
    const dir = join(await tempDir(), 'read-only');
    mkdirSync(dir);
    if (!tryRun('mount', ['--bind', writable, dir])) return skipBecause(context, 'mounting a file system needs root');
    try {
      expect(tryRun('mount', ['-o', 'remount,bind,ro', dir])).toBe(true);
      const error = await sync(configFor(server.url, dir), recorder()).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'cache_unwritable' });
      expect((error as Error).message).toContain(dir);
      expect((error as Error).message).toMatch(/cannot be (written|created)/);
      await expect(sync(configFor(server.url, join(dir, 'none')), recorder())).rejects.toMatchObject({
        code: 'cache_unwritable',
      });
      expect(cacheContent(writable)).toEqual(before);
    } finally {
      tryRun('umount', ['-l', dir]);
    }
  });
});

describe('a full disk', () => {
  it('fails the sync with a message that says so, leaves the cache as it was, and the next sync with room completes it', async (context) => {
    const snapshot = generateSnapshot({ documents: 1500, seed: 3, apiId: 'big', key });
    const served = await serve(undefined, [snapshot]);
    const mount = join(await tempDir(), 'mount');
    mkdirSync(mount);
    if (!tryRun('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mount]))
      return skipBecause(context, 'mounting a file system needs root');
    try {
      const dir = join(mount, 'cache');
      const config = {
        baseUrl: served.server.url,
        repository: 'big',
        apiKey: key,
        cacheDir: dir,
        onError: 'fail' as const,
        collections: { authors: {} },
      };
      await sync(config, recorder());
      const before = cacheContent(dir);
      const error = await sync({ ...config, collections: { latest: {}, authors: {} } }, recorder()).catch(
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ code: 'cache_full' });
      expect((error as Error).message).toMatch(/full/);
      expect(cacheContent(dir)).toEqual(before);
      expect(tryRun('mount', ['-o', 'remount,size=64m', mount])).toBe(true);
      const next = await sync({ ...config, collections: { latest: {}, authors: {} } }, recorder());
      expect(next.cache.recordCount()).toBeGreaterThan(200);
    } finally {
      tryRun('umount', ['-l', mount]);
    }
  });
});

describe('8 syncs started at once on one cache', () => {
  async function eightAtOnce(dir: string, url: string) {
    const runs = Array.from({ length: 8 }, () => syncProcess(configFor(url, dir)));
    return Promise.all(runs.map((run) => run.exited));
  }

  it('all finish, one after the other, with the same content as one sync alone', async () => {
    const { proxy, dir } = await syncedThenEdited();
    const ends = await eightAtOnce(dir, proxy.url);
    for (const end of ends) expect(end.code, end.lines.join('\n') + end.stderr).toBe(0);
    expect(ends.flatMap((end) => end.lines).filter((line) => /^warn: .*(damaged|rebuild)/.test(line))).toEqual([]);
    expect(ends.filter((end) => end.lines.some((line) => /"updated":\["1001"/.test(line)))).toHaveLength(1); // one made the change, the others found none
    expect(contentOf(dir)).toEqual(contentOf(await freshCacheOf(proxy.url)));
  });

  it('all finish when a sync holding the cache was killed before them', async () => {
    const { proxy, dir } = await syncedThenEdited();
    const holder = await holdWriteLock(dir);
    holder.kill('SIGKILL');
    const ends = await eightAtOnce(dir, proxy.url);
    for (const end of ends) expect(end.code, end.lines.join('\n') + end.stderr).toBe(0);
    expect(contentOf(dir)).toEqual(contentOf(await freshCacheOf(proxy.url)));
  });

  it('a sync that waits for another says so after a second', async () => {
    const { proxy, dir } = await syncedThenEdited();
    const holder = await holdWriteLock(dir);
    const waiting = syncProcess(configFor(proxy.url, dir));
    await waiting.line(/^info: Waiting for another sync of the cache in .* to finish/);
    holder.stdin.write('go\n');
    const end = await waiting.exited;
    holder.kill('SIGKILL');
    expect(end.code).toBe(0);
    expect(contentOf(dir)).toEqual(contentOf(await freshCacheOf(proxy.url)));
  });
});
