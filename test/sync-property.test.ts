import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSnapshot } from './helpers/generate-snapshot.ts';
import { mulberry32 } from './helpers/random.ts';
import { closeAllPools } from '../src/api/transport.ts';
import { startServer } from '../src/server/index.ts';
import type { Snapshot, SnapshotRecord } from '../src/wire/snapshot-format.ts';
import { configSources, parseSyncConfig, type SyncConfigInput } from '../src/sync/config.ts';
import { type NodeReader, reach } from '../src/sync/reach.ts';
import type { CacheReader } from '../src/cache/index.ts';
import { sync, type SyncResult } from '../src/sync/engine.ts';
import type { StoredRecord } from '../src/model/records.ts';
import { cacheContent, recordsOf } from './helpers/magazine.ts';

/**
 * The property: whatever the CMS does between two syncs, an incremental sync ends with the same
 * cache as a fresh full sync. For seeded random sequences of edits to a small generated
 * snapshot whose content types have sections, each step syncs incrementally into cache A and from scratch into cache B, and
 * compares the records read back, the members of every source, the record ids and the dangling
 * references (never the segment layout). A's changeset must also be exactly the difference
 * between its caches before and after the step.
 */

// More with SYNC_PROPERTY_SEEDS=200 SYNC_PROPERTY_STEPS=12 when hunting a bug.
const seeds = Array.from({ length: Number(process.env.SYNC_PROPERTY_SEEDS ?? 5) }, (_, i) => i + 1);
const steps = Number(process.env.SYNC_PROPERTY_STEPS ?? 8);
const key = 'prop-key';

const sections = ['politics', 'business', 'technology', 'science', 'culture', 'sport', 'travel', 'food'];
const words = ['river', 'garden', 'harvest', 'bridge', 'station', 'market', 'winter', 'island', 'coffee', 'cloud'];
const wörter = ['Fluss', 'Garten', 'Ernte', 'Brücke', 'Bahnhof', 'Markt', 'Winter', 'Insel', 'Kaffee', 'Wolke'];

/** Sources of every kind: includes of level 2, field maps, level 0, aliases, content-type queries, and sources with a fields mask. */
function configOf(baseUrl: string, cacheDir: string, mode: 'incremental' | 'fresh'): SyncConfigInput {
  return {
    baseUrl,
    repository: 'prop',
    apiKey: key,
    cacheDir,
    mode,
    onError: 'fail',
    pageSize: 4,
    collections: {
      featured: { includes: 2 },
      technology: { includes: { '*.fields.author': { '*.fields.featuredArticle': 1 }, '*.fields.category': 1 } },
      authors: { includes: 0 },
    },
    aliases: { home: { includes: 2 }, about: {} },
    queries: {
      categories: { contentType: 'category', includes: { '*.fields.parent': 1 } },
      wellRated: {
        contentType: 'article',
        filters: [{ '*.fields.rating': { greaterThanEqual: 4 } }],
        includes: 1,
        embedAssets: false,
      },
      slim: { contentType: 'article', fields: 'fields(title,rating,author)', includes: 1 },
      // A mask through a section: the section's other fields are kept from a whole version.
      slimCategories: {
        contentType: 'category',
        fields: 'fields(title,tree(parent))',
        includes: { '*.fields.parent': 1 },
      },
    },
  };
}

const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });

/**
 * Fields the property test moves into sections, by content type: field → section. Relations
 * (followed by includes by level and by field map), assets, localized text and richtext and a
 * masked field stand in sections, beside fields at the top.
 */
const sectionOf: Record<string, Record<string, string>> = {
  article: { summary: 'teaser', cover: 'teaser', related: 'links' },
  author: { bio: 'profile', avatar: 'profile', featuredArticle: 'profile' },
  category: { parent: 'tree', description: 'tree' },
};

/** A document's fields with those of `sectionOf` under their section, in the order they stood. */
function intoSections(doc: SnapshotRecord): void {
  const moved = sectionOf[doc.meta.contentType] ?? {};
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(doc.fields)) {
    const section = moved[name];
    if (section) ((fields[section] ??= {}) as Record<string, unknown>)[name] = value;
    else fields[name] = value;
  }
  doc.fields = fields;
}

/** The generated snapshot with content types that have sections. */
function withSections(snapshot: Snapshot): Snapshot {
  for (const type of snapshot.contentTypes) {
    for (const field of type.fields) {
      const section = sectionOf[type.apiId]?.[field.apiId];
      if (section) field.section = section;
    }
  }
  snapshot.documents.forEach(intoSections);
  return snapshot;
}

