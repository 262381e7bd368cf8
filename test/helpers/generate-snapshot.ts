import { open, rename, rm } from 'node:fs/promises';
import type { Snapshot, SnapshotRecord } from '../../src/wire/snapshot-format.ts';
import { Random } from './random.ts';

/**
 * A seeded generator of realistic repository snapshots (spec/read-api.md §1) for benchmarks and
 * tests: three locales with translation gaps, articles with every field type, authors and
 * categories, relations that form cycles, a few dangling references, a few hundred assets,
 * collections with stored filters and sorting, and aliases. The same options give the same
 * snapshot, byte for byte. Articles come in two weights: full (the default) and light, with less
 * text, fewer related articles and no gallery (see `GenerateOptions.weight`).
 *
 * @example
 * const snapshot = generateSnapshot({ documents: 10_000, seed: 7 });
 * const lighter = generateSnapshot({ documents: 10_000, seed: 7, weight: 'light' });
 * await writeSnapshot('/tmp/bench.json', snapshot);
 */

export interface GenerateOptions {
  /** How many documents (articles, authors and categories together); at least 7. */
  documents: number;
  /** Seed of the generator; default 1. */
  seed?: number;
  /** The repository's apiId; default `bench`. */
  apiId?: string;
  /** The one API key of the repository; default `bench-key`. */
  key?: string;
  /**
   * How heavy an article is; default `full`.
   *
   * - `full`: a body of two or three richtext paragraphs, in English and in most German
   *   translations, summaries of 12 to 20 words, up to 4 related articles, a gallery of 1 to 3
   *   assets in 40% of the articles.
   * - `light`: a body of one short paragraph, in English only, summaries of 5 to 8 words, up to 2
   *   related articles, no gallery. Authors, categories, assets, tags, locales and the other
   *   fields are as in `full`.
   *
   * A cold sync of `all` (includes 1, embedAssets, every locale) of a light repository downloads
   * 40 to 45% of the bytes of a full one of the same size (44% at 2,000 documents, 40% at 10,000):
   * the related articles come again as includes and the assets embedded, so less text alone
   * would not halve it. `full` gives the snapshots generated before there were weights, byte for
   * byte; a light snapshot is its own (it draws fewer random numbers), not a full one trimmed.
   */
  weight?: Weight;
  /**
   * How many assets the documents draw from; default a twenty-fifth of the documents, from 20 to
   * 400. As many as the articles gives a repository with about one asset per article.
   */
  assets?: number;
}

export type Weight = 'full' | 'light';
export const weights: readonly Weight[] = ['full', 'light'];

/** What an article carries, by weight (see `GenerateOptions.weight`). */
interface ArticleShape {
  /** Paragraphs of the body, from min to max. */
  paragraphs: [number, number];
  /** Sentences in a paragraph: 2 for full (a long one and a shorter one), 1 for light. */
  sentences: 1 | 2;
  /** Words of a summary, from min to max. */
  summaryWords: [number, number];
  /** Whether German translations carry the body too. */
  germanBody: boolean;
  /** At most this many related articles. */
  related: number;
  /** Whether some articles have a gallery. */
  gallery: boolean;
}
const articleShapes: Record<Weight, ArticleShape> = {
  full: { paragraphs: [2, 3], sentences: 2, summaryWords: [12, 20], germanBody: true, related: 4, gallery: true },
  light: { paragraphs: [1, 1], sentences: 1, summaryWords: [5, 8], germanBody: false, related: 2, gallery: false },
};

