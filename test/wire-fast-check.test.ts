import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startServer } from '../src/server/index.ts';
import { fastFieldsTest } from '../src/wire/fast-check.ts';
import { parseSnapshot } from '../src/wire/snapshot.ts';
import {
  assetContentType,
  type ContentTypeDefinition,
  recordFieldsSchema,
  fieldTypes,
  slotsOf,
} from '../src/wire/snapshot-format.ts';
import { generateSnapshot } from './helpers/generate-snapshot.ts';
import { Random } from './helpers/random.ts';

// parseSnapshot tests a record's fields with plain functions first and asks the zod schemas only
// when those refuse: the functions must never accept what the schemas refuse, and must accept
// real snapshots (or nothing would be faster).

const locales = ['en_US', 'de_DE', 'fr_FR'];
const reference = (id: unknown, contentType: unknown) => ({ meta: { id, contentType } });

/** Values near every rule's edges: right and wrong shapes, kinds, keys, ranges and prototypes. */
const pieces: unknown[] = [
  null,
  undefined,
  true,
  false,
  0,
  -0,
  1.5,
  -91,
  90,
  180,
  181,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  2 ** 53,
  -1,
  '',
  'a',
  '#1a2B3c',
  '#1a2b3',
  '#1a2b3cd',
  '2024-02-29',
  '2024-02-30',
  '2023-13-01',
  '2024-01-31T12:00Z',
  '2024-01-31T12:00:00.123456789Z',
  '2024-01-31T25:00:00Z',
  '2024-01-31 12:00:00',
  '12',
  '123456789012345678901',
  'en_US',
  [],
  ['a', 'b'],
  ['a', 1],
  [null],
  { html: '<p>x</p>', plain: 'x' },
  { html: 'x' },
  { html: 'x', plain: 'x', extra: 1 },
  { html: 1, plain: 'x' },
  { lat: 47.3, lng: 8.5 },
  { lat: 91, lng: 0 },
  { lat: 0, lng: -181 },
  { lat: '1', lng: 2 },
  { lat: 1 },
  { lat: 1, lng: 2, alt: 3 },
  reference('12', 'post'),
  reference('12', '_asset'),
  reference('x1', 'post'),
  reference('12', ''),
  reference(12, 'post'),
  { meta: { id: '12', contentType: 'post', extra: 1 } },
  { meta: { id: '12' } },
  { meta: { id: '12', contentType: 'post' }, fields: {} },
  [reference('12', '_asset')],
  [reference('12', 'post'), reference('13', 'post')],
  [reference('12', '_asset'), reference('x', '_asset')],
  { url: 'https://x/a.png', fileName: 'a.png', mimeType: 'image/png', size: 10 },
  { url: 'a', fileName: 'a', mimeType: 'b', size: 1, width: 2, height: 3 },
  { url: 'a', fileName: 'a', mimeType: 'b', size: 1.5 },
  { url: '', fileName: 'a', mimeType: 'b', size: 1 },
  { url: 'a', fileName: 'a', mimeType: 'b', size: 1, width: 0 },
  { url: 'a', fileName: 'a', mimeType: 'b', size: 1, other: 1 },
  { url: 'a', fileName: 'a', mimeType: 'b', size: 1, width: undefined },
  new Date(0),
  Object.create({ html: 'x', plain: 'x' }),
  Object.assign(Object.create(null), { html: 'x', plain: 'x' }),
  { en_US: 'a' },
  { en_US: 'a', de_DE: null },
  { xx_XX: 'a' },
  { en_US: 1 },
  // holes, which every() skips and zod does not; a value zod reads that Object.keys does not list
  // biome-ignore lint/suspicious/noSparseArray: holes on purpose
  [, 'a'],
  new Array(2),
  // biome-ignore lint/suspicious/noSparseArray: holes on purpose
  [, reference('12', 'post')],
  // biome-ignore lint/suspicious/noSparseArray: holes on purpose
  [reference('12', '_asset'), , reference('13', '_asset')],
  Object.defineProperty({ en_US: 'a' }, 'de_DE', { value: 5, enumerable: false }),
];

function randomValue(random: Random, depth = 0): unknown {
  const roll = random.next();
  if (depth < 2 && roll < 0.15) return Array.from({ length: random.int(0, 3) }, () => randomValue(random, depth + 1));
  if (depth < 2 && roll < 0.3) {
    // a map of locales (the localized shape), sometimes with a key that is none
    const keys = random.some([...locales, 'xx_XX', 'html', 'meta'], random.int(0, 3));
    return Object.fromEntries(keys.map((key) => [key, randomValue(random, depth + 1)]));
  }
  return random.pick(pieces);
}

