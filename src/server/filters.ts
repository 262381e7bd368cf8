import { type FilterOperator, filterOperators, isObject } from '../wire/schemas.ts';
import { badRequest, quote, sectionHint } from './errors.ts';
import { compileLike, foldCase } from './like.ts';
import { column, kept, kindFor } from './indexes.ts';
import type { LocaleView, PreparedRecord, PreparedRepository } from './prepared-repository.ts';
import {
  compare,
  type Comparable,
  invalidValue,
  isEmptyValue,
  type Kind,
  kindOf,
  metaKind,
  type Normalized,
  readGiven,
  type ValueSource,
} from './values.ts';

/**
 * Filters (spec §4): a list of conditions joined by AND, where an `or` entry starts a new
 * branch; AND binds tighter than OR. Compiled once per request into a predicate.
 */

const operatorSet = new Set<string>(filterOperators);

/**
 * Bounds on what one request may ask, so that no request holds the server up for the others
 * (spec §9): the values of one `in` or `notIn` list, and the conditions of all filters.
 */
const maxListValues = 10_000;
const maxConditions = 1_000;

/**
 * A compiled filter. One that can only match documents of given ids (`*.meta.id` `in` or
 * `equal`, alone or and-ed with others) names them in `candidates`, so a list runs the filter on
 * those alone rather than on every document.
 */
export type Predicate = ((record: PreparedRecord, locale: LocaleView) => boolean) & {
  candidates?: () => ReadonlySet<PreparedRecord>;
};

/** A parsed filter path `<contentType|*>.<fields|meta>.<name>`. */
interface FilterPath extends ValueSource {
  contentType: string; // '*' for any
}

function parseFilterPath(path: string, option = 'filters'): FilterPath {
  const parts = path.split('.');
  if (parts.length !== 3 || parts.some((p) => p === '') || (parts[1] !== 'fields' && parts[1] !== 'meta')) {
    // A field inside a section is named by its own API id: `*.fields.title`, not `*.fields.seo.title`.
    throw badRequest(
      `Malformed path ${quote(path)} in ${option}: expected <contentType|*>.<fields|meta>.<name>, ` +
        `such as *.fields.title${sectionHint(path, true)}`,
    );
  }
  const [contentType, scope, name] = parts as [string, 'fields' | 'meta', string];
  if (scope === 'meta' && !metaKind(name)) {
    throw badRequest(
      `Unknown meta name ${quote(name)} in ${option}: use id, contentType, revision, tags, createdAt or updatedAt`,
    );
  }
  return { contentType, scope, name };
}

/** Turns `filters` as sent (a JSON array, or the bracket form's object keyed by index) into a list of entries. */
function entriesOf(filters: unknown): unknown[] {
  if (Array.isArray(filters)) return filters;
  if (isObject(filters)) {
    const keys = Object.keys(filters);
    if (keys.length > 0 && keys.every((k) => /^\d+$/.test(k))) {
      return keys.sort((a, b) => a.length - b.length || (a < b ? -1 : 1)).map((k) => filters[k]);
    }
    return [filters];
  }
  throw badRequest(
    `Invalid filters ${quote(filters)}: expected a list of conditions such as [{"*.fields.title":{"equal":"x"}}]`,
  );
}