const english = (
  'the a of and to in for on with about from after before over new old first last great small local city country ' +
  'market river garden school music festival season harvest winter summer spring autumn morning evening night ' +
  'community project report plan study story review guide journey tour map bridge station road train bike ' +
  'energy climate water forest mountain lake coast island village street house kitchen bread coffee apple cheese ' +
  'team player match league record score goal coach fans stadium data cloud model network software system design ' +
  'open quiet bright careful simple modern careful honest quick slow strong gentle early late every many few ' +
  'builds opens finds shows brings makes takes keeps moves grows changes starts ends meets visits tells explains'
).split(' ');
const german = (
  'der die das ein eine und zu im für auf mit über vom nach vor neue alte erste letzte große kleine lokale Stadt ' +
  'Markt Fluss Garten Schule Musik Festival Saison Ernte Winter Sommer Frühling Herbst Morgen Abend Nacht ' +
  'Gemeinde Projekt Bericht Plan Studie Geschichte Rückblick Führer Reise Brücke Bahnhof Straße Zug Fahrrad ' +
  'Energie Klima Wasser Wald Berg See Küste Insel Dorf Haus Küche Brot Kaffee Apfel Käse Mannschaft Spiel Liga ' +
  'Rekord Tor Trainer Stadion Daten Wolke Modell Netz System offen ruhig hell einfach modern ehrlich schnell ' +
  'langsam stark früh spät viele wenige baut öffnet findet zeigt bringt macht nimmt hält bewegt wächst beginnt'
).split(' ');
const sections = ['politics', 'business', 'technology', 'science', 'culture', 'sport', 'travel', 'food'] as const;
const topics = [
  'ai',
  'cloud',
  'climate',
  'energy',
  'health',
  'education',
  'mobility',
  'housing',
  'music',
  'film',
] as const;
const tagNames = ['news', 'feature', 'opinion', 'evergreen', 'draft', 'archived', 'sponsored'] as const;
const roles = ['editor', 'reporter', 'columnist', 'photographer'] as const;
const firstNames = [
  'Anna',
  'Ben',
  'Clara',
  'David',
  'Elif',
  'Felix',
  'Greta',
  'Hugo',
  'Ines',
  'Jonas',
  'Kira',
  'Luca',
  'Mara',
  'Noah',
  'Olga',
  'Paul',
];
const lastNames = [
  'Meier',
  'Schmidt',
  'Keller',
  'Weber',
  'Fischer',
  'Huber',
  'Brunner',
  'Wagner',
  'Baumann',
  'Frei',
  'Moser',
  'Graf',
];

const locales = [{ key: 'en_US' }, { key: 'de_DE', fallback: 'en_US' }, { key: 'de_CH', fallback: 'de_DE' }];
const start2021 = Date.UTC(2021, 0, 1);
const fourYears = 4 * 365 * 24 * 3600 * 1000;

const documentId = (i: number) => `10000${String(i).padStart(13, '0')}`;
const assetId = (i: number) => `20000${String(i).padStart(13, '0')}`;
const missingId = (i: number) => `99999${String(i).padStart(13, '0')}`;
const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });

function words(random: Random, list: readonly string[], min: number, max: number): string {
  const count = random.int(min, max);
  let text = random.pick(list);
  for (let i = 1; i < count; i++) text += ` ${random.pick(list)}`;
  return text;
}
const capitalise = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);
const sentence = (random: Random, list: readonly string[], min: number, max: number) =>
  `${capitalise(words(random, list, min, max))}.`;
/** Swiss German spelling: no ß. */
const swiss = (text: string) => text.replaceAll('ß', 'ss');

/** Paragraphs of a long sentence and, unless `sentences` is 1, a shorter one; the second paragraph in bold. */
function richtext(
  random: Random,
  list: readonly string[],
  paragraphs: number,
  sentences: 1 | 2 = 2,
): { html: string; plain: string } {
  const parts: string[] = [];
  for (let i = 0; i < paragraphs; i++) {
    const first = sentence(random, list, 5, 9);
    parts.push(sentences === 1 ? first : `${first} ${sentence(random, list, 4, 8)}`);
  }
  return {
    html: parts.map((p, i) => (i === 1 ? `<p><strong>${p}</strong></p>` : `<p>${p}</p>`)).join(''),
    plain: parts.join('\n\n'),
  };
}

function timestamps(random: Random): { createdAt: string; updatedAt: string } {
  const created = start2021 + Math.floor(random.next() * fourYears);
  const updated = random.chance(0.4) ? created : created + Math.floor(random.next() * 200 * 24 * 3600 * 1000);
  return { createdAt: new Date(created).toISOString(), updatedAt: new Date(updated).toISOString() };
}

function meta(random: Random, id: string, contentType: string, tags: string[]): SnapshotRecord['meta'] {
  return { id, contentType, revision: random.int(1, 12), tags, ...timestamps(random) };
}

const colour = (random: Random) => `#${random.int(0, 0xffffff).toString(16).padStart(6, '0')}`;
const location = (random: Random) => ({
  lat: Math.round((45 + random.next() * 10) * 1e4) / 1e4,
  lng: Math.round((5 + random.next() * 12) * 1e4) / 1e4,
});

