import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { deflateSync } from 'node:zlib';

/**
 * A recipes repository unlike the demo: four locales with en_GB the default and it_CH falling
 * back to it_IT, recipes in a collection, chefs and cuisines, pages behind aliases that relate to
 * recipes, PNG images and a PDF. test/fixtures/astro-kitchen is a site on it.
 */

export const kitchenKey = 'kitchen-read-key-4c1d9e7a2b0f';

const at = (day: number) => `2025-03-${String(day).padStart(2, '0')}T09:00:00.000Z`;
const meta = (id: string, contentType: string, day: number) => ({
  id,
  contentType,
  revision: 1,
  tags: [],
  createdAt: at(day),
  updatedAt: at(day),
});
const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });
export const kitchenId = (n: number) => `7000000000000${String(n).padStart(5, '0')}`;
const html = (text: string) => ({
  html: `<h2>Method</h2><p>${text}</p><h2>Serving</h2><p>Serve warm.</p>`,
  plain: `Method\n${text}\nServing\nServe warm.`,
});

/** A PNG of one colour, as a camera would not make it but Astro's image service reads it. */
export function png(width: number, height: number, rgb: [number, number, number]): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc(body), body.length + 4);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits, RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => rgb).flat())]);
  const pixels = deflateSync(Buffer.concat(Array.from({ length: height }, () => row)));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', pixels),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const pdf = Buffer.from(
  '%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n',
);

const images: { id: string; path: string; rgb: [number, number, number]; title: Record<string, string> }[] = [
  {
    id: kitchenId(501),
    path: 'media/pozole.png',
    rgb: [180, 60, 40],
    title: { en_GB: 'A bowl of pozole', fr_FR: 'Un bol de pozole' },
  },
  {
    id: kitchenId(502),
    path: 'media/risotto.png',
    rgb: [230, 200, 120],
    title: { en_GB: 'Saffron risotto', it_IT: 'Risotto allo zafferano' },
  },
  { id: kitchenId(503), path: 'media/chef.png', rgb: [60, 90, 160], title: { en_GB: 'A chef' } },
];
const card = { id: kitchenId(504), path: 'media/docs/printable-card.pdf' };

function asset(
  id: string,
  path: string,
  file: Buffer,
  title: Record<string, string>,
  mimeType: string,
  size?: { width: number; height: number },
) {
  return {
    fields: {
      title,
      file: { url: path, fileName: path.split('/').pop(), mimeType, size: file.length, ...(size ?? {}) },
    },
    meta: meta(id, '_asset', 1),
  };
}

const recipes = [
  {
    n: 301,
    slug: 'smoky-pozole',
    title: { en_GB: 'Smoky pozole', fr_FR: 'Pozole fumé', it_IT: 'Pozole affumicato' },
    chef: 401,
    cuisine: 601,
    image: 0,
  },
  {
    n: 302,
    slug: 'saffron-risotto',
    title: {
      en_GB: 'Saffron risotto',
      fr_FR: 'Risotto au safran',
      it_IT: 'Risotto allo zafferano',
      it_CH: 'Risotto ticinese',
    },
    chef: 402,
    cuisine: 602,
    image: 1,
  },
  { n: 303, slug: 'green-mole', title: { en_GB: 'Green mole', it_IT: 'Mole verde' }, chef: 401, cuisine: 601 },
  { n: 304, slug: 'ratatouille', title: { en_GB: 'Ratatouille', fr_FR: 'Ratatouille' }, chef: 403, cuisine: 603 },
  {
    n: 305,
    slug: 'polenta',
    title: { en_GB: 'Polenta with mushrooms', it_IT: 'Polenta ai funghi' },
    chef: 402,
    cuisine: 602,
  },
  {
    n: 306,
    slug: 'tarte-tatin',
    title: { en_GB: 'Tarte tatin', fr_FR: 'Tarte Tatin' },
    chef: 403,
    cuisine: 603,
    image: 1,
  },
];
const chefs = [
  { n: 401, slug: 'ana-ruiz', name: 'Ana Ruiz' },
  { n: 402, slug: 'marco-bassi', name: 'Marco Bassi' },
  { n: 403, slug: 'claire-dubois', name: 'Claire Dubois' },
];
const cuisines = [
  { n: 601, slug: 'mexican', name: { en_GB: 'Mexican', fr_FR: 'Mexicaine', it_IT: 'Messicana' } },
  { n: 602, slug: 'italian', name: { en_GB: 'Italian', fr_FR: 'Italienne', it_IT: 'Italiana' } },
  { n: 603, slug: 'french', name: { en_GB: 'French', fr_FR: 'Française', it_IT: 'Francese' } },
];