const types: ContentTypeDefinition[] = [
  ...fieldTypes.map((type) => ({ apiId: `plain-${type}`, fields: [{ apiId: 'value', type }] })),
  ...(['text', 'richtext', 'markdown', 'number', 'select', 'asset'] as const).map((type) => ({
    apiId: `localized-${type}`,
    fields: [{ apiId: 'value', type, localized: true }],
  })),
  assetContentType,
  // fields named as Object.prototype's own: a record without them still "has" them for zod
  {
    apiId: 'inherited',
    fields: [
      { apiId: 'constructor', type: 'text' },
      { apiId: 'toString', type: 'relation' },
      { apiId: 'valueOf', type: 'json' },
    ],
  },
  // sections: fields under a section's key, beside fields at the top; sections named like Object's members too
  {
    apiId: 'sections',
    fields: [
      { apiId: 'title', type: 'text', localized: true, section: 'seo' },
      { apiId: 'value', type: 'number' },
      { apiId: 'image', type: 'asset', section: 'seo' },
      { apiId: 'when', type: 'date', section: 'plan' },
      { apiId: 'constructor', type: 'text', section: 'plan' },
      { apiId: 'link', type: 'relation', section: 'toString' },
    ],
  },
  {
    apiId: 'sections-plain',
    fields: [
      { apiId: 'title', type: 'text', localized: true, section: 'seo' },
      { apiId: 'value', type: 'number' },
      { apiId: 'image', type: 'asset', section: 'seo' },
      { apiId: 'when', type: 'date', section: 'plan' },
    ],
  },
];

/** The keys of a content type's `fields`: a field at the top, or a section with its fields. */
const keysOf = (type: ContentTypeDefinition): [string, string[] | undefined][] =>
  slotsOf(type).map((slot) =>
    slot.section === undefined ? [slot.field.apiId, undefined] : [slot.section, slot.fields.map((f) => f.apiId)],
  );

const zodAccepts = (type: ContentTypeDefinition, fields: unknown) =>
  recordFieldsSchema(type, locales).safeParse(fields).success;