/** The object that holds a field of a document: its fields, or its section (made when missing). */
function holderOf(doc: SnapshotRecord, name: string): Record<string, unknown> {
  const section = sectionOf[doc.meta.contentType]?.[name];
  return section ? ((doc.fields[section] ??= {}) as Record<string, unknown>) : doc.fields;
}

/** The edits, each applied with the seeded random source; each returns what it did. */
class Editor {
  readonly #random: () => number;
  readonly snapshot: Snapshot;
  #next = 0;

  constructor(snapshot: Snapshot, seed: number) {
    this.snapshot = snapshot;
    this.#random = mulberry32(seed * 7919 + 13);
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.#random() * (max - min + 1));
  }
  pick<T>(list: readonly T[]): T {
    return list[this.int(0, list.length - 1)]!;
  }
  #of(type: string): SnapshotRecord[] {
    return this.snapshot.documents.filter((d) => d.meta.contentType === type);
  }
  /** Marks a document as edited, as the CMS does. */
  #touch(doc: SnapshotRecord): void {
    doc.meta.updatedAt = new Date().toISOString();
    doc.meta.revision += 1;
  }
  #text(list: readonly string[]): string {
    return `${this.pick(list)} ${this.pick(list)} ${this.int(1, 999)}`;
  }

  readonly edits = {
    'add a document': () => {
      const id = `1500000000000000${String(this.#next++).padStart(2, '0')}`;
      const now = new Date().toISOString();
      const articles = this.#of('article');
      const doc: SnapshotRecord = {
        fields: {
          title: { en_US: this.#text(words), ...(this.int(0, 1) ? { de_DE: this.#text(wörter) } : {}) },
          slug: `new-${id}`,
          rating: this.int(0, 50) / 10,
          featured: this.int(0, 2) === 0,
          section: this.pick(sections),
          author: ref(this.pick(this.#of('author')).meta.id, 'author'),
          category: ref(this.pick(this.#of('category')).meta.id, 'category'),
          related: [ref(this.pick(articles).meta.id, 'article')],
          cover: [ref(this.pick(this.snapshot.assets).meta.id, '_asset')],
        },
        meta: { id, contentType: 'article', revision: 1, tags: [], createdAt: now, updatedAt: now },
      };
      intoSections(doc);
      this.snapshot.documents.push(doc);
      return `added article ${id}`;
    },
    'edit a field': () => {
      const doc = this.pick(this.snapshot.documents);
      const f = doc.fields;
      let what: string;
      if (doc.meta.contentType === 'article') {
        what = this.pick(['rating', 'featured', 'section', 'author', 'related', 'slug']);
        if (what === 'rating') f.rating = this.int(0, 50) / 10;
        if (what === 'featured') f.featured = !f.featured;
        if (what === 'section') f.section = this.pick(sections);
        if (what === 'author') f.author = ref(this.pick(this.#of('author')).meta.id, 'author');
        if (what === 'related')
          holderOf(doc, 'related').related = [
            ref(this.pick(this.#of('article')).meta.id, 'article'),
            ref(this.pick(this.#of('article')).meta.id, 'article'),
          ].filter((r, i, all) => all.findIndex((o) => o.meta.id === r.meta.id) === i);
        if (what === 'slug') f.slug = `slug-${this.int(1, 9999)}`;
      } else if (doc.meta.contentType === 'author') {
        what = this.pick(['name', 'featuredArticle']);
        if (what === 'name') f.name = this.#text(words);
        else holderOf(doc, 'featuredArticle').featuredArticle = ref(this.pick(this.#of('article')).meta.id, 'article');
      } else {
        what = 'slug';
        f.slug = `category-${this.int(1, 9999)}`;
      }
      this.#touch(doc);
      return `edited ${what} of ${doc.meta.contentType} ${doc.meta.id}`;
    },
    'delete a document': () => {
      const targets = new Set(this.snapshot.aliases.map((a) => a.document));
      const candidates = this.snapshot.documents.filter(
        (d) =>
          !targets.has(d.meta.id) &&
          (d.meta.contentType !== 'author' || this.#of('author').length > 1) &&
          (d.meta.contentType !== 'category' || this.#of('category').length > 1),
      );
      const doc = this.pick(candidates);
      this.snapshot.documents = this.snapshot.documents.filter((d) => d !== doc);
      return `deleted ${doc.meta.contentType} ${doc.meta.id}`;
    },
    're-point an alias': () => {
      const alias = this.pick(this.snapshot.aliases.filter((a) => a.apiId === 'home' || a.apiId === 'about'));
      alias.document = this.pick(this.snapshot.documents).meta.id;
      return `re-pointed alias ${alias.apiId} to ${alias.document}`;
    },
    "change a collection's stored filter": () => {
      const collections = this.snapshot.collections as { apiId: string; filters?: unknown[] }[];
      const collection = this.pick(collections.filter((c) => c.apiId === 'featured' || c.apiId === 'technology'));
      if (collection.apiId === 'featured') {
        const floor = this.int(0, 5);
        collection.filters = this.int(0, 1)
          ? [{ 'article.fields.rating': { greaterThanEqual: floor } }]
          : [
              { 'article.fields.featured': { equal: true } },
              { or: { 'article.fields.rating': { greaterThanEqual: floor } } },
            ];
      } else {
        collection.filters = [{ '*.fields.section': { in: [this.pick(sections), this.pick(sections)] } }];
      }
      return `changed the stored filter of ${collection.apiId} to ${JSON.stringify(collection.filters)}`;
    },
    'change one translation': () => {
      const candidates = this.snapshot.documents.flatMap((doc) =>
        ['title', 'summary', 'body', 'bio', 'description']
          .filter((name) => {
            const value = holderOf(doc, name)[name];
            return value && typeof value === 'object';
          })
          .map((name) => ({ doc, name })),
      );
      const { doc, name } = this.pick(candidates);
      const values = holderOf(doc, name)[name] as Record<string, unknown>;
      const locale = this.pick(['de_DE', 'de_CH', 'en_US']);
      const text = this.#text(locale === 'en_US' ? words : wörter);
      let what: string;
      if (values[locale] !== undefined && Object.keys(values).length > 1 && this.int(0, 2) === 0) {
        delete values[locale];
        what = 'removed';
      } else {
        values[locale] = name === 'body' || name === 'bio' ? { html: `<p>${text}</p>`, plain: text } : text;
        what = 'changed';
      }
      this.#touch(doc);
      return `${what} the ${locale} ${name} of ${doc.meta.contentType} ${doc.meta.id}`;
    },
    'edit a title without moving updatedAt': () => {
      // Two edits in one millisecond, or a CMS that keeps seconds: only the revision says so.
      const doc = this.pick(this.#of('article'));
      const titles = holderOf(doc, 'title').title as Record<string, unknown>;
      titles.en_US = this.#text(words);
      doc.meta.revision += 1;
      return `edited the title of article ${doc.meta.id}, its updatedAt kept`;
    },
    'break a reference': () => {
      const doc = this.pick(this.#of('article'));
      const missing = `9900000000000000${String(this.#next++).padStart(2, '0')}`;
      if (this.int(0, 1)) doc.fields.author = ref(missing, 'author');
      else
        holderOf(doc, 'related').related = [
          ...((holderOf(doc, 'related').related as unknown[] | undefined) ?? []),
          ref(missing, 'article'),
        ];
      this.#touch(doc);
      return `broke a reference of article ${doc.meta.id} (to ${missing})`;
    },
  };

  #order: (() => string)[] | undefined;

  /** One random edit: every kind once, in a seeded order, then any. */
  step(): string {
    if (!this.#order) {
      const kinds = Object.values(this.edits);
      this.#order = [];
      while (kinds.length > 0) this.#order.push(kinds.splice(this.int(0, kinds.length - 1), 1)[0]!);
    }
    return (this.#order.shift() ?? this.pick(Object.values(this.edits)))();
  }
}

interface View {
  ids: string[];
  records: Record<string, StoredRecord>;
  members: Record<string, string[]>;
  closures: Record<string, string[]>;
  dangling: string[];
  sourceDangling: Record<string, string[]>;
}

function viewOf(result: SyncResult): View {
  const { cache } = result;
  const keys = cache.sources().map((source) => source.key);
  const members = Object.fromEntries(keys.map((k) => [k, cache.members(k)]));
  const records = Object.fromEntries(recordsOf(result));
  const refs = (list: { from: string; field: string; id: string }[]) =>
    list.map((d) => `${d.from}.${d.field}→${d.id}`).sort();
  return {
    ids: Object.keys(records).sort(),
    records,
    members: Object.fromEntries(keys.map((k) => [k, members[k]!.map((m) => m.id)])),
    closures: Object.fromEntries(keys.map((k) => [k, [...members[k]!.map((m) => m.id), ...cache.included(k)].sort()])),
    dangling: refs(cache.dangling()),
    sourceDangling: Object.fromEntries(keys.map((k) => [k, refs(cache.dangling(k))])),
  };
}

/** The records of a committed cache as the includes walk reads them. */
const nodesOf =
  (cache: CacheReader): NodeReader =>
  (ids) => {
    const types = cache.contentTypesOf(new Set(ids));
    return new Map(
      [...types].map(([id, contentType]) => [id, { id, contentType, digest: '', references: cache.references(id) }]),
    );
  };

/** The tables of a cache that do not depend on when it was synced. */
function tablesOf(dir: string) {
  const { record, body, reference, member, included, dangling } = cacheContent(dir);
  return { record, body, reference, member, included, dangling };
}

const minus = (a: Iterable<string>, b: Iterable<string>) => {
  const drop = new Set(b);
  return [...a].filter((x) => !drop.has(x)).sort();
};

/** The changeset A must report for a step: exactly the difference between its two caches. */
function expectedChanges(before: View, after: View) {
  const common = after.ids.filter((id) => before.records[id]);
  return {
    records: {
      added: minus(after.ids, before.ids),
      updated: common.filter((id) => JSON.stringify(before.records[id]) !== JSON.stringify(after.records[id])).sort(),
      removed: minus(before.ids, after.ids),
    },
    membership: Object.fromEntries(
      Object.keys(after.members).map((k) => [
        k,
        { added: minus(after.members[k]!, before.members[k]!), removed: minus(before.members[k]!, after.members[k]!) },
      ]),
    ),
  };
}

afterAll(() => closeAllPools());

describe('an incremental sync ends with the same cache as a full sync into an empty folder', () => {
  for (const seed of seeds) {
    it(`after each of ${steps} random edits (seed ${seed})`, async () => {
      const snapshot = withSections(generateSnapshot({ documents: 24, seed, apiId: 'prop', key }));
      const server = await startServer({ snapshots: [structuredClone(snapshot)], watch: false });
      const dirA = await mkdtemp(join(tmpdir(), `sync-prop-a-${seed}-`));
      const dirB = await mkdtemp(join(tmpdir(), `sync-prop-b-${seed}-`));
      const quiet = { info: () => {}, warn: () => {} };
      try {
        let a = viewOf(await sync(configOf(server.url, dirA, 'incremental'), quiet));
        const editor = new Editor(snapshot, seed);
        const history: string[] = [];
        for (let step = 1; step <= steps; step++) {
          const edit = editor.step();
          history.push(`${step}: ${edit}`);
          const where = `seed ${seed}, step ${step} (${edit}); edits so far:\n  ${history.join('\n  ')}\n`;
          await server.replaceSnapshot(structuredClone(snapshot));

          const incremental = await sync(configOf(server.url, dirA, 'incremental'), quiet);
          // A cold sync into an empty folder: nothing it stores can come from an earlier sync.
          await rm(dirB, { recursive: true, force: true });
          const full = await sync(configOf(server.url, dirB, 'fresh'), quiet);
          const before = a;
          a = viewOf(incremental);
          const b = viewOf(full);

          expect(a.ids, `record ids, ${where}`).toEqual(b.ids);
          expect(a.members, `members, ${where}`).toEqual(b.members);
          expect(a.closures, `closures, ${where}`).toEqual(b.closures);
          expect(a.dangling, `dangling references, ${where}`).toEqual(b.dangling);
          expect(a.sourceDangling, `dangling references by source, ${where}`).toEqual(b.sourceDangling);
          for (const id of b.ids) expect(a.records[id], `record ${id}, ${where}`).toEqual(b.records[id]);
          // What the next sync works from, stamps of the members included: the same tables, row for row.
          expect(tablesOf(dirA), `the cache's tables, ${where}`).toEqual(tablesOf(dirB));

          const expected = expectedChanges(before, a);
          const { records, sources } = incremental.changeset;
          expect(
            {
              added: [...records.added].sort(),
              updated: [...records.updated].sort(),
              removed: [...records.removed].sort(),
            },
            `changeset records, ${where}`,
          ).toEqual(expected.records);
          for (const [source, changes] of Object.entries(expected.membership)) {
            expect(
              { added: [...sources[source]!.added].sort(), removed: [...sources[source]!.removed].sort() },
              `changeset of ${source}, ${where}`,
            ).toEqual(changes);
          }
          // Updated: the members kept whose includes reach a record that changed, as the includes walk finds them.
          const changed = new Set([...records.added, ...records.updated, ...records.removed]);
          for (const source of configSources(parseSyncConfig(configOf(server.url, dirA, 'incremental')))) {
            const options = { includes: source.options.includes, embedAssets: source.options.embedAssets !== false };
            const kept = a.members[source.key]!.filter((id) => before.members[source.key]!.includes(id));
            const reaching = kept.filter((id) => {
              const walked = reach([id], options, nodesOf(incremental.cache));
              return [...walked.nodes.keys(), ...walked.missing.map((ref) => ref.id)].some((x) => changed.has(x));
            });
            expect([...sources[source.key]!.updated].sort(), `updated members of ${source.key}, ${where}`).toEqual(
              reaching.sort(),
            );
          }
        }
      } finally {
        await server.close();
        await rm(dirA, { recursive: true, force: true });
        await rm(dirB, { recursive: true, force: true });
      }
    });
  }
});
