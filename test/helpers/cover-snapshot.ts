import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { Random } from './random.ts';

/**
 * `cover`: a generated, deterministic repository snapshot that covers the snapshot format of
 * spec/read-api.md §1: every field type, localized (text, richtext, number, select, asset) and
 * not, four locales with a fallback chain (de_CH → de_DE → en_US, fr_FR → en_US) and gaps
 * (locales without a value, fields absent, null values, a localized field with no locale at
 * all), tags, three content types whose documents list their fields in the content type's
 * order, dangling references, 20-digit ids, ties on createdAt, assets whose files are tiny PNGs
 * beside the snapshot (`images/<name>.png`, width and height as in `fields.file`), richtext
 * images pointing at those files, two aliases and three collections. The first document of each
 * content type has every field in every locale, so a copy that infers a content model from what
 * it sees sees every field with a value.
 */

export type CoverFieldType =
  | 'text'
  | 'richtext'
  | 'number'
  | 'date'
  | 'boolean'
  | 'location'
  | 'select'
  | 'color'
  | 'relation'
  | 'asset'
  | 'json';
export interface CoverField {
  apiId: string;
  type: CoverFieldType;
  localized?: boolean;
  /** The section the field stands in: documents hold it under `fields.<section>`. */
  section?: string;
}
export interface CoverContentType {
  apiId: string;
  name?: string;
  fields: CoverField[];
}
export interface CoverMeta {
  id: string;
  contentType: string;
  revision: number;
  tags: string[];
  createdAt: string;
  updatedAt: string;
}
export interface CoverRecord {
  fields: Record<string, unknown>;
  meta: CoverMeta;
}
export interface CoverCollection {
  apiId: string;
  name?: string;
  contentType?: string;
  filters?: Record<string, unknown>[];
  includeTags?: string[];
  excludeTags?: string[];
  sorting?: Record<string, string>;
}
/** The JSON of a snapshot file (spec §1). */
export interface SnapshotJson {
  repository: {
    id: string;
    apiId: string;
    name: string;
    defaultLocale: string;
    locales: { key: string; fallback?: string }[];
    apiKeys: string[];
  };
  contentTypes: CoverContentType[];
  documents: CoverRecord[];
  assets: CoverRecord[];
  collections: CoverCollection[];
  aliases: { apiId: string; document: string }[];
}
export interface CoverSnapshot {
  snapshot: SnapshotJson;
  /** Files to write beside the snapshot file, by their path relative to its folder. */
  files: Record<string, Buffer>;
  /** The repository's API key. */
  key: string;
}

export const coverApiId = 'cover';
export const coverKey = 'cover-read-key-5f0c1e2d3b4a6978';

const locales = [
  { key: 'en_US' },
  { key: 'de_DE', fallback: 'en_US' },
  { key: 'de_CH', fallback: 'de_DE' },
  { key: 'fr_FR', fallback: 'en_US' },
];
type Locale = 'en_US' | 'de_DE' | 'de_CH' | 'fr_FR';
const localeKeys = locales.map((l) => l.key as Locale);
/** How often a locale has its own value in a document that is not a full one. */
const localeChance: Record<Locale, number> = { en_US: 0.85, de_DE: 0.6, de_CH: 0.25, fr_FR: 0.45 };