/** The snapshot, as `pull` would write it; its files are written beside it by `writeKitchen`. */
export function kitchen() {
  return {
    repository: {
      id: kitchenId(1),
      apiId: 'kitchen',
      name: 'Kitchen',
      defaultLocale: 'en_GB',
      locales: [
        { key: 'en_GB' },
        { key: 'fr_FR', fallback: 'en_GB' },
        { key: 'it_IT', fallback: 'en_GB' },
        { key: 'it_CH', fallback: 'it_IT' },
      ],
      apiKeys: [kitchenKey],
    },
    contentTypes: [
      {
        apiId: 'recipe',
        fields: [
          { apiId: 'title', type: 'text', localized: true },
          { apiId: 'slug', type: 'text' },
          { apiId: 'method', type: 'richtext', localized: true },
          { apiId: 'notes', type: 'richtext', localized: true },
          { apiId: 'chef', type: 'relation' },
          { apiId: 'cuisine', type: 'relation' },
          { apiId: 'image', type: 'asset' },
          { apiId: 'card', type: 'asset' },
        ],
      },
      {
        apiId: 'chef',
        fields: [
          { apiId: 'name', type: 'text' },
          { apiId: 'slug', type: 'text' },
          { apiId: 'photo', type: 'asset' },
        ],
      },
      {
        apiId: 'cuisine',
        fields: [
          { apiId: 'name', type: 'text', localized: true },
          { apiId: 'slug', type: 'text' },
        ],
      },
      {
        apiId: 'page',
        fields: [
          { apiId: 'title', type: 'text', localized: true },
          { apiId: 'slug', type: 'text' },
          { apiId: 'pairsWith', type: 'relation' },
        ],
      },
    ],
    documents: [
      ...recipes.map((r, i) => ({
        fields: {
          title: r.title,
          slug: r.slug,
          method: { en_GB: html(`Cook the ${r.slug.replace('-', ' ')} slowly.`), fr_FR: html(`Cuire lentement.`) },
          notes: { en_GB: { html: '<p>Keeps for two days.</p>', plain: 'Keeps for two days.' } },
          chef: ref(kitchenId(r.chef), 'chef'),
          cuisine: ref(kitchenId(r.cuisine), 'cuisine'),
          image: r.image === undefined ? [] : [ref(images[r.image]!.id, '_asset')],
          card: i < 2 ? [ref(card.id, '_asset')] : [],
        },
        meta: meta(kitchenId(r.n), 'recipe', 2 + i),
      })),
      ...chefs.map((c, i) => ({
        fields: { name: c.name, slug: c.slug, photo: i === 0 ? [ref(images[2]!.id, '_asset')] : [] },
        meta: meta(kitchenId(c.n), 'chef', 10 + i),
      })),
      ...cuisines.map((c, i) => ({
        fields: { name: c.name, slug: c.slug },
        meta: meta(kitchenId(c.n), 'cuisine', 14 + i),
      })),
      {
        fields: {
          title: { en_GB: 'Welcome', fr_FR: 'Bienvenue', it_IT: 'Benvenuti' },
          slug: 'home',
          pairsWith: [ref(kitchenId(301), 'recipe'), ref(kitchenId(302), 'recipe')],
        },
        meta: meta(kitchenId(701), 'page', 20),
      },
      {
        fields: {
          title: { en_GB: 'About us', fr_FR: 'À propos' },
          slug: 'about',
          pairsWith: [ref(kitchenId(304), 'recipe')],
        },
        meta: meta(kitchenId(702), 'page', 21),
      },
    ],
    assets: [
      ...images.map((image) =>
        asset(image.id, image.path, png(64, 48, image.rgb), image.title, 'image/png', { width: 64, height: 48 }),
      ),
      asset(card.id, card.path, pdf, { en_GB: 'Printable card' }, 'application/pdf'),
    ],
    collections: [{ apiId: 'recipes', contentType: 'recipe', sorting: { 'fields.slug': 'ASC' } }],
    aliases: [
      { apiId: 'home', document: kitchenId(701) },
      { apiId: 'about', document: kitchenId(702) },
    ],
  };
}

/** Writes the snapshot to `<dir>/kitchen.json` and its files beside it; returns the snapshot's path. */
export async function writeKitchen(dir: string, snapshot: ReturnType<typeof kitchen> = kitchen()): Promise<string> {
  const files: [string, Buffer][] = [
    ...images.map((image) => [image.path, png(64, 48, image.rgb)] as [string, Buffer]),
    [card.path, pdf],
  ];
  for (const [path, bytes] of files) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), bytes);
  }
  const file = join(dir, 'kitchen.json');
  await writeFile(file, `${JSON.stringify(snapshot, null, 2)}\n`);
  return file;
}