export const contentTypes: Snapshot['contentTypes'] = [
  {
    apiId: 'article',
    name: 'Article',
    fields: [
      { apiId: 'title', type: 'text', localized: true },
      { apiId: 'slug', type: 'text' },
      { apiId: 'summary', type: 'text', localized: true },
      { apiId: 'body', type: 'richtext', localized: true },
      { apiId: 'readingTime', type: 'number' },
      { apiId: 'rating', type: 'number' },
      { apiId: 'publishedAt', type: 'date' },
      { apiId: 'featured', type: 'boolean' },
      { apiId: 'section', type: 'select' },
      { apiId: 'topics', type: 'select' },
      { apiId: 'color', type: 'color' },
      { apiId: 'place', type: 'location' },
      { apiId: 'author', type: 'relation' },
      { apiId: 'category', type: 'relation' },
      { apiId: 'related', type: 'relation' },
      { apiId: 'cover', type: 'asset' },
      { apiId: 'gallery', type: 'asset', localized: true },
      { apiId: 'extra', type: 'json' },
    ],
  },
  {
    apiId: 'author',
    name: 'Author',
    fields: [
      { apiId: 'name', type: 'text' },
      { apiId: 'bio', type: 'richtext', localized: true },
      { apiId: 'role', type: 'select' },
      { apiId: 'email', type: 'text' },
      { apiId: 'avatar', type: 'asset' },
      { apiId: 'featuredArticle', type: 'relation' },
    ],
  },
  {
    apiId: 'category',
    name: 'Category',
    fields: [
      { apiId: 'title', type: 'text', localized: true },
      { apiId: 'slug', type: 'text' },
      { apiId: 'description', type: 'text', localized: true },
      { apiId: 'parent', type: 'relation' },
      { apiId: 'color', type: 'color' },
    ],
  },
];

/** Localised values with realistic gaps: English nearly always, German often, Swiss German rarely. */
function localized<T>(en: T | undefined, de: T | undefined, ch: T | undefined): Record<string, T> | undefined {
  const out: Record<string, T> = {};
  if (en !== undefined) out.en_US = en;
  if (de !== undefined) out.de_DE = de;
  if (ch !== undefined) out.de_CH = ch;
  return Object.keys(out).length > 0 ? out : undefined;
}

interface Counts {
  articles: number;
  authors: number;
  categories: number;
  assets: number;
}

function countsFor(documents: number, assets?: number): Counts {
  if (!Number.isInteger(documents) || documents < 7)
    throw new Error(`generateSnapshot needs documents to be a whole number of 7 or more, got ${documents}`);
  if (assets !== undefined && (!Number.isInteger(assets) || assets < 1))
    throw new Error(`generateSnapshot needs assets to be a whole number of 1 or more, got ${assets}`);
  const authors = Math.max(3, Math.round(documents * 0.02));
  const categories = Math.max(3, Math.min(60, Math.round(documents * 0.005)));
  return {
    articles: documents - authors - categories,
    authors,
    categories,
    assets: assets ?? Math.max(20, Math.min(400, Math.round(documents / 25))),
  };
}

