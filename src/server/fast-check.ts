import type { ContentTypeDefinition, FieldType } from './snapshot.ts';

/**
 * The field checks of `parseSnapshot` as plain functions, compiled once per content type: a
 * snapshot of 30,000 records is checked several times faster than with its zod schemas. They
 * accept only what the zod schemas accept (test/server-fast-check.test.ts holds them to it) and
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
const date = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?Z)?$/;
const richtextKeys = new Set(['html', 'plain']);
const locationKeys = new Set(['lat', 'lng']);
const referenceKeys = new Set(['meta']);
const referenceMetaKeys = new Set(['id', 'contentType']);
const fileKeys = new Set(['url', 'fileName', 'mimeType', 'size', 'width', 'height']);

const isString = (value: unknown): value is string => typeof value === 'string';
const isNumber = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const isSize = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;
const isDimension = (value: unknown) => value === undefined || (Number.isSafeInteger(value) && (value as number) > 0);
const filled = (value: unknown) => typeof value === 'string' && value.length > 0;

function isReference(value: unknown, contentType?: string): boolean {
  if (!isPlain(value) || !hasKeys(value, 1, referenceKeys)) return false;
  const meta = value.meta;
  if (!isPlain(meta) || !hasKeys(meta, 2, referenceMetaKeys)) return false;
  return isString(meta.id) && documentId.test(meta.id) && (contentType === undefined ? filled(meta.contentType) : meta.contentType === contentType);
}

const valueTests: Record<FieldType, Test> = {
  text: isString,
  color: (value) => isString(value) && colour.test(value),
  richtext: (value) => isPlain(value) && hasKeys(value, 2, richtextKeys) && isString(value.html) && isString(value.plain),
  number: isNumber,
  date: (value) => isString(value) && date.test(value) && !Number.isNaN(Date.parse(value)),
  boolean: (value) => typeof value === 'boolean',
  location: (value) =>
    isPlain(value) && hasKeys(value, 2, locationKeys) && isNumber(value.lat) && isNumber(value.lng) && Math.abs(value.lat) <= 90 && Math.abs(value.lng) <= 180,
  select: (value) => isString(value) || (Array.isArray(value) && value.every(isString)),
  relation: (value) => isReference(value) || (Array.isArray(value) && value.every((item) => isReference(item))),
  asset: (value) => Array.isArray(value) && value.every((item) => isReference(item, '_asset')),
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

/** A test of a record's `fields` for `type`: true when its zod schema would accept them too. */
export function fastFieldsTest(type: ContentTypeDefinition, locales: readonly string[]): Test {
  // A field named __proto__ is no key of the zod schema's shape: zod decides those.
  if (type.fields.some((field) => field.apiId === '__proto__')) return () => false;
  const allowedLocales = new Set(locales);
  const tests = new Map<string, Test>();
  for (const field of type.fields) {
    const value = type.apiId === '_asset' && field.apiId === 'file' ? isFile : valueTests[field.type];
    const orEmpty: Test = (v) => v === null || v === undefined || value(v);
    const byLocale: Test = (v) => {
      if (!isPlain(v)) return false;
      for (const locale of Object.keys(v)) if (!allowedLocales.has(locale) || !orEmpty(v[locale])) return false;
      return true;
    };
    tests.set(field.apiId, field.localized ? (v) => v === null || v === undefined || byLocale(v) : orEmpty);
  }
  return (fields) => {
    if (!isPlain(fields)) return false;
    for (const name of Object.keys(fields)) {
      const test = tests.get(name);
      if (test === undefined || !test(fields[name])) return false;
    }
    return true;
  };
}
