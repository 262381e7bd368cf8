import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openCache } from '../../src/cache/index.ts';
import { DatabaseSync, withoutSqliteWarning } from '../../src/cache/sqlite.ts';
import type { CacheHead } from '../../src/cache/head.ts';
import { CacheTransaction } from '../../src/cache/transaction.ts';
import { sync } from '../../src/sync/engine.ts';
import type { Reference, StoredRecord } from '../../src/model/records.ts';
import { configFor, recorder, serve, sorted, tempDir } from '../helpers/magazine.ts';

/**
 * The cache's storage, one SQLite database per folder: a sync's transaction (its writes seen by
 * itself only, until it commits), the records and what a transaction changed, rebuilding what
 * is no cache of this format, and the read interface every consumer uses.
 */

const events = (warnings: string[] = []) => ({
  warn: (m: string) => warnings.push(m),
  waiting: () => {},
});

const record = (id: string, contentType: string, fields: Record<string, unknown> = {}, revision = 1): StoredRecord => ({
  id,
  contentType,
  revision,
  tags: [],
  createdAt: '2024-01-01T00:00:00.000Z',
  updatedAt: `2024-02-0${revision}T00:00:00.000Z`,
  fields,
  localized: [],
});

function put(
  tx: CacheTransaction,
  stored: StoredRecord,
  references: Reference[] = [],
  digest = `d-${stored.id}-${stored.revision}-${JSON.stringify(stored.fields).length}`,
) {
  return tx.records.put(stored, JSON.stringify(stored), digest, false, references);
}

const head: CacheHead = {
  fingerprint: 'f',
  repository: 'r',
  baseUrl: 'http://x/v1',
  package: 'comfortable-loader@test',
  lastSync: '2024-03-01T00:00:00.000Z',
  locales: { defaultLocale: 'en_US', locales: [{ key: 'en_US' }], source: 'repository' },
  model: {},
  records: 3,
};

/** A committed cache of three records: an article referencing an author and an asset. */
async function small(dir: string): Promise<void> {
  const tx = await CacheTransaction.begin(dir, events());
  // Digests as `put` sends them (of the JSON), so a read checks out.
  const { digest } = await import('../../src/model/digests.ts');
  const save = (stored: StoredRecord, refs: Reference[] = []) =>
    tx.records.put(stored, JSON.stringify(stored), digest(JSON.stringify(stored)), false, refs);
  save(
    record('1', 'article', { author: { id: '2', contentType: 'author' }, cover: [{ id: '3', contentType: '_asset' }] }),
    [
      { field: 'author', id: '2', asset: false },
      { field: 'cover', id: '3', asset: true },
    ],
  );
  save(record('2', 'author', { name: 'Ada' }));
  save(record('3', '_asset', { file: { url: 'x.png' } }));
  tx.writeSource(
    { key: 'collection:a', kind: 'collection', name: 'a', fingerprint: 'fp', syncedAt: head.lastSync },
    { ids: ['1', '2'], updatedAt: ['2024-02-01T00:00:00.000Z', '2024-02-01T00:00:00.000Z'], revisions: [1, 1] },
    ['3'],
    [{ from: '1', field: 'related', id: '9' }],
  );
  tx.commit(head, {});
}