/** Compiles `filters` into a predicate, or `undefined` when there are none. */
export function compileFilters(
  repository: PreparedRepository,
  filters: unknown,
  locale: LocaleView,
): Predicate | undefined {
  const branches: Predicate[][] = [];
  const tooMany = () =>
    badRequest(
      `Too many filter conditions: at most ${maxConditions}; narrow the request with a collection or split it`,
    );
  const entries = entriesOf(filters);
  if (entries.length > maxConditions) throw tooMany();
  let conditions = 0;
  for (const entry of entries) {
    if (!isObject(entry))
      throw badRequest(`Invalid filter ${quote(entry)}: expected an object such as {"*.fields.title":{"equal":"x"}}`);
    const keys = Object.keys(entry);
    let join: 'and' | 'or' = 'and';
    let condition: Record<string, unknown> = entry;
    if (keys.length === 1 && /^(and|or)$/i.test(keys[0]!)) {
      join = keys[0]!.toLowerCase() as 'and' | 'or';
      const inner = entry[keys[0]!];
      if (!isObject(inner))
        throw badRequest(`Invalid filter ${quote(entry)}: "${keys[0]}" must wrap a condition object`);
      condition = inner;
    } else if (keys.some((k) => /^(and|or)$/i.test(k))) {
      throw badRequest(`Invalid filter ${quote(entry)}: "and"/"or" must be the only key of its entry`);
    }
    if (Object.keys(condition).length === 0) throw badRequest(`Invalid filter ${quote(entry)}: the condition is empty`);
    for (const tests of Object.values(condition)) conditions += isObject(tests) ? Object.keys(tests).length : 1;
    if (conditions > maxConditions) throw tooMany();
    const predicate = compileCondition(repository, condition, locale);
    if (join === 'or' || branches.length === 0) branches.push([predicate]);
    else branches[branches.length - 1]!.push(predicate);
  }
  if (branches.length === 0) return undefined;
  return anyOf(branches.map(allOf));
}

// Plain loops rather than some()/every() with closures: a predicate runs once per document per request.
function allOf(predicates: Predicate[]): Predicate {
  if (predicates.length === 1) return predicates[0]!;
  const all: Predicate = (record, view) => {
    for (let i = 0; i < predicates.length; i++) if (!predicates[i]!(record, view)) return false;
    return true;
  };
  // Only what one of them can match can match them all.
  const narrow = predicates.find((predicate) => predicate.candidates);
  if (narrow) all.candidates = narrow.candidates;
  return all;
}

function anyOf(predicates: Predicate[]): Predicate {
  if (predicates.length === 1) return predicates[0]!;
  return (record, view) => {
    for (let i = 0; i < predicates.length; i++) if (predicates[i]!(record, view)) return true;
    return false;
  };
}

function compileCondition(
  repository: PreparedRepository,
  condition: Record<string, unknown>,
  locale: LocaleView,
): Predicate {
  const parts: Predicate[] = [];
  for (const [path, tests] of Object.entries(condition)) {
    const source = parseFilterPath(path);
    if (!isObject(tests) || Object.keys(tests).length === 0) {
      throw badRequest(`Invalid filter on ${quote(path)}: expected {"<operator>": <value>}, such as {"equal": "x"}`);
    }
    for (const [operator, given] of Object.entries(tests)) {
      if (!operatorSet.has(operator)) {
        throw badRequest(
          `Unknown filter operator ${quote(operator)} on ${quote(path)}: use one of ${filterOperators.join(', ')}`,
        );
      }
      parts.push(compileTest(repository, source, operator as FilterOperator, given, locale));
    }
  }
  return allOf(parts);
}

type Test = (value: Normalized, record: PreparedRecord, view: LocaleView) => boolean;

interface Matcher {
  kind: Kind;
  test: Test;
}