const words: Record<Locale, string[]> = {
  en_US: [
    'apple',
    'harbor',
    'winter',
    'garden',
    'river',
    'market',
    'summer',
    'forest',
    'bridge',
    'lantern',
    'orchard',
    'meadow',
  ],
  de_DE: [
    'Apfel',
    'Hafen',
    'Winter',
    'Garten',
    'Fluss',
    'Markt',
    'Sommer',
    'Wald',
    'Brücke',
    'Laterne',
    'Äpfel',
    'Öfen',
  ],
  de_CH: [
    'Velo',
    'Znüni',
    'Rüebli',
    'Chuchichäschtli',
    'Grüezi',
    'Trottoir',
    'Glace',
    'Natel',
    'Poulet',
    'Zmorge',
    'Gipfeli',
    'Müesli',
  ],
  fr_FR: [
    'pomme',
    'port',
    'hiver',
    'jardin',
    'rivière',
    'marché',
    'été',
    'forêt',
    'pont',
    'lanterne',
    'verger',
    'prairie',
  ],
};
const categories: Record<Locale, string[]> = {
  en_US: ['news', 'guide', 'review'],
  de_DE: ['Nachrichten', 'Ratgeber', 'Kritik'],
  de_CH: ['Neuigkeiten', 'Tipps', 'Rezension'],
  fr_FR: ['actualités', 'guide', 'critique'],
};
const kinds: Record<Locale, string[]> = {
  en_US: ['talk', 'workshop', 'concert', 'tour'],
  de_DE: ['Vortrag', 'Werkstatt', 'Konzert', 'Führung'],
  de_CH: ['Referat', 'Kurs', 'Konzert', 'Rundgang'],
  fr_FR: ['conférence', 'atelier', 'concert', 'visite'],
};
const labels = ['red', 'green', 'blue', 'small', 'large'];
const tagNames = ['featured', 'news', 'draft', 'archive', 'sale'];
const assetNames = ['apples', 'harbor', 'winter', 'garden', 'river', 'market'];

export const coverContentTypes: CoverContentType[] = [
  {
    apiId: 'author',
    name: 'Author',
    fields: [
      { apiId: 'name', type: 'text' },
      { apiId: 'bio', type: 'richtext' },
      { apiId: 'age', type: 'number' },
      { apiId: 'avatar', type: 'asset' },
      { apiId: 'born', type: 'date' },
      { apiId: 'active', type: 'boolean' },
      { apiId: 'mentor', type: 'relation' },
      { apiId: 'links', type: 'json' },
    ],
  },
  {
    apiId: 'article',
    name: 'Article',
    fields: [
      { apiId: 'title', type: 'text', localized: true },
      { apiId: 'body', type: 'richtext', localized: true },
      { apiId: 'rating', type: 'number' },
      { apiId: 'price', type: 'number', localized: true },
      { apiId: 'publishedAt', type: 'date' },
      { apiId: 'featured', type: 'boolean' },
      { apiId: 'place', type: 'location' },
      { apiId: 'category', type: 'select', localized: true },
      { apiId: 'labels', type: 'select' },
      { apiId: 'accent', type: 'color' },
      { apiId: 'author', type: 'relation' },
      { apiId: 'related', type: 'relation' },
      { apiId: 'images', type: 'asset', localized: true },
      { apiId: 'extra', type: 'json' },
    ],
  },
  {
    apiId: 'event',
    name: 'Event',
    fields: [
      { apiId: 'title', type: 'text', localized: true },
      { apiId: 'startsAt', type: 'date' },
      { apiId: 'venue', type: 'location' },
      { apiId: 'capacity', type: 'number' },
      { apiId: 'kinds', type: 'select', localized: true },
      { apiId: 'tint', type: 'color' },
      { apiId: 'host', type: 'relation' },
      { apiId: 'speakers', type: 'relation' },
      { apiId: 'gallery', type: 'asset' },
      { apiId: 'sold', type: 'boolean' },
      { apiId: 'details', type: 'json' },
    ],
  },
];

const crcOf = (type: string, data: Buffer) => {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, 'latin1'), data])));
  return out;
};
const chunk = (type: string, data: Buffer) => {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  return Buffer.concat([length, Buffer.from(type, 'latin1'), data, crcOf(type, data)]);
};

/** A valid RGB PNG of the given size, its pixels drawn from `seed`. */
export function tinyPng(width: number, height: number, seed: number): Buffer {
  const rng = new Random(seed);
  const rows = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width * 3; x++) rows[y * (width * 3 + 1) + 1 + x] = rng.int(0, 255);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits per channel, RGB, deflate, no filter, no interlace
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    signature,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });
const pad = (n: number | string, width: number) => String(n).padStart(width, '0');
const capital = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/** Dangling references: ids no record of the snapshot has. */
export const danglingIds = { author: '299999999999999999', article: '199999999999999999', asset: '399999999999999999' };