describe('a transaction', () => {
  it('is seen by no reader until it commits, and then whole', async () => {
    const dir = await tempDir();
    await small(dir);
    const tx = await CacheTransaction.begin(dir, events());
    put(tx, record('4', 'article'));
    tx.records.drop('2');
    expect(tx.records.info('4')).toMatchObject({
      contentType: 'article',
      revision: 1,
      updatedAt: '2024-02-01T00:00:00.000Z',
    });
    expect(tx.records.info('2')).toBeUndefined();
    const reader = openCache(dir)!;
    expect(reader.has('4')).toBe(false);
    expect(reader.has('2')).toBe(true);
    tx.commit({ ...head, lastSync: '2024-04-01T00:00:00.000Z' }, {});
    expect(reader.has('4')).toBe(true);
    expect(reader.has('2')).toBe(false);
    expect(reader.head.lastSync).toBe('2024-04-01T00:00:00.000Z');
  });

  it('rolled back leaves the cache as it was', async () => {
    const dir = await tempDir();
    await small(dir);
    const tx = await CacheTransaction.begin(dir, events());
    tx.clear();
    put(tx, record('5', 'article'));
    tx.rollback();
    const reader = openCache(dir)!;
    expect(reader.members('collection:a').map((m) => m.id)).toEqual(['1', '2']);
    expect(reader.has('5')).toBe(false);
  });

  it('of a new cache, rolled back, leaves no cache', async () => {
    const dir = await tempDir();
    const tx = await CacheTransaction.begin(dir, events());
    expect(tx.head).toBeUndefined();
    put(tx, record('1', 'article'));
    tx.rollback();
    expect(openCache(dir)).toBeUndefined();
  });

  it('knows what it added, changed and removed, against the records it began with', async () => {
    const dir = await tempDir();
    await small(dir);
    const tx = await CacheTransaction.begin(dir, events());
    expect(put(tx, record('4', 'article'))).toEqual({ added: true, changed: true, relinked: true });
    const author = tx.records.body('2')!;
    expect(put(tx, author, [], tx.records.info('2')!.digest)).toEqual({
      added: false,
      changed: false,
      relinked: false,
    }); // stored so already
    expect(put(tx, record('2', 'author', { name: 'Ada L.' }, 2))).toEqual({
      added: false,
      changed: true,
      relinked: false,
    });
    expect(put(tx, record('3', '_asset', {}, 2), [{ field: 'x', id: '1', asset: false }])).toEqual({
      added: false,
      changed: true,
      relinked: true,
    });
    tx.records.drop('1');
    put(tx, record('5', 'article'));
    tx.records.drop('5'); // added and removed in the same transaction: no change
    expect(tx.records.changes()).toEqual({ added: ['4'], updated: ['2', '3'], removed: ['1'] });
    tx.rollback();
  });

  it('finds the records referencing some, through any reference or asset references only', async () => {
    const dir = await tempDir();
    await small(dir);
    const tx = await CacheTransaction.begin(dir, events());
    expect(sorted(tx.records.referrers(new Set(['2', '3'])))).toEqual(['1']);
    expect(sorted(tx.records.referrers(new Set(['2']), true))).toEqual([]);
    expect(sorted(tx.records.referrers(new Set(['3']), true))).toEqual(['1']);
    put(tx, record('6', 'article'), [{ field: 'author', id: '2', asset: false }]);
    expect(sorted(tx.records.referrers(new Set(['2'])))).toEqual(['1', '6']); // its own writes included
    const nodes = tx.records.nodes(['1', '6', '404']);
    expect([...nodes.keys()].sort()).toEqual(['1', '6']);
    expect(nodes.get('1')!.references).toEqual([
      { field: 'author', id: '2', asset: false },
      { field: 'cover', id: '3', asset: true },
    ]);
    tx.rollback();
  });
});

