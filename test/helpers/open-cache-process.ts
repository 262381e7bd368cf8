// `openCache(dir)` in a process of its own that never opened the cache to write: dir is
// argv[2]. Prints one line of JSON: `{"cache":null}` when there is no committed cache, what the
// reader shows (last sync, records, members, a title, how many member records read back) when there is one, or what
// it threw (with SQLite's extended result code, when it is SQLite's).
import { openCache } from '../../src/cache/index.ts';

try {
  const cache = openCache(process.argv[2]!);
  if (!cache) console.log(JSON.stringify({ cache: null }));
  else {
    const members = [
      ...new Set(cache.sources().flatMap((source) => cache.members(source.key).map((member) => member.id))),
    ].sort();
    const titleOf1001 = cache.has('1001') ? cache.record('1001')!.fields.title : undefined;
    console.log(
      JSON.stringify({
        cache: {
          lastSync: cache.head.lastSync,
          records: cache.recordCount(),
          members,
          titleOf1001,
          read: cache.records(members).size,
        },
      }),
    );
  }
} catch (error) {
  const { name, message, code, cause } = error as Error & { code?: string; cause?: { errcode?: number } };
  console.log(JSON.stringify({ error: { name, code, message, errcode: cause?.errcode } }));
}