/**
 * Generates the `cover` snapshot. `documents` (default 60, at least 12) is the number of
 * documents: a fifth authors, three tenths events, the rest articles; `seed` (default 1) draws
 * everything else. The same options always give the same snapshot and files, byte for byte.
 */
export function coverSnapshot(options: { seed?: number; documents?: number } = {}): CoverSnapshot {
  const rng = new Random(options.seed ?? 1);
  const total = Math.max(12, Math.floor(options.documents ?? 60));
  const authorCount = Math.max(3, Math.round(total * 0.2));
  const eventCount = Math.max(3, Math.round(total * 0.3));
  const articleCount = total - authorCount - eventCount;

  const files: Record<string, Buffer> = {};
  const assets: CoverRecord[] = [];
  const authorIds = Array.from({ length: authorCount }, (_, i) => `2000000000000000${pad(i + 1, 2)}`);
  const articleIds = Array.from({ length: articleCount }, (_, i) => `1000000000000000${pad(i + 1, 2)}`);
  // 20 digits: beyond a double's exact integers, so ids compare as big integers.
  const eventIds = Array.from({ length: eventCount }, (_, i) => `1844674407370955${pad(1600 + i, 4)}`);
  const assetIds = assetNames.map((_, i) => `3000000000000000${pad(i + 1, 2)}`);

  // Creation times: random over a year, every seventh one equal to the one before (ties break on ids).
  let previous = Date.UTC(2023, 0, 1);
  const stamps = (): { createdAt: string; updatedAt: string } => {
    const created = rng.chance(1 / 7)
      ? previous
      : Date.UTC(2023, 0, 1) + rng.int(0, 365) * 86_400_000 + rng.int(0, 86_399_999);
    previous = created;
    const updated = rng.chance(0.2) ? created : created + rng.int(1, 30 * 86_400_000);
    return { createdAt: new Date(created).toISOString(), updatedAt: new Date(updated).toISOString() };
  };
  const meta = (id: string, contentType: string, full: boolean): CoverMeta => ({
    id,
    contentType,
    revision: rng.int(1, 6),
    tags: full ? ['featured', 'news'] : rng.some(tagNames, rng.int(0, 3)).sort(),
    ...stamps(),
  });

  assetNames.forEach((name, i) => {
    const width = 1 + ((i * 3) % 5);
    const height = 1 + ((i * 2) % 3);
    const path = `images/${name}.png`;
    files[path] = tinyPng(width, height, 1000 + i + (options.seed ?? 1));
    const fields: Record<string, unknown> = {};
    const title = localizedValue(
      rng,
      i === 0,
      (locale) => `${capital(words[locale][i]!)} ${locale === 'en_US' ? 'picture' : 'Bild'}`,
    );
    if (title !== undefined) fields.title = title;
    const description = localizedValue(
      rng,
      i === 0,
      (locale) => `${words[locale][(i + 3) % 12]} ${words[locale][(i + 5) % 12]}`,
    );
    if (description !== undefined) fields.description = description;
    fields.file = {
      url: path,
      fileName: `${name}.png`,
      mimeType: 'image/png',
      size: files[path]!.length,
      width,
      height,
    };
    assets.push({ fields, meta: meta(assetIds[i]!, '_asset', i === 0) });
  });

  const assetRef = (): object =>
    rng.chance(0.08) ? ref(danglingIds.asset, '_asset') : ref(rng.pick(assetIds), '_asset');
  const assetList = (full: boolean) =>
    full ? [ref(assetIds[0]!, '_asset'), ref(assetIds[1]!, '_asset')] : Array.from({ length: rng.int(0, 2) }, assetRef);
  const words2 = (locale: Locale) => `${capital(rng.pick(words[locale]))} ${rng.pick(words[locale])}`;
  const richtext = (locale: Locale, full: boolean) => {
    const heading = words2(locale);
    const sentence = `${capital(rng.pick(words[locale]))} and ${rng.pick(words[locale])} by the ${rng.pick(words[locale])}.`;
    const tag = rng.pick(['h2', 'h3']);
    const image = full || rng.chance(0.4) ? rng.pick([...assetNames, 'unknown']) : undefined;
    const img = image ? `<img src="images/${image}.png" alt="${image}">` : '';
    return { html: `<${tag}>${heading}</${tag}><p>${sentence}</p>${img}`, plain: `${heading}\n${sentence}` };
  };
  const date = () =>
    new Date(Date.UTC(2022, 0, 1) + rng.int(0, 900) * 86_400_000 + rng.int(0, 86_399_999)).toISOString();
  const location = () => ({ lat: rng.int(-900_000, 900_000) / 10_000, lng: rng.int(-1_800_000, 1_800_000) / 10_000 });
  const color = () => `#${pad(rng.int(0, 0xffffff).toString(16), 6)}`;
  const json = () =>
    rng.pick([
      () => ({ rank: rng.int(1, 9), notes: rng.some(labels, 2), nested: { ok: rng.chance(0.5) } }),
      () => [{ k: rng.int(1, 3) }, { k: rng.pick(labels) }],
      () => ({ source: rng.pick(words.en_US), list: [1, 2, rng.int(3, 9)] }),
    ])();

  const documents: CoverRecord[] = [];
  /** Adds a document whose fields follow the content type's order; a maker returning undefined leaves the field out. */
  const add = (id: string, contentType: string, full: boolean, makers: Record<string, () => unknown>) => {
    const type = coverContentTypes.find((t) => t.apiId === contentType)!;
    const fields: Record<string, unknown> = {};
    for (const field of type.fields) {
      const make = makers[field.apiId]!;
      const value = field.localized ? make() : plainValue(rng, full, make);
      if (value !== undefined) fields[field.apiId] = value;
    }
    documents.push({ fields, meta: meta(id, contentType, full) });
  };
  const localized = (full: boolean, make: (locale: Locale) => unknown) => () => localizedValue(rng, full, make);

  authorIds.forEach((id, i) => {
    const full = i === 0;
    add(id, 'author', full, {
      name: () => `${capital(rng.pick(words.en_US))} ${capital(rng.pick(words.de_DE))}`,
      bio: () => (!full && rng.chance(0.1) ? { html: '', plain: '' } : richtext('en_US', full)),
      age: () => rng.int(18, 90),
      avatar: () => (!full && rng.chance(0.1) ? [] : [assetRef()]),
      born: date,
      active: () => rng.chance(0.5) || full,
      mentor: () =>
        i === 0
          ? ref(authorIds[1]!, 'author')
          : rng.chance(0.15)
            ? ref(danglingIds.author, 'author')
            : ref(rng.pick(authorIds), 'author'),
      links: json,
    });
  });
  articleIds.forEach((id, i) => {
    const full = i === 0;
    add(id, 'article', full, {
      title: localized(full, (locale) => `${words2(locale)} ${i + 1}`),
      body: localized(full, (locale) => richtext(locale, full)),
      rating: () => rng.int(0, 10) / 2,
      price: localized(full, (locale) => rng.int(100, 9_999) / (locale === 'en_US' ? 100 : 10)),
      publishedAt: date,
      featured: () => rng.chance(0.5) || full,
      place: location,
      category: localized(full, (locale) => rng.pick(categories[locale])),
      labels: () => (full ? ['red', 'large'] : rng.some(labels, rng.int(0, 3))),
      accent: color,
      author: () => (rng.chance(0.1) ? ref(danglingIds.author, 'author') : ref(rng.pick(authorIds), 'author')),
      related: () => [
        ...Array.from({ length: rng.int(full ? 2 : 0, 3) }, () =>
          ref(rng.pick(articleIds.filter((a) => a !== id)), 'article'),
        ),
        ...(full || rng.chance(0.1) ? [ref(danglingIds.article, 'article')] : []),
      ],
      images: localized(full, () => assetList(full)),
      extra: json,
    });
  });
  eventIds.forEach((id, i) => {
    const full = i === 0;
    add(id, 'event', full, {
      title: localized(full, (locale) => `${capital(rng.pick(kinds[locale]))} ${rng.pick(words[locale])}`),
      startsAt: date,
      venue: location,
      capacity: () => rng.int(10, 500),
      kinds: localized(full, (locale) => rng.some(kinds[locale], rng.int(1, 2))),
      tint: color,
      host: () => ref(rng.pick(authorIds), 'author'),
      speakers: () => rng.some(authorIds, rng.int(full ? 2 : 0, 3)).map((a) => ref(a, 'author')),
      gallery: () => assetList(full),
      sold: () => rng.chance(0.3),
      details: json,
    });
  });
  // A localized field that is there with no locale at all: null in every locale, {} for locale=all.
  const gap = documents.find(
    (d) => d.meta.contentType === 'article' && d.meta.id !== articleIds[0] && d.fields.category !== undefined,
  );
  if (gap) gap.fields.category = {};

  const snapshot: SnapshotJson = {
    repository: {
      id: '700000000000000001',
      apiId: coverApiId,
      name: 'Cover',
      defaultLocale: 'en_US',
      locales,
      apiKeys: [coverKey],
    },
    contentTypes: coverContentTypes,
    documents,
    assets,
    collections: [
      {
        apiId: 'top-rated',
        name: 'Top rated',
        contentType: 'article',
        filters: [{ '*.fields.rating': { greaterThanEqual: 2 } }],
        includeTags: ['featured', 'news'],
        sorting: { 'fields.publishedAt': 'DESC' },
      },
      { apiId: 'authors', contentType: 'author' },
      { apiId: 'no-drafts', excludeTags: ['draft'] },
    ],
    aliases: [
      { apiId: 'home', document: articleIds[0]! },
      { apiId: 'team-lead', document: authorIds[0]! },
    ],
  };
  return { snapshot, files, key: coverKey };
}