describe('a record whose stored JSON does not parse', () => {
  // The recovery rule replaced the check of every read against the record's digest: damage that
  // can be seen is refused (and the cache rebuilt from the CMS by the sync that hears of it).
  it('is refused by every read with a CacheError naming the folder and the record', async () => {
    const dir = await tempDir();
    await small(dir);
    const db = new DatabaseSync(join(dir, 'cache.sqlite'));
    db.prepare("UPDATE body SET json = substr(json, 1, length(json) - 3) WHERE id = '2'").run();
    db.close();
    const reader = openCache(dir)!;
    const refused = {
      name: 'CacheError',
      code: 'cache_damaged',
      message: `The cache in ${dir} is damaged: record 2 does not parse`,
    };
    expect(() => reader.records(['1', '2'])).toThrow(expect.objectContaining(refused));
    expect(() => reader.record('2')).toThrow(expect.objectContaining(refused));
    expect(reader.record('1')).toBeDefined();
    const tx = await CacheTransaction.begin(dir, events());
    expect(() => tx.records.body('2')).toThrow(expect.objectContaining(refused));
    tx.rollback();
  });

  it('and references that do not parse are refused alike, by the reader and by a transaction', async () => {
    const dir = await tempDir();
    await small(dir);
    const db = new DatabaseSync(join(dir, 'cache.sqlite'));
    db.prepare("UPDATE record SET refs = substr(refs, 1, length(refs) - 3) WHERE id = '1'").run();
    db.close();
    const reader = openCache(dir)!;
    const refused = { code: 'cache_damaged', message: `The cache in ${dir} is damaged: record 1 does not parse` };
    expect(() => reader.references('1')).toThrow(expect.objectContaining(refused));
    // Read through SQLite's JSON functions.
    expect(() => reader.links()).toThrow(expect.objectContaining({ code: 'cache_damaged' }));
    const tx = await CacheTransaction.begin(dir, events());
    expect(() => tx.records.nodes(['1'])).toThrow(expect.objectContaining(refused));
    tx.rollback();
  });
});

describe('what is no cache of this format is rebuilt, with a warning that says why', () => {
  it('a database of other tables', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    const db = new DatabaseSync(join(dir, 'cache.sqlite'));
    db.exec("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine')");
    db.close();
    const result = await sync(configFor(server.url, dir), recorder());
    expect(
      result.warnings.some((w) => /cannot be used: it is not a cache of this package/.test(w) && /rebuilding/.test(w)),
    ).toBe(true);
    expect(result.cache.recordCount()).toBe(7);
  });

  it('a cache of another format number', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const db = new DatabaseSync(join(dir, 'cache.sqlite'));
    db.exec("UPDATE meta SET value = '99' WHERE key = 'format'");
    db.close();
    expect(openCache(dir)).toBeUndefined(); // a reader does not take it for a cache
    const result = await sync(configFor(server.url, dir), recorder());
    expect(result.warnings.some((w) => /another format \(99; this version writes 7\)/.test(w))).toBe(true);
    expect(result.stats.written).toBe(7);
  });

  it('a cache whose members of a source no longer read back (not JSON, or fewer than it says)', async () => {
    const { server } = await serve();
    for (const damage of ["ids = 'not json'", "updated_at = '[]'", 'revisions = \'["x"]\'']) {
      const dir = await tempDir();
      await sync(configFor(server.url, dir), recorder());
      const db = new DatabaseSync(join(dir, 'cache.sqlite'));
      db.exec(`UPDATE member SET ${damage} WHERE source = 'collection:articles'`);
      db.close();
      if (damage.startsWith('ids')) {
        expect(() => openCache(dir)!.members('collection:articles')).toThrow(
          /the members of collection:articles do not read back/,
        );
      }
      const result = await sync(configFor(server.url, dir), recorder());
      expect(
        result.warnings.some((w) =>
          /the members of collection:articles do not read back; rebuilding it from the server/.test(w),
        ),
      ).toBe(true);
      expect(result.cache.members('collection:articles').map((member) => member.id)).toEqual(['1001', '1003', '1002']);
    }
  });

  it('a cache whose head is missing a value', async () => {
    const { server } = await serve();
    const dir = await tempDir();
    await sync(configFor(server.url, dir), recorder());
    const db = new DatabaseSync(join(dir, 'cache.sqlite'));
    db.exec("DELETE FROM meta WHERE key = 'locales'");
    db.close();
    const result = await sync(configFor(server.url, dir), recorder());
    expect(result.warnings.some((w) => /its locales is missing/.test(w))).toBe(true);
    expect(result.stats.written).toBe(7);
  });
});