function article(random: Random, i: number, counts: Counts, shape: ArticleShape): SnapshotRecord {
  const id = documentId(i);
  const hasDe = random.chance(0.7);
  const hasCh = hasDe && random.chance(0.15);
  const titleEn = capitalise(words(random, english, 4, 8));
  const titleDe = hasDe ? capitalise(words(random, german, 4, 8)) : undefined;
  const summaryEn = random.chance(0.95) ? sentence(random, english, ...shape.summaryWords) : undefined; // sometimes only German
  const summaryDe = hasDe && random.chance(0.85) ? sentence(random, german, ...shape.summaryWords) : undefined;
  const paragraphs = random.int(...shape.paragraphs);
  const bodyEn = richtext(random, english, paragraphs, shape.sentences);
  const bodyDe =
    shape.germanBody && hasDe && random.chance(0.8) ? richtext(random, german, paragraphs, shape.sentences) : undefined;
  const fields: Record<string, unknown> = {
    title: localized(titleEn, titleDe, hasCh && titleDe ? swiss(titleDe) : undefined),
    slug: `${titleEn.toLowerCase().replaceAll(' ', '-')}-${i}`,
    body: localized(
      bodyEn,
      bodyDe,
      hasCh && bodyDe && random.chance(0.5) ? { html: swiss(bodyDe.html), plain: swiss(bodyDe.plain) } : undefined,
    ),
    readingTime: random.int(1, 20),
    rating: Math.round(random.next() * 50) / 10,
    publishedAt: new Date(start2021 + Math.floor(random.next() * fourYears)).toISOString(),
    featured: random.chance(0.1),
    section: random.pick(sections),
    topics: random.some(topics, random.int(0, 3)),
    color: colour(random),
    author: ref(documentId(counts.articles + random.int(0, counts.authors - 1)), 'author'),
    category: ref(documentId(counts.articles + counts.authors + random.int(0, counts.categories - 1)), 'category'),
    cover: [ref(assetId(random.int(0, counts.assets - 1)), '_asset')],
  };
  const summary = localized(
    summaryEn,
    summaryDe,
    hasCh && summaryDe && random.chance(0.5) ? swiss(summaryDe) : undefined,
  );
  if (summary) fields.summary = summary;
  if (random.chance(0.3)) fields.place = location(random);
  // Related articles point both ways often enough to form cycles (a → b → a, a → b → c → a).
  const related: ReturnType<typeof ref>[] = [];
  for (let n = random.int(0, shape.related); n > 0; n--) {
    const near = i + random.int(-20, 20);
    const target = near >= 0 && near < counts.articles && near !== i ? near : random.int(0, counts.articles - 1);
    if (target !== i) related.push(ref(documentId(target), 'article'));
  }
  if (random.chance(0.005)) related.push(ref(missingId(i), 'article')); // dangling: its target was deleted
  if (related.length > 0) fields.related = related;
  if (shape.gallery && random.chance(0.4)) {
    const gallery = Array.from({ length: random.int(1, 3) }, () =>
      ref(assetId(random.int(0, counts.assets - 1)), '_asset'),
    );
    fields.gallery = localized(gallery, random.chance(0.3) ? gallery.slice(0, 1) : undefined, undefined);
  }
  if (random.chance(0.2))
    fields.extra = {
      source: random.pick(['wire', 'staff', 'guest']),
      priority: random.int(1, 5),
      embargo: random.chance(0.1),
    };
  const tags = random.some(tagNames, random.int(0, 3));
  return { fields, meta: meta(random, id, 'article', tags) };
}

function author(random: Random, i: number, counts: Counts): SnapshotRecord {
  const first = random.pick(firstNames);
  const last = random.pick(lastNames);
  const bioEn = richtext(random, english, 1);
  const fields: Record<string, unknown> = {
    name: `${first} ${last}`,
    bio: localized(bioEn, random.chance(0.6) ? richtext(random, german, 1) : undefined, undefined),
    role: random.pick(roles),
    email: `${first}.${last}.${i}@example.com`.toLowerCase(),
    avatar: [ref(assetId(random.int(0, counts.assets - 1)), '_asset')],
    // An author's featured article is written by someone, maybe this author: another cycle.
    featuredArticle: ref(documentId(random.int(0, counts.articles - 1)), 'article'),
  };
  return { fields, meta: meta(random, documentId(i), 'author', []) };
}

function category(random: Random, i: number, counts: Counts, k: number): SnapshotRecord {
  const titleEn = capitalise(words(random, english, 1, 2));
  const titleDe = random.chance(0.8) ? capitalise(words(random, german, 1, 2)) : undefined;
  const fields: Record<string, unknown> = {
    title: localized(titleEn, titleDe, undefined),
    slug: `${titleEn.toLowerCase().replaceAll(' ', '-')}-${k}`,
    description: localized(
      sentence(random, english, 6, 12),
      titleDe ? sentence(random, german, 6, 12) : undefined,
      undefined,
    ),
    color: colour(random),
  };
  // The first three categories are roots; the others hang below an earlier one.
  if (k >= 3) fields.parent = ref(documentId(counts.articles + counts.authors + random.int(0, k - 1)), 'category');
  return { fields, meta: meta(random, documentId(i), 'category', []) };
}

