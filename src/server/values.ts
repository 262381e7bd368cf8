import { type ApiError, badRequest, quote } from './errors.ts';
import { type FieldType, isoDatePattern } from '../wire/snapshot-format.ts';

/**
 * How filters and sorting read a field: the value of a document, normalised once per snapshot
 * and locale into a comparable form, and the value a request gives, read as the field's type.
 */

export type Kind = 'text' | 'number' | 'date' | 'boolean' | 'bigint' | 'location' | 'json';
export type Comparable = string | number | bigint | readonly [number, number];
/** A normalised value: a comparable, an array of them (multiple select, tags), or `undefined` when missing. */
export type Normalized = Comparable | readonly Comparable[] | undefined;

const metaKinds = {
  id: 'bigint',
  contentType: 'text',
  revision: 'bigint', // an integer (spec §4): a filter value such as 1.5 is a 400
  tags: 'text',
  createdAt: 'date',
  updatedAt: 'date',
} satisfies Record<string, Kind>;
export type MetaName = keyof typeof metaKinds;

export function kindOf(type: FieldType): Kind | undefined {
  switch (type) {
    case 'text':
    case 'markdown':
    case 'richtext':
    case 'select':
    case 'color':
      return 'text';
    case 'number':
    case 'date':
    case 'boolean':
    case 'location':
    case 'json':
      return type;
    default:
      return undefined; // relation, asset: not filterable or sortable
  }
}

export function metaKind(name: string): Kind | undefined {
  // Own keys only: `constructor` or `__proto__` is not a meta name.
  return Object.hasOwn(metaKinds, name) ? metaKinds[name as MetaName] : undefined;
}

/** True when a value counts as empty: missing, null, "", [], {} (richtext: empty plain text). */
export function isEmptyValue(value: unknown, type?: FieldType): boolean {
  if (value === undefined || value === null || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') {
    if (type === 'richtext') return !(value as { plain?: string }).plain;
    return Object.keys(value).length === 0;
  }
  return false;
}

export function normalizeStored(value: unknown, kind: Kind, type?: FieldType): Normalized {
  if (value === undefined || value === null) return undefined;
  switch (kind) {
    case 'text':
      if (Array.isArray(value)) return value.map(String);
      if (type === 'richtext') return String((value as { plain?: string }).plain ?? '');
      return String(value);
    case 'number':
      return Number(value);
    case 'date':
      return Date.parse(String(value));
    case 'boolean':
      return value ? 1 : 0;
    case 'bigint':
      return BigInt(String(value));
    case 'location': {
      const { lat, lng } = value as { lat: number; lng: number };
      return [lat, lng] as const;
    }
    case 'json':
      return typeof value === 'string' ? value : JSON.stringify(value);
  }
}

/** Where a filter or sort key reads its value. */
export interface ValueSource {
  scope: 'fields' | 'meta';
  name: string;
}

// No two quantifiers compete for the same digits (`\d+\.?\d*` did, which made a long number
// followed by a letter quadratic to refuse).
const numberLike = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The 400 for a value a request gives that is not what `what` (a filter, say) expects. */
export const invalidValue = (given: unknown, what: string, expected: string): ApiError =>
  badRequest(`Invalid value ${quote(given)} for ${what}: expected ${expected}`);

/** Reads a value a request gives as the field's kind; throws a 400 naming `what` when it cannot. */
export function readGiven(given: unknown, kind: Kind, what: string): Comparable {
  const fail = (): never => {
    throw invalidValue(given, what, describeKind(kind));
  };
  switch (kind) {
    case 'text':
      if (typeof given === 'string') return given;
      if (typeof given === 'number' || typeof given === 'boolean') return String(given);
      return fail();
    case 'number': {
      if (typeof given === 'number' && Number.isFinite(given)) return given;
      if (typeof given === 'string' && numberLike.test(given.trim())) {
        const n = Number(given);
        if (Number.isFinite(n)) return n;
      }
      return fail();
    }
    case 'date': {
      if (typeof given !== 'string' || !isoDatePattern.test(given)) return fail();
      const ms = Date.parse(given.length === 10 ? `${given}T00:00:00Z` : given);
      return Number.isNaN(ms) ? fail() : ms;
    }
    case 'boolean':
      if (given === true || given === 'true' || given === 1 || given === '1') return 1;
      if (given === false || given === 'false' || given === 0 || given === '0') return 0;
      return fail();
    case 'bigint':
      if (typeof given === 'string' && /^[+-]?\d{1,64}$/.test(given.trim())) return BigInt(given.trim());
      if (typeof given === 'number' && Number.isSafeInteger(given)) return BigInt(given);
      return fail();
    case 'location': {
      let parts: unknown[] | undefined;
      if (typeof given === 'string') parts = given.split(',').map((p) => (numberLike.test(p.trim()) ? Number(p) : NaN));
      else if (given && typeof given === 'object' && !Array.isArray(given))
        parts = [(given as { lat?: unknown }).lat, (given as { lng?: unknown }).lng];
      if (parts?.length !== 2 || !parts.every((p) => typeof p === 'number' && Number.isFinite(p))) return fail();
      return [parts[0] as number, parts[1] as number] as const;
    }
    case 'json':
      return typeof given === 'string' ? given : (JSON.stringify(given) ?? fail());
  }
}

function describeKind(kind: Kind): string {
  return {
    text: 'a string',
    number: 'a number',
    date: 'an ISO 8601 date such as 2024-01-31 or 2024-01-31T12:00:00.000Z',
    boolean: 'true, false, 1 or 0',
    bigint: 'an integer',
    location: 'a location "lat,lng"',
    json: 'a JSON value',
  }[kind];
}

/** Compares two normalised scalars of the same kind. */
export function compare(a: Comparable, b: Comparable, kind: Kind, collator: Intl.Collator): number {
  switch (kind) {
    case 'text':
      return collator.compare(a as string, b as string);
    case 'bigint':
      return a < b ? -1 : a > b ? 1 : 0;
    case 'location': {
      const [x, y] = a as readonly [number, number];
      const [u, v] = b as readonly [number, number];
      return x - u || y - v;
    }
    case 'json':
      return a < b ? -1 : a > b ? 1 : 0;
    default:
      return (a as number) - (b as number);
  }
}
