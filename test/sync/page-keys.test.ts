import { describe, expect, it } from 'vitest';
import { cacheKeys, pageKey } from '../../src/entries/page-keys.ts';
import { sync } from '../../src/sync/engine.ts';
import { configFor, docOf, type Magazine, recorder, serve, tempDir, touch } from '../helpers/magazine.ts';

/**
 * Page keys for incremental builds, on the magazine: 1001 has author 2001, related 1002, cover
 * 3001 and a gallery of 3001 and 3002; 1002 has author 2002, related 1001 (and 1999, which does
 * not exist) and cover 3002; 1003 has author 2001; 2001's avatar is 3002 and favourite 1003;
 * 2002's favourite is 1001.
 */

const ids = ['1001', '1002', '1003', '2001', '2002'];

/** The keys of every document before and after an edit, and which changed. */
async function keysAround(edit: (snapshot: Magazine) => void): Promise<string[]> {
  const served = await serve();
  const config = configFor(served.server.url, await tempDir(), {
    collections: { articles: { includes: 0 } },
    queries: { authors: { contentType: 'author' } },
  });
  const before = cacheKeys((await sync(config, recorder())).cache, ids);
  edit(served.snapshot);
  await served.publish();
  const after = cacheKeys((await sync(config, recorder())).cache, ids);
  return ids.filter((id) => before.get(id) !== after.get(id));
}

function edited(id: string) {
  return (snapshot: Magazine) => {
    const record = docOf(snapshot, id) ?? snapshot.assets.find((asset) => asset.meta.id === id)!;
    if ('name' in record.fields) record.fields.name = `Edited ${id}`;
    else record.fields.title = { en_US: `Edited ${id}` };
    touch(record);
  };
}

describe('the cacheKey of a document', () => {
  it('changes with the document, what it references, and what those reference, whatever the includes', async () => {
    // 2002 is the author of 1002, which 1001 relates to: two relations from 1001, with includes 0.
    expect(await keysAround(edited('2002'))).toEqual(expect.arrayContaining(['1001', '1002', '2002']));
    // 3002 is the avatar of 2001, the author of 1003: two relations from 1003.
    expect(await keysAround(edited('3002'))).toEqual(expect.arrayContaining(['1003', '2001']));
  });

  it('changes with the documents that reference it, and stays when only records farther away change', async () => {
    // 1003 is 2001's favourite: 2001 shows in 1003's key as a referrer; 2002 is nowhere near 1003.
    const changed = await keysAround(edited('2002'));
    expect(changed).not.toContain('1003');
    // 1001 names 2001 as author: the page of 2001 (which lists its articles) is keyed with 1001.
    expect(await keysAround(edited('1001'))).toEqual(expect.arrayContaining(['2001', '1001', '1002', '2002']));
    expect(await keysAround(edited('1001'))).not.toContain('1003');
  });

  it('is the same in two caches of the same content', async () => {
    const served = await serve();
    const one = cacheKeys((await sync(configFor(served.server.url, await tempDir()), recorder())).cache, ids);
    const two = cacheKeys((await sync(configFor(served.server.url, await tempDir()), recorder())).cache, ids);
    expect(two).toEqual(one);
    expect(new Set(one.values()).size).toBe(ids.length);
  });
});

describe('pageKey', () => {
  const entry = (key: string) => ({ data: { cacheKey: key } });
  it('combines the keys of entries, virtual module entries and lists of them, in order', () => {
    expect(pageKey([entry('a'), { cacheKey: 'b' }], 'c')).toBe(pageKey('a', 'b', 'c'));
    expect(pageKey('a', 'b')).not.toBe(pageKey('b', 'a'));
    expect(pageKey(['a', 'b'])).not.toBe(pageKey(['a,b']));
    expect(pageKey(undefined, [], null)).toBe(pageKey());
  });

  it('refuses what has no key, saying what it takes', () => {
    expect(() => pageKey({ data: {} } as never)).toThrow(
      /pageKey\(\) takes entries of comfortableLoader\(\) collections/,
    );
  });
});