describe('the fast field tests of parseSnapshot', () => {
  it('accept no fields the zod schemas refuse, over every type and 20,000 drawn values', () => {
    const random = new Random(20261125);
    let accepted = 0;
    let tried = 0;
    for (const type of types) {
      const fast = fastFieldsTest(type, locales);
      const keys = keysOf(type);
      const names = keys.map(([name]) => name);
      const inSection = keys.find(([, inner]) => inner)?.[1];
      const tries = [
        {},
        Object.defineProperty({}, names[0]!, { value: 5, enumerable: false }),
        ...pieces.map((value) => ({ [names[0]!]: value })),
        // a piece inside a section, and a section that is a piece
        ...(inSection
          ? pieces.flatMap((value) => [
              { [keys.find(([, inner]) => inner)![0]]: { [inSection[0]!]: value } },
              { [keys.find(([, inner]) => inner)![0]]: value },
            ])
          : []),
        ...Array.from({ length: 20_000 / types.length }, () => randomFields(random, keys)),
      ];
      for (const fields of tries) {
        if (!fast(fields)) continue;
        if (!zodAccepts(type, fields))
          throw new Error(`${type.apiId}: the fast test accepts ${JSON.stringify(fields)}, the schema refuses it`);
        accepted++;
      }
      tried += tries.length;
    }
    // Both ways are taken: the test would prove nothing if the fast test accepted nothing.
    expect(accepted).toBeGreaterThan(500);
    expect(tried - accepted).toBeGreaterThan(500);
  });

  it('leaves the verdict and its message to zod where the fast test refuses', () => {
    const snapshot = JSON.parse(JSON.stringify(generateSnapshot({ documents: 10, seed: 3 })));
    snapshot.contentTypes.push({
      apiId: 'odd',
      fields: [
        { apiId: '__proto__', type: 'text' },
        { apiId: 'when', type: 'date' },
      ],
    });
    const at =
      snapshot.documents.push({
        fields: { when: '2024-02-32' },
        meta: { ...snapshot.documents[0].meta, id: '999999', contentType: 'odd' },
      }) - 1;
    expect(() => parseSnapshot(snapshot, 'odd.json')).toThrow(
      `odd.json: $.documents[${at}].fields.when: is not a real date`,
    );
  });

  it('read a field named like a member of every object only where the record holds it', async () => {
    const snapshot = JSON.parse(JSON.stringify(generateSnapshot({ documents: 10, seed: 3 })));
    snapshot.contentTypes.push({
      apiId: 'car',
      fields: [
        { apiId: 'driver', type: 'text' },
        { apiId: 'constructor', type: 'text' },
        { apiId: 'toString', type: 'number' },
      ],
    });
    const meta = (id: string) => ({ ...snapshot.documents[0].meta, id, contentType: 'car' });
    snapshot.documents.push(
      { fields: { driver: 'Ada', constructor: 'Ferrari' }, meta: meta('900001') },
      { fields: { driver: 'Grace' }, meta: meta('900002') },
    );
    const parsed = parseSnapshot(snapshot, 'cars.json');
    const [with_, without] = parsed.documents.slice(-2).map((d) => d.fields);
    expect(with_!.constructor).toBe('Ferrari');
    expect(without!.constructor).toBeUndefined();
    expect(JSON.stringify(without)).toBe('{"driver":"Grace"}');
    // and the server answers it so: a filter for documents that have the field finds only the first
    const server = await startServer({ snapshots: [snapshot], watch: false });
    try {
      const answer = await fetch(
        `${server.url}/${snapshot.repository.apiId}/documents?filters[0][car.fields.constructor][notEmpty]=1`,
        { headers: { authorization: snapshot.repository.apiKeys[0] } },
      );
      expect(((await answer.json()) as { data: { meta: { id: string } }[] }).data.map((d) => d.meta.id)).toEqual([
        '900001',
      ]);
    } finally {
      await server.close();
    }
  });

  it('read a field inside a section named like a member of every object only where the section holds it', () => {
    const snapshot = JSON.parse(JSON.stringify(generateSnapshot({ documents: 10, seed: 3 })));
    snapshot.contentTypes.push({
      apiId: 'car',
      fields: [
        { apiId: 'driver', type: 'text' },
        { apiId: 'constructor', type: 'text', section: 'make' },
        { apiId: 'valueOf', type: 'number', section: 'make' },
      ],
    });
    const meta = (id: string) => ({ ...snapshot.documents[0].meta, id, contentType: 'car' });
    snapshot.documents.push(
      { fields: { driver: 'Ada', make: { constructor: 'Ferrari' } }, meta: meta('900001') },
      { fields: { make: {} }, meta: meta('900002') },
    );
    const [with_, without] = parseSnapshot(snapshot, 'cars.json')
      .documents.slice(-2)
      .map((d) => d.fields.make as Record<string, unknown>);
    expect(with_!.constructor).toBe('Ferrari');
    expect(without!.constructor).toBeUndefined();
  });

  it('accept every record of the demo, of a generated repository and of the sections fixture, so that zod is not asked', async () => {
    const demo = JSON.parse(await readFile(new URL('../playground/content/demo.json', import.meta.url), 'utf8'));
    const lessons = JSON.parse(await readFile(new URL('./fixtures/sections.json', import.meta.url), 'utf8'));
    for (const snapshot of [
      demo,
      lessons,
      JSON.parse(JSON.stringify(generateSnapshot({ documents: 300, seed: 11 }))),
    ]) {
      const keys = snapshot.repository.locales.map((l: { key: string }) => l.key);
      const byApiId = new Map<string, ContentTypeDefinition>(
        snapshot.contentTypes.map((t: ContentTypeDefinition) => [t.apiId, t]),
      );
      const records = [
        ...snapshot.documents.map((r: any) => [byApiId.get(r.meta.contentType), r]),
        ...(snapshot.assets ?? []).map((r: any) => [assetContentType, r]),
      ];
      for (const [type, record] of records)
        expect(fastFieldsTest(type, keys)(record.fields), `${record.meta.id}`).toBe(true);
    }
  });
});

function randomFields(random: Random, keys: [string, string[] | undefined][]): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [name, inner] of keys) {
    if (!random.chance(0.9)) continue;
    // a section: mostly an object of its fields (drawn as a record's are), now and then any value
    fields[name] =
      inner && random.chance(0.9)
        ? randomFields(
            random,
            inner.map((n) => [n, undefined]),
          )
        : randomValue(random);
  }
  if (random.chance(0.05)) fields.unknown = 'x';
  return fields;
}
