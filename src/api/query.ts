/**
 * Typed request options of the Read API and their three wire forms: bracketed query
 * parameters (the default), the `query=` JSON the official SDKs send, and a POST JSON body.
 */

import { type FilterOperator, filterOperators } from '../wire/schemas.ts';

export { type FilterOperator, filterOperators };
export type FilterValue = string | number | boolean | null | readonly (string | number | boolean)[];

/** One condition: `{ "<contentType|*>.<fields|meta>.<name>": { "<operator>": value } }`. */
type FilterCondition = Record<string, Partial<Record<FilterOperator, FilterValue>>>;
/** The JSON form of filters: a bare condition, or one wrapped in `and` / `or`. */
export type FilterEntry = FilterCondition | { and: FilterCondition } | { or: FilterCondition };

export type SortDirection = 'ASC' | 'DESC' | 'asc' | 'desc' | 1 | -1;
export type SortingMap = Record<string, SortDirection>;
export interface IncludeMap {
  [path: string]: 1 | IncludeMap;
}

/** Options every endpoint takes. */
export interface RecordOptions {
  /** A locale key such as `de_DE`, or `all` for every locale at once. Default: the repository's default locale. */
  locale?: string;
  /** A level from 0 to 5, or a field map (`{ '*.fields.author': 1 }`); see `Includes`. */
  includes?: number | IncludeMap | Includes;
  /** Replace asset references by the asset records, in place. */
  embedAssets?: boolean;
  /** A partial-response mask such as `fields(title,slug),meta(id)`. */
  fields?: string;
}

/** Options of the list endpoints (documents, collections). */
export interface ListOptions extends RecordOptions {
  filters?: FilterEntry[] | Filter;
  /** Keep documents with at least one of these tags. */
  includeTags?: readonly string[];
  /** Drop documents with any of these tags. */
  excludeTags?: readonly string[];
  sorting?: SortingMap | Sorting;
  /** Every whitespace-separated term must occur in the document's text. */
  search?: string;
  /** Page size, up to 1000. Default 25. */
  limit?: number;
  offset?: number;
}

/**
 * `'title'` → `*.fields.title`, `'meta.id'` → `*.meta.id`, `'post.fields.title'` stays.
 */
function filterPath(path: string): string {
  const parts = path.split('.');
  if (parts.length >= 3) return path;
  if (parts.length === 2 && (parts[0] === 'fields' || parts[0] === 'meta')) return `*.${path}`;
  return `*.fields.${path}`;
}

/**
 * Builds filters. AND binds tighter than OR: `where(a).and(b).or(c).and(d)` means
 * `(a AND b) OR (c AND d)`.
 *
 * @example
 * new Filter().where('fields.rating', 'greaterThan', 3).and('meta.tags', 'equal', 'featured')
 *   .or('post.fields.featured', 'equal', true)
 */
export class Filter {
  readonly #entries: FilterEntry[] = [];

  #add(
    join: 'and' | 'or' | undefined,
    path: string,
    operator: FilterOperator | Partial<Record<FilterOperator, FilterValue>>,
    value?: FilterValue,
  ): this {
    const tests = typeof operator === 'string' ? { [operator]: value ?? null } : operator;
    const condition: FilterCondition = { [filterPath(path)]: tests };
    this.#entries.push(
      join === 'or' ? { or: condition } : join === 'and' && this.#entries.length > 0 ? { and: condition } : condition,
    );
    return this;
  }

  /** Starts (or continues, with AND) the current branch. */
  where(path: string, operator: FilterOperator, value?: FilterValue): this;
  where(path: string, tests: Partial<Record<FilterOperator, FilterValue>>): this;
  where(
    path: string,
    operator: FilterOperator | Partial<Record<FilterOperator, FilterValue>>,
    value?: FilterValue,
  ): this {
    return this.#add('and', path, operator, value);
  }

  and(path: string, operator: FilterOperator, value?: FilterValue): this;
  and(path: string, tests: Partial<Record<FilterOperator, FilterValue>>): this;
  and(
    path: string,
    operator: FilterOperator | Partial<Record<FilterOperator, FilterValue>>,
    value?: FilterValue,
  ): this {
    return this.#add('and', path, operator, value);
  }

  /** Starts a new OR branch. */
  or(path: string, operator: FilterOperator, value?: FilterValue): this;
  or(path: string, tests: Partial<Record<FilterOperator, FilterValue>>): this;
  or(path: string, operator: FilterOperator | Partial<Record<FilterOperator, FilterValue>>, value?: FilterValue): this {
    return this.#add('or', path, operator, value);
  }

  toJSON(): FilterEntry[] {
    return [...this.#entries];
  }
}

/** Filters as OR branches of AND-ed conditions (AND binds tighter than OR, as the Read API reads them). */
function branches(entries: readonly FilterEntry[]): FilterCondition[][] {
  const out: FilterCondition[][] = [];
  for (const entry of entries) {
    const keys = Object.keys(entry);
    const join = keys.length === 1 ? keys[0]!.toLowerCase() : undefined;
    const condition = (join === 'and' || join === 'or' ? Object.values(entry)[0] : entry) as FilterCondition;
    if (join === 'or' || out.length === 0) out.push([condition]);
    else out[out.length - 1]!.push(condition);
  }
  return out;
}

/**
 * `a AND b` for lists of filters, each with its own OR branches: every branch of one joined with
 * every branch of the other, `(a1 OR a2) AND b` being `(a1 AND b) OR (a2 AND b)`.
 *
 * @example andFilters([{ '*.meta.contentType': { equal: 'post' } }], new Filter().where('a', 'equal', 1).or('b',
 * 'equal', 2).toJSON()) // type AND a, OR type AND b
 */
