import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cacheRootOf, originCacheDir, pruneAfterDays, touchOrigin } from '../../src/cache/origins.ts';

/**
 * One cache per origin of the content inside a cache folder: the CMS by base URL and
 * repository, a copy by its file. The folders are kept apart, say whose they are, and those not
 * used for `pruneAfterDays` are removed by the next use of another.
 */

const day = 24 * 60 * 60 * 1000;
let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'cmft-origins-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const age = (path: string, at: number) => utimesSync(path, at / 1000, at / 1000);

describe('a folder per origin', () => {
  it('tells the CMS by base URL and repository and a copy by its file, never by anything else', () => {
    const cms = originCacheDir(root, { baseUrl: 'https://api.cmft.io/v1/', repository: 'kitchen' });
    expect(originCacheDir(root, { baseUrl: 'https://api.cmft.io/v1', repository: 'kitchen' })).toBe(cms); // a trailing slash is the same URL
    const others = [
      originCacheDir(root, { baseUrl: 'https://staging.cmft.io/v1', repository: 'kitchen' }),
      originCacheDir(root, { baseUrl: 'https://api.cmft.io/v1', repository: 'garden' }),
      originCacheDir(root, { snapshot: 'content/kitchen.json' }),
      originCacheDir(root, { snapshot: 'backup/kitchen.json' }),
    ];
    expect(new Set([cms, ...others]).size).toBe(5);
    expect([cms, ...others].map((dir) => dirname(dir))).toEqual(Array(5).fill(root));
    expect(basename(cms)).toMatch(/^cms-api\.cmft\.io-kitchen-[0-9a-f]{10}$/);
    expect(basename(others[2]!)).toMatch(/^copy-kitchen-[0-9a-f]{10}$/);
  });

  it('says in each folder whose cache it is, and never holds a key', () => {
    const dir = originCacheDir(root, { baseUrl: 'https://api.cmft.io/v1', repository: 'kitchen' });
    expect(JSON.parse(readFileSync(join(dir, 'origin.json'), 'utf8'))).toEqual({
      baseUrl: 'https://api.cmft.io/v1',
      repository: 'kitchen',
    });
    expect(
      JSON.parse(
        readFileSync(join(originCacheDir(root, { snapshot: 'content\\kitchen.json' }), 'origin.json'), 'utf8'),
      ),
    ).toEqual({ snapshot: 'content/kitchen.json' });
  });

  it('gives the cacheDir option back from an origin folder, and leaves another folder as it is', () => {
    expect(cacheRootOf(originCacheDir(root, { snapshot: 'content/kitchen.json' }))).toBe(root);
    expect(cacheRootOf(root)).toBe(root);
  });

  it("fails for nothing: a folder that cannot be made is the sync's to report", () => {
    const file = join(root, 'a-file');
    writeFileSync(file, '');
    expect(originCacheDir(file, { snapshot: 'content/kitchen.json' })).toMatch(new RegExp(`^${file}/copy-kitchen-`));
  });
});

describe(`caches not used for ${pruneAfterDays} days`, () => {
  const now = Date.parse('2025-06-01T00:00:00Z');

  it('are removed by the use of another origin; those used since, and the one in use, are kept', () => {
    const old = originCacheDir(root, { snapshot: 'content/old.json' }, now - (pruneAfterDays + 1) * day);
    const recent = originCacheDir(root, { snapshot: 'content/recent.json' }, now - (pruneAfterDays - 1) * day);
    const revived = originCacheDir(root, { snapshot: 'content/revived.json' }, now - 90 * day);
    touchOrigin(revived, now - day); // a dev server that has run since syncs it
    writeFileSync(join(old, 'cache.sqlite'), 'x');
    originCacheDir(root, { baseUrl: 'https://api.cmft.io/v1', repository: 'kitchen' }, now);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(recent)).toBe(true);
    expect(existsSync(revived)).toBe(true);
    // Using an old one again makes it new: it is not removed by its own use.
    const again = originCacheDir(root, { snapshot: 'content/recent.json' }, now + 60 * day);
    expect(again).toBe(recent);
    expect(statSync(join(again, 'origin.json')).mtimeMs).toBe(now + 60 * day);
  });

  it('include a cache of the earlier layout (one database directly in the folder), and nothing that is not a cache', () => {
    for (const name of ['cache.sqlite', 'cache.sqlite-wal']) {
      writeFileSync(join(root, name), 'x');
      age(join(root, name), now - (pruneAfterDays + 1) * day);
    }
    mkdirSync(join(root, 'mine'));
    age(join(root, 'mine'), now - 400 * day);
    mkdirSync(join(root, 'copy-half-made-0123456789')); // no marker yet: being made by another process
    originCacheDir(root, { snapshot: 'content/kitchen.json' }, now);
    expect(readdirSync(root).sort()).toEqual([
      expect.stringMatching(/^copy-half-made-/),
      expect.stringMatching(/^copy-kitchen-/),
      'mine',
    ]);
  });

  it('keep a cache of the earlier layout used lately, its database or its log', () => {
    writeFileSync(join(root, 'cache.sqlite'), 'x');
    age(join(root, 'cache.sqlite'), now - day);
    originCacheDir(root, { snapshot: 'content/kitchen.json' }, now);
    expect(existsSync(join(root, 'cache.sqlite'))).toBe(true);
    // A commit writes the log; the database file changes only when the log is merged into it.
    age(join(root, 'cache.sqlite'), now - 90 * day);
    writeFileSync(join(root, 'cache.sqlite-wal'), 'x');
    age(join(root, 'cache.sqlite-wal'), now - day);
    originCacheDir(root, { snapshot: 'content/kitchen.json' }, now);
    expect(existsSync(join(root, 'cache.sqlite'))).toBe(true);
  });
});
