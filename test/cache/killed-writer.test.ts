import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCache } from '../../src/cache/index.ts';
import { sync } from '../../src/sync/engine.ts';
import { canTrace, openCacheInProcess, syncKilledWhenRemoving, tryRun } from '../helpers/cache-processes.ts';
import { syncProcess } from '../helpers/cli.ts';
import { configFor, docOf, recorder, serve, startProxy, tempDir, touch } from '../helpers/magazine.ts';
import { skipBecause } from '../helpers/skip.ts';

/**
 * A reader opened after a sync was killed while it wrote, before any other process opened the
 * cache again (a build, the `types` command): it gets the last committed content, or undefined
 * when nothing was ever committed; never an error that says the folder cannot be written when
 * it can. A reader opens the database read-only, and what a killed writer left may need writing
 * to read: a rollback journal to play back, or the index of the write-ahead log to rebuild.
 * Nothing here opens the cache in this process before the reader does (a connection of this
 * process would keep SQLite's shared memory alive and hide the fault): syncs and readers run in
 * processes of their own.
 */

const file = (dir: string) => join(dir, 'cache.sqlite');

/** Waits until `done` says so, for up to 20 s. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!done()) throw new Error('gave up waiting');
}

/**
 * A first sync killed while it created the database: at the instant it switched the new file
 * into WAL mode, when page 1 is written and the rollback journal that covered it is not yet
 * removed (SQLite does that switch through a rollback journal). Read-only, that journal cannot
 * be played back: SQLite answers SQLITE_READONLY_ROLLBACK ("attempt to write a readonly database").
 */
async function killedWhileCreating(url: string, dir: string) {
  const killed = await syncKilledWhenRemoving(configFor(url, dir), `${file(dir)}-journal`);
  expect(killed.signal, killed.stdout).toBe('SIGKILL');
  expect(statSync(file(dir)).size).toBeGreaterThan(0);
  expect(existsSync(`${file(dir)}-journal`)).toBe(true); // the journal to play back: nothing was committed
}

describe('a reader opened after a sync killed (SIGKILL) while it wrote', () => {
  it('while it created the database: there is no committed cache (undefined), and the next sync builds it', async (context) => {
    if (!canTrace()) return skipBecause(context, 'stopping a sync at an exact system call needs strace');
    const { server } = await serve();
    const dir = await tempDir();
    await killedWhileCreating(server.url, dir);
    expect(await openCacheInProcess(dir)).toEqual({ cache: null });
    const next = await sync(configFor(server.url, dir), recorder());
    expect(next.cache.recordCount()).toBe(7);
  });

  it('while it wrote a later sync: the last committed content', async () => {
    const served = await serve();
    const proxy = await startProxy(served.server);
    const dir = await tempDir();
    const first = await syncProcess(configFor(proxy.url, dir)).exited;
    expect(first.code, first.lines.join('\n') + first.stderr).toBe(0);
    (docOf(served.snapshot, '1001').fields.title as Record<string, string>).en_US = 'Pear harvest';
    touch(docOf(served.snapshot, '1001'));
    served.snapshot.documents = served.snapshot.documents.filter((d) => d.meta.id !== '1003');
    await served.publish();
    proxy.hold = /\/alias\/home/; // the alias never answers: the sync waits for it inside its transaction
    const seenBefore = proxy.seen.length;
    const killed = syncProcess(configFor(proxy.url, dir));
    await until(() => proxy.seen.slice(seenBefore).some((line) => /\/alias\/home/.test(line)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    killed.child.kill('SIGKILL');
    await killed.exited;
    proxy.release();
    const opened = await openCacheInProcess(dir);
    expect(opened).toMatchObject({
      cache: { records: 7, members: ['1001', '1002', '1003', '2001', '2002'], read: 5 },
    });
    expect(opened).toMatchObject({ cache: { titleOf1001: { en_US: 'Apple harvest' } } });
  });

  it('in a folder it cannot write: a CacheError that names the folder and says what to do', async (context) => {
    if (!canTrace()) return skipBecause(context, 'stopping a sync at an exact system call needs strace');
    const { server } = await serve();
    const writable = await tempDir();
    await killedWhileCreating(server.url, writable);
    // The same folder seen through a read-only mount: not even root may write there.
    const dir = join(await tempDir(), 'read-only');
    mkdirSync(dir);
    if (!tryRun('mount', ['--bind', writable, dir])) return skipBecause(context, 'mounting a file system needs root');
    try {
      expect(tryRun('mount', ['-o', 'remount,bind,ro', dir])).toBe(true);
      const opened = await openCacheInProcess(dir);
      expect(opened).toMatchObject({ error: { name: 'CacheError', code: 'cache_unwritable' } });
      const { message } = (opened as { error: { message: string } }).error;
      expect(message).toContain(dir);
      expect(message).toMatch(/killed/);
      expect(message).toMatch(/run a sync/);
    } finally {
      tryRun('umount', ['-l', dir]);
    }
    // Where it can be written, the same files read as no cache.
    expect(openCache(writable)).toBeUndefined();
  });
});