function compileTest(
  repository: PreparedRepository,
  source: FilterPath,
  operator: FilterOperator,
  given: unknown,
  locale: LocaleView,
): Predicate {
  const what = `filter ${source.contentType}.${source.scope}.${source.name} ${operator}`;
  const collator = repository.collator(locale);
  const matcherFor = (kind: Kind, type?: string): Matcher => ({
    kind,
    test: makeTest(repository, operator, kind, given, what, collator, source, type),
  });

  // One matcher per kind the name has across the content types in scope; relation and asset fields are refused.
  const matchers = new Map<string, Matcher>(); // content type → matcher
  if (source.scope === 'fields') {
    const byType = repository.fieldsByName.get(source.name);
    for (const [contentType, field] of byType ?? []) {
      if (source.contentType !== '*' && source.contentType !== contentType) continue;
      const kind = kindOf(field.type);
      if (!kind)
        throw badRequest(
          `Cannot filter on ${quote(`${source.contentType}.fields.${source.name}`)}: ` +
            `filters do not work on ${field.type} fields`,
        );
      matchers.set(contentType, matcherFor(kind, field.type));
    }
    if (!byType) return () => false; // a field name no content type has matches nothing
  }
  const metaMatcher = source.scope === 'meta' ? matcherFor(metaKind(source.name)!) : undefined;
  // A document whose type lacks the field: the field is missing (spec §4).
  const whenMissing = operator === 'notEqual' || operator === 'notLike' || operator === 'notIn' || operator === 'empty';
  // The column of the view last asked for, held here: the predicate runs once per document.
  let columnView: LocaleView | undefined;
  let values: Normalized[] = [];

  const predicate: Predicate = (record, view) => {
    if (source.contentType !== '*' && record.contentType !== source.contentType) return false;
    const matcher = metaMatcher ?? matchers.get(record.contentType);
    if (!matcher) return whenMissing;
    if (view !== columnView) {
      values = column(repository, source, view);
      columnView = view;
    }
    return matcher.test(values[record.index], record, view);
  };
  if (source.scope === 'meta' && source.name === 'id' && (operator === 'in' || operator === 'equal')) {
    // Read as the test reads them (which refuses what is amiss): the ids as the column holds them.
    const wanted = operator === 'in' ? readList(given, 'bigint', what) : [readGiven(given, 'bigint', what)];
    predicate.candidates = () => {
      const byId = idIndex(repository);
      return new Set(wanted.flatMap((id) => byId.get(id as bigint) ?? []));
    };
  }
  return predicate;
}

/** The records of each id, as the `meta.id` column holds it; kept for the snapshot. */
export function idIndex(repository: PreparedRepository): Map<bigint, PreparedRecord[]> {
  if (repository.indexes.ids) return repository.indexes.ids;
  const ids = column(repository, { scope: 'meta', name: 'id' }, repository.defaultLocale);
  const index = new Map<bigint, PreparedRecord[]>();
  for (const record of repository.documents) {
    const id = ids[record.index] as bigint;
    const records = index.get(id);
    if (records) records.push(record);
    else index.set(id, [record]);
  }
  return (repository.indexes.ids = index);
}

/** The values of an `in` or `notIn` filter (a list, or text separated by commas), read as `kind`. */
function readList(given: unknown, kind: Kind, what: string): Comparable[] {
  const list = Array.isArray(given) ? given : typeof given === 'string' ? given.split(',') : [given];
  if (list.length > maxListValues)
    throw badRequest(`Too many values for ${what}: ${list.length}, at most ${maxListValues}; split the request`);
  if (list.length === 0 || list.some((v) => v === null || typeof v === 'object')) {
    throw invalidValue(given, what, 'a list, such as ["a","b"] or a,b');
  }
  return list.map((v) => readGiven(typeof v === 'string' && kind !== 'text' ? v.trim() : v, kind, what));
}

/**
 * A test of membership in `values`, in time that does not grow with the list: kinds compared by
 * plain equality look a value up in a set (locations by their text); text, compared by the
 * locale's collation, is searched for in the list sorted once.
 */
function memberTest(values: Comparable[], kind: Kind, collator: Intl.Collator): (value: Comparable) => boolean {
  if (kind === 'location') {
    const keys = new Set(values.map((v) => (v as readonly number[]).join(',')));
    return (value) => keys.has((value as readonly number[]).join(','));
  }
  if (kind !== 'text') {
    const set = new Set(values);
    return (value) => set.has(value);
  }
  const sorted = (values as string[]).slice().sort(collator.compare);
  return (value) => {
    let low = 0;
    let high = sorted.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const order = collator.compare(sorted[middle]!, value as string);
      if (order === 0) return true;
      if (order < 0) low = middle + 1;
      else high = middle - 1;
    }
    return false;
  };
}

