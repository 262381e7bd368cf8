import { type ContentTypeDefinition, type FieldType, isUtcDate, slotsOf } from './snapshot-format.ts';

/**
 * The field checks of `parseSnapshot` as plain functions, compiled once per content type: a
 * snapshot of 30,000 records is checked several times faster than with its zod schemas. They
 * accept only what the zod schemas accept (test/wire-fast-check.test.ts holds them to it) and
 * may refuse more; on a refusal the zod schema decides, and names the problem.
 */

type Test = (value: unknown) => boolean;

const isPlain = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

/** A plain object whose own keys are `required`, all of them, and some of `optional`. */
function hasKeys(value: Record<string, unknown>, required: number, allowed: ReadonlySet<string>): boolean {
  let count = 0;
  for (const key of Object.keys(value)) {
    if (!allowed.has(key)) return false;
    count++;
  }
  return count >= required;
}

const documentId = /^\d{1,20}$/;
const colour = /^#[0-9a-fA-F]{6}$/;
const richtextKeys = new Set(['html', 'plain']);
const locationKeys = new Set(['lat', 'lng']);
const referenceKeys = new Set(['meta']);
const referenceMetaKeys = new Set(['id', 'contentType']);
const fileKeys = new Set(['url', 'fileName', 'mimeType', 'size', 'width', 'height']);

/** An array whose every item passes, holes included (`every()` would skip them; zod does not). */
function every(value: unknown, test: Test): boolean {
  if (!Array.isArray(value)) return false;
  for (let i = 0; i < value.length; i++) if (!test(value[i])) return false;
  return true;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isSize = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;
const isDimension = (value: unknown) => value === undefined || (Number.isSafeInteger(value) && (value as number) > 0);
const filled = (value: unknown) => typeof value === 'string' && value.length > 0;

function isReference(value: unknown, contentType?: string): boolean {
  if (!isPlain(value) || !hasKeys(value, 1, referenceKeys)) return false;
  const meta = value.meta;
  if (!isPlain(meta) || !hasKeys(meta, 2, referenceMetaKeys)) return false;
  return (
    isString(meta.id) &&
    documentId.test(meta.id) &&
    (contentType === undefined ? filled(meta.contentType) : meta.contentType === contentType)
  );
}

const valueTests: Record<FieldType, Test> = {
  text: isString,
  markdown: isString,
  color: (value) => isString(value) && colour.test(value),
  richtext: (value) =>
    isPlain(value) && hasKeys(value, 2, richtextKeys) && isString(value.html) && isString(value.plain),
  number: isNumber,
  date: (value) => isString(value) && isUtcDate(value) && !Number.isNaN(Date.parse(value)),
  boolean: (value) => typeof value === 'boolean',
  location: (value) =>
    isPlain(value) &&
    hasKeys(value, 2, locationKeys) &&
    isNumber(value.lat) &&
    isNumber(value.lng) &&
    Math.abs(value.lat) <= 90 &&
    Math.abs(value.lng) <= 180,
  select: (value) => isString(value) || every(value, isString),
  relation: (value) => isReference(value) || every(value, (item) => isReference(item)),
  asset: (value) => every(value, (item) => isReference(item, '_asset')),
  json: () => true,
};

const isFile: Test = (value) =>
  isPlain(value) &&
  hasKeys(value, 4, fileKeys) &&
  filled(value.url) &&
  filled(value.fileName) &&
  filled(value.mimeType) &&
  isSize(value.size) &&
  isDimension(value.width) &&
  isDimension(value.height);

const orEmpty =
  (test: Test): Test =>
  (value) =>
    value === null || value === undefined || test(value);

/**
 * A test of a record's `fields` for `type`: true when its zod schema would accept them too. It
 * reads each declared field as zod does (`fields[name]`, so an inherited `constructor` is seen
 * and refused) and refuses a key that no field declares.
 */
export function fastFieldsTest(type: ContentTypeDefinition, locales: readonly string[]): Test {
  // A field (or section) named __proto__ is no key of the zod schema's shape: zod decides those.
  if (type.fields.some((field) => field.apiId === '__proto__' || field.section === '__proto__')) return () => false;
  const byLocale = (value: Test): Test => {
    const item = orEmpty(value);
    return (v) => {
      if (!isPlain(v)) return false;
      for (const locale of locales) if (!item(v[locale])) return false;
      return Object.keys(v).every((key) => locales.includes(key));
    };
  };
  const testOf = (field: ContentTypeDefinition['fields'][number]): Test => {
    const value = type.apiId === '_asset' && field.apiId === 'file' ? isFile : valueTests[field.type];
    return orEmpty(field.localized ? byLocale(value) : value);
  };
  /** An object holding these fields and no other key (a record's `fields`, or a section of them). */
  const objectOf =
    (tests: Map<string, Test>): Test =>
    (fields) => {
      if (!isPlain(fields)) return false;
      for (const [name, test] of tests) if (!test(fields[name])) return false;
      for (const name of Object.keys(fields)) if (!tests.has(name)) return false;
      return true;
    };
  const tests = new Map<string, Test>();
  for (const slot of slotsOf(type)) {
    if (slot.section === undefined) tests.set(slot.field.apiId, testOf(slot.field));
    else tests.set(slot.section, orEmpty(objectOf(new Map(slot.fields.map((field) => [field.apiId, testOf(field)])))));
  }
  return objectOf(tests);
}