describe('the read interface', () => {
  it('gives the members in order with their record digests, included records, types, references and dangling references', async () => {
    const dir = await tempDir();
    await small(dir);
    const reader = openCache(dir)!;
    expect(reader.sources()).toEqual([
      { key: 'collection:a', kind: 'collection', name: 'a', fingerprint: 'fp', syncedAt: head.lastSync },
    ]);
    expect(reader.members('collection:a')).toEqual([
      { id: '1', contentType: 'article', digest: expect.any(String) },
      { id: '2', contentType: 'author', digest: expect.any(String) },
    ]);
    expect(reader.members('collection:none')).toEqual([]);
    expect(reader.included('collection:a')).toEqual(['3']);
    expect(reader.contentTypes(['collection:a'])).toEqual(['article', 'author']);
    expect(reader.contentType('3')).toBe('_asset');
    expect(reader.references('1')).toEqual([
      { field: 'author', id: '2', asset: false },
      { field: 'cover', id: '3', asset: true },
    ]);
    expect(reader.referenceTargets('article')).toEqual(
      new Map([
        ['author', ['author']],
        ['cover', ['_asset']],
      ]),
    );
    expect(reader.dangling()).toEqual([{ from: '1', field: 'related', id: '9' }]);
    expect(reader.dangling('collection:none')).toEqual([]);
    expect(reader.recordCount()).toBe(3);
    expect(reader.head.model).toEqual({});
  });

  it('gives the origins of the asset files, of every locale, each once; relative URLs have none', async () => {
    const dir = await tempDir();
    await small(dir); // its asset's file is `x.png`
    expect(openCache(dir)!.assetOrigins()).toEqual([]);
    const tx = await CacheTransaction.begin(dir, events());
    const file = (url: string) => ({ url, fileName: 'a.png' });
    put(tx, record('4', '_asset', { file: file('https://cdn.example.com/a/b.png?w=1') }));
    put(tx, record('5', '_asset', { file: file('https://CDN.example.com:443/c.png') }));
    put(tx, {
      ...record('6', '_asset', {
        file: { en_US: file('http://127.0.0.1:4010/files/d.png'), de_DE: file('https://images.example.org') },
      }),
      localized: ['file'],
    });
    put(tx, record('7', 'article', { file: file('https://not-an-asset.example.com/e.png') }));
    put(tx, record('8', '_asset', { file: file('ftp://files.example.com/f.png') }));
    tx.commit(head, {});
    expect(openCache(dir)!.assetOrigins()).toEqual([
      'http://127.0.0.1:4010',
      'https://cdn.example.com',
      'https://images.example.org',
    ]);
  });

  it('finds no cache in an empty folder, nor in a folder that does not exist', async () => {
    expect(openCache(await tempDir())).toBeUndefined();
    expect(openCache(join(await tempDir(), 'missing'))).toBeUndefined();
  });
});

describe('loading node:sqlite', () => {
  it("leaves out SQLite's ExperimentalWarning (Node 22 prints it) and no other warning", async () => {
    const heard: string[] = [];
    const listen = (warning: Error) => heard.push(`${warning.name}: ${warning.message}`);
    process.on('warning', listen);
    try {
      const value = withoutSqliteWarning(() => {
        process.emitWarning('SQLite is an experimental feature and might change at any time', 'ExperimentalWarning');
        process.emitWarning('SQLite is an experimental feature', { type: 'ExperimentalWarning' });
        process.emitWarning('Some other feature is experimental', 'ExperimentalWarning');
        process.emitWarning('SQLite deprecated something', 'DeprecationWarning');
        return 42;
      });
      expect(value).toBe(42);
      // After the load, the SQLite warning is told again: only the load is quiet.
      process.emitWarning('SQLite is an experimental feature and might change at any time', 'ExperimentalWarning');
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
      expect(heard).toEqual([
        'ExperimentalWarning: Some other feature is experimental',
        'DeprecationWarning: SQLite deprecated something',
        'ExperimentalWarning: SQLite is an experimental feature and might change at any time',
      ]);
    } finally {
      process.off('warning', listen);
    }
  });

  it('prints nothing on stderr when a process loads the cache module', () => {
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `await import(${JSON.stringify(new URL('../../src/cache/index.ts', import.meta.url).href)});`,
      ],
      { encoding: 'utf8' },
    );
    expect(child.status).toBe(0);
    expect(child.stderr).toBe('');
  });
});