function makeTest(
  repository: PreparedRepository,
  operator: FilterOperator,
  kind: Kind,
  given: unknown,
  what: string,
  collator: Intl.Collator,
  source: ValueSource,
  type?: string,
): Test {
  const cmp = (a: Comparable, b: Comparable) => compare(a, b, kind, collator);
  const anyOf = (value: Normalized, test: (v: Comparable) => boolean): boolean =>
    value === undefined
      ? false
      : Array.isArray(value) && kind !== 'location'
        ? (value as Comparable[]).some(test)
        : test(value as Comparable);

  switch (operator) {
    case 'empty':
    case 'notEmpty': {
      const wantEmpty = operator === 'empty';
      return (_value, record, view) => isEmptyValue(rawValue(record, source, view), type as never) === wantEmpty;
    }
    case 'in':
    case 'notIn': {
      const isMember = memberTest(readList(given, kind, what), kind, collator);
      const isIn = (value: Normalized) => anyOf(value, isMember);
      return operator === 'in' ? (value) => isIn(value) : (value) => !isIn(value);
    }
    case 'like':
    case 'notLike': {
      if (typeof given !== 'string' && typeof given !== 'number')
        throw invalidValue(given, what, 'a pattern such as abc%');
      const matches = compileLike(String(given));
      // The texts of the view last asked for, held here: the test runs once per document.
      let textsView: LocaleView | undefined;
      let texts: (string[] | undefined)[] = [];
      const isLike: Test = (_value, record, view) => {
        if (view !== textsView) {
          texts = likeTexts(repository, source, view);
          textsView = view;
        }
        return texts[record.index]?.some(matches) ?? false;
      };
      return operator === 'like' ? isLike : (value, record, view) => !isLike(value, record, view);
    }
    default: {
      const operand = readGiven(given, kind, what);
      const test = {
        equal: (v: Comparable) => cmp(v, operand) === 0,
        notEqual: (v: Comparable) => cmp(v, operand) === 0,
        greaterThan: (v: Comparable) => cmp(v, operand) > 0,
        greaterThanEqual: (v: Comparable) => cmp(v, operand) >= 0,
        lessThan: (v: Comparable) => cmp(v, operand) < 0,
        lessThanEqual: (v: Comparable) => cmp(v, operand) <= 0,
      }[operator];
      return operator === 'notEqual' ? (value) => !anyOf(value, test) : (value) => anyOf(value, test);
    }
  }
}

/** The value as the document holds it in the filter's locale, before normalisation. */
function rawValue(record: PreparedRecord, source: ValueSource, view: LocaleView): unknown {
  return source.scope === 'meta'
    ? record.meta[source.name as keyof PreparedRecord['meta']]
    : record.value(source.name, view);
}

/**
 * Each document's texts that `like` matches, folded for it, by record index: strings as they
 * are, numbers and ids in decimal, dates as stored; undefined when the value is missing. Made
 * on first use and kept for the snapshot, as the column it is made from.
 */
export function likeTexts(
  repository: PreparedRepository,
  source: ValueSource,
  locale: LocaleView,
): (string[] | undefined)[] {
  const view = source.scope === 'meta' ? '' : locale === 'all' ? repository.defaultLocale : locale;
  return kept(repository.indexes.likeTexts, source, view, () => {
    const values = column(repository, source, locale);
    return repository.documents.map((record) => {
      const value = values[record.index];
      const kind = kindFor(record, source);
      if (value === undefined || kind === undefined) return undefined;
      if (kind === 'date') return [foldCase(String(rawValue(record, source, locale)))];
      if (kind === 'boolean') return [value ? 'true' : 'false'];
      if (kind === 'location') return [(value as readonly number[]).join(',')];
      return (Array.isArray(value) ? value : [value]).map((v) => foldCase(String(v)));
    });
  });
}