export function andFilters(...lists: (readonly FilterEntry[] | undefined)[]): FilterEntry[] {
  let result: FilterCondition[][] = [];
  for (const list of lists) {
    if (!list || list.length === 0) continue;
    const next = branches(list);
    result = result.length === 0 ? next : result.flatMap((left) => next.map((right) => [...left, ...right]));
  }
  return result.flatMap((branch, b) =>
    branch.map((condition, c): FilterEntry => (c > 0 ? { and: condition } : b > 0 ? { or: condition } : condition)),
  );
}

/**
 * Builds a sorting on several keys, the first key first.
 *
 * @example new Sorting().desc('fields.publishedAt').asc('meta.id')
 */
export class Sorting {
  readonly #keys: SortingMap = {};
  #add(key: string, direction: SortDirection): this {
    this.#keys[key.includes('.') ? key : `fields.${key}`] = direction;
    return this;
  }
  asc(key: string): this {
    return this.#add(key, 'ASC');
  }
  desc(key: string): this {
    return this.#add(key, 'DESC');
  }
  toJSON(): SortingMap {
    return { ...this.#keys };
  }
}

/**
 * Builds an includes field map; a callback includes relations of the included records.
 *
 * @example new Includes().add('author').add('relatedPosts', (related) => related.add('author'))
 */
export class Includes {
  readonly #map: IncludeMap = {};
  add(field: string, nested?: (includes: Includes) => Includes, contentType = '*'): this {
    const path = field.split('.').length === 3 ? field : `${contentType}.fields.${field}`;
    this.#map[path] = nested ? nested(new Includes()).toJSON() : 1;
    return this;
  }
  toJSON(): IncludeMap {
    return structuredClone(this.#map);
  }
}

/**
 * A builder (`Filter`, `Sorting`, `Includes`) as its JSON; anything else as it is. Told by its
 * `toJSON`, not its class: a site's pages and its live config may each load a copy of this package.
 */
export const builderJson = (value: unknown): unknown =>
  typeof (value as { toJSON?: unknown } | null)?.toJSON === 'function'
    ? (value as { toJSON(): unknown }).toJSON()
    : value;

/** Options as plain JSON (builders resolved, undefined dropped), in a stable key order. */
export function optionsToJson(options: ListOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const order: (keyof ListOptions)[] = [
    'locale',
    'includes',
    'embedAssets',
    'fields',
    'filters',
    'includeTags',
    'excludeTags',
    'sorting',
    'search',
    'limit',
    'offset',
  ];
  for (const key of order) {
    const value = options[key];
    if (value === undefined) continue;
    out[key] = builderJson(value);
  }
  return out;
}

// Keep brackets, `*`, `.`, `,` and `:` readable in query strings; encode everything else.
const encode = (text: string): string =>
  encodeURIComponent(text).replace(/%(5B|5D|2A|2C|3A)/g, (m) => decodeURIComponent(m));

const scalar = (value: unknown): string => (value === null ? '' : String(value));

/**
 * The bracketed query string of the options, or `undefined` when a value cannot be expressed
 * in brackets without changing its meaning (a comma inside an `in` value, say).
 */
function toBracketQuery(options: ListOptions): string | undefined {
  const json = optionsToJson(options);
  const pairs: string[] = [];
  const add = (name: string, value: unknown) => pairs.push(`${encode(name)}=${encode(scalar(value))}`);
  for (const [key, value] of Object.entries(json)) {
    switch (key) {
      case 'includes':
        if (typeof value === 'number') add('includes', value);
        else addMap('includes', value as IncludeMap, add);
        break;
      case 'filters':
        (value as FilterEntry[]).forEach((entry, i) => {
          const [first] = Object.keys(entry);
          const wrapped = first === 'and' || first === 'or';
          const condition = (wrapped ? (entry as Record<string, FilterCondition>)[first!] : entry) as FilterCondition;
          const prefix = wrapped ? `filters[${i}][${first}]` : `filters[${i}]`;
          for (const [path, tests] of Object.entries(condition)) {
            for (const [operator, given] of Object.entries(tests)) {
              if (Array.isArray(given)) {
                if (given.some((v) => String(v).includes(','))) throw new NotBracketable();
                add(`${prefix}[${path}][${operator}]`, given.join(','));
              } else if (given !== null && typeof given === 'object') throw new NotBracketable();
              else add(`${prefix}[${path}][${operator}]`, given);
            }
          }
        });
        break;
      case 'includeTags':
      case 'excludeTags':
        for (const tag of value as string[]) add(`${key}[]`, tag);
        break;
      case 'sorting':
        for (const [field, direction] of Object.entries(value as SortingMap)) add(`sorting[${field}]`, direction);
        break;
      default:
        add(key, value);
    }
  }
  return pairs.join('&');
}

class NotBracketable extends Error {}

function addMap(prefix: string, map: IncludeMap, add: (name: string, value: unknown) => void): void {
  for (const [path, child] of Object.entries(map)) {
    if (typeof child === 'object') addMap(`${prefix}[${path}]`, child, add);
    else add(`${prefix}[${path}]`, 1);
  }
}

/** `query=<URI-encoded JSON>`, as the official SDKs send it; empty when there are no options. */
function toJsonQuery(options: ListOptions): string {
  const json = optionsToJson(options);
  return Object.keys(json).length === 0 ? '' : `query=${encodeURIComponent(JSON.stringify(json))}`;
}

/** Serialises options in the requested notation, falling back to JSON where brackets cannot say it. */
export function serializeQuery(options: ListOptions, notation: 'brackets' | 'json'): string {
  if (notation === 'brackets') {
    try {
      return toBracketQuery(options) ?? toJsonQuery(options);
    } catch (error) {
      if (!(error instanceof NotBracketable)) throw error;
    }
  }
  return toJsonQuery(options);
}