function asset(random: Random, i: number): SnapshotRecord {
  const isImage = random.chance(0.9);
  const name = `${words(random, english, 2, 3).replaceAll(' ', '-')}-${i}`;
  const fileName = isImage ? `${name}.jpg` : `${name}.pdf`;
  const width = random.int(4, 40) * 100;
  const file = {
    url: `https://images.example.com/bench/${assetId(i)}/${fileName}`,
    fileName,
    mimeType: isImage ? 'image/jpeg' : 'application/pdf',
    size: random.int(20_000, 4_000_000),
    ...(isImage ? { width, height: Math.round((width * random.pick([9, 10, 12, 16])) / 16) } : {}),
  };
  const titleEn = capitalise(words(random, english, 2, 5));
  const fields: Record<string, unknown> = {
    title: localized(titleEn, random.chance(0.5) ? capitalise(words(random, german, 2, 5)) : undefined, undefined),
    file,
  };
  if (random.chance(0.6)) fields.description = localized(sentence(random, english, 5, 12), undefined, undefined);
  return { fields, meta: meta(random, assetId(i), '_asset', []) };
}

/** Generates a valid snapshot with about `documents` documents of the given weight; see the module comment. */
export function generateSnapshot(options: GenerateOptions): Snapshot {
  const {
    documents: total,
    seed = 1,
    apiId = 'bench',
    key = 'bench-key',
    weight = 'full',
    assets: assetCount,
  } = options;
  const shape = articleShapes[weight];
  if (!shape) throw new Error(`generateSnapshot needs weight to be ${weights.join(' or ')}, got ${String(weight)}`);
  const counts = countsFor(total, assetCount);
  const random = new Random(seed);
  const documents: SnapshotRecord[] = new Array(total);
  for (let i = 0; i < counts.articles; i++) documents[i] = article(random, i, counts, shape);
  for (let k = 0; k < counts.authors; k++) documents[counts.articles + k] = author(random, counts.articles + k, counts);
  for (let k = 0; k < counts.categories; k++) {
    const i = counts.articles + counts.authors + k;
    documents[i] = category(random, i, counts, k);
  }
  const assets = Array.from({ length: counts.assets }, (_, i) => asset(random, i));
  return {
    repository: {
      id: '700000000000000001',
      apiId,
      name: `Benchmark (${total} documents${weight === 'full' ? '' : `, ${weight}`})`,
      defaultLocale: 'en_US',
      locales,
      apiKeys: [key],
    },
    contentTypes,
    documents,
    assets,
    collections: [
      { apiId: 'latest', contentType: 'article', excludeTags: ['draft'], sorting: { 'fields.publishedAt': 'DESC' } },
      {
        apiId: 'featured',
        contentType: 'article',
        filters: [{ 'article.fields.featured': { equal: true } }],
        sorting: { 'fields.rating': 'DESC', 'fields.title': 'ASC' },
      },
      {
        apiId: 'technology',
        filters: [
          { '*.fields.section': { equal: 'technology' } },
          { or: { '*.fields.topics': { in: ['ai', 'cloud'] } } },
        ],
        sorting: { 'fields.publishedAt': 'DESC' },
      },
      { apiId: 'authors', contentType: 'author', sorting: { 'fields.name': 'ASC' } },
    ],
    aliases: [
      { apiId: 'home', document: documentId(0) },
      { apiId: 'imprint', document: documentId(Math.floor(counts.articles / 2)) },
      { apiId: 'about', document: documentId(counts.articles) },
      { apiId: 'top-category', document: documentId(counts.articles + counts.authors) },
    ],
  };
}

/**
 * Writes a snapshot as JSON, record by record (no single huge string), to a temporary file that
 * is then renamed over `path`, so a server watching `path` never reads half a file.
 */
export async function writeSnapshot(path: string, snapshot: Snapshot): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`;
  const file = await open(temporary, 'w');
  try {
    const { documents, assets, ...rest } = snapshot;
    const head = JSON.stringify(rest);
    await file.write(`${head.slice(0, -1)},"documents":[`);
    await writeRecords(file, documents);
    await file.write('],"assets":[');
    await writeRecords(file, assets);
    await file.write(']}\n');
    await file.close();
    await rename(temporary, path);
  } catch (error) {
    await file.close().catch(() => {});
    await rm(temporary, { force: true });
    throw error;
  }
}

async function writeRecords(file: Awaited<ReturnType<typeof open>>, records: SnapshotRecord[]): Promise<void> {
  const batch = 500;
  for (let i = 0; i < records.length; i += batch) {
    const chunk = records
      .slice(i, i + batch)
      .map((r) => JSON.stringify(r))
      .join(',');
    await file.write(i === 0 ? chunk : `,${chunk}`);
  }
}