/** A field that is not localized: its value, or (in a document that is not full) now and then absent or null. */
function plainValue(rng: Random, full: boolean, make: () => unknown): unknown {
  if (full) return make();
  const draw = rng.next();
  if (draw < 0.08) return undefined;
  if (draw < 0.13) return null;
  return make();
}

/** A localized field: locale → value, some locales absent or null; in a document that is not full, now and then absent or null. */
function localizedValue(
  rng: Random,
  full: boolean,
  make: (locale: Locale) => unknown,
): Record<string, unknown> | null | undefined {
  if (!full) {
    const draw = rng.next();
    if (draw < 0.06) return undefined;
    if (draw < 0.1) return null;
  }
  const out: Record<string, unknown> = {};
  for (const locale of localeKeys) {
    if (full || rng.chance(localeChance[locale])) out[locale] = make(locale);
    else if (rng.chance(0.1)) out[locale] = null;
  }
  return out;
}

/** Writes a snapshot as `<dir>/<apiId>.json` and its files beside it; returns the snapshot file's path. */
export async function writeSnapshot(
  dir: string,
  snapshot: SnapshotJson,
  files: Record<string, Buffer>,
): Promise<string> {
  const file = join(dir, `${snapshot.repository.apiId}.json`);
  await mkdir(dir, { recursive: true });
  await writeFile(file, `${JSON.stringify(snapshot, null, 2)}\n`);
  for (const [path, bytes] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), bytes);
  }
  return file;
}

/** Writes the cover snapshot (see `coverSnapshot`) into `dir`; returns the snapshot file's path and the API key, and what was written. */
export async function writeCoverSnapshot(
  dir: string,
  options: { seed?: number; documents?: number } = {},
): Promise<CoverSnapshot & { file: string }> {
  const cover = coverSnapshot(options);
  return { ...cover, file: await writeSnapshot(dir, cover.snapshot, cover.files) };
}
