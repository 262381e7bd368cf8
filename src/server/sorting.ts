import { badRequest, quote, sectionHint } from './errors.ts';
import { column, kept, kindFor, recent } from './indexes.ts';
import type { LocaleView, PreparedRecord, PreparedRepository } from './prepared-repository.ts';
import { compare, type Comparable, type Kind, kindOf, metaKind, type ValueSource } from './values.ts';

/**
 * Sorting (spec §5). Each sort key is turned, once per snapshot and locale, into a rank per
 * document (equal values share a rank, missing values get -1), so a request sorts by integers.
 */

export interface SortKey extends ValueSource {
  direction: 1 | -1;
}

const kindOrder: Kind[] = ['boolean', 'number', 'bigint', 'date', 'location', 'text', 'json'];
/** More keys than this order nothing a site needs; the bound keeps a request from holding the server up (spec §9). */
const maxSortKeys = 32;

function parseDirection(value: unknown, key: string): 1 | -1 {
  const text = typeof value === 'string' || typeof value === 'number' ? String(value) : undefined; // not ["asc"]
  if (text === 'ASC' || text === 'asc' || text === '1') return 1;
  if (text === 'DESC' || text === 'desc' || text === '-1') return -1;
  throw badRequest(`Invalid direction ${quote(value)} for sorting ${quote(key)}: use ASC, asc, 1, DESC, desc or -1`);
}

/** Parses `{ "fields.date": "DESC", "meta.id": "asc" }`; throws a 400 for keys that cannot be sorted on. */
export function parseSorting(repository: PreparedRepository, sorting: unknown): SortKey[] {
  if (typeof sorting !== 'object' || sorting === null || Array.isArray(sorting)) {
    throw badRequest(`Invalid sorting ${quote(sorting)}: expected an object such as {"fields.title":"ASC"}`);
  }
  const entries = Object.entries(sorting);
  if (entries.length > maxSortKeys) throw badRequest(`Invalid sorting: ${entries.length} keys, at most ${maxSortKeys}`);
  const keys: SortKey[] = [];
  let dropped = false;
  for (const [key, direction] of entries) {
    const match = /^(fields|meta)\.([^.]+)$/.exec(key);
    if (!match) {
      throw badRequest(
        `Malformed sorting key ${quote(key)}: expected fields.<name> or meta.<name>${sectionHint(key, false)}`,
      );
    }
    const scope = match[1] as 'fields' | 'meta';
    const name = match[2]!;
    if (scope === 'meta') {
      if (!metaKind(name))
        throw badRequest(
          `Unknown meta name ${quote(name)} in sorting: use id, contentType, revision, createdAt or updatedAt`,
        );
      if (name === 'tags') throw badRequest('Cannot sort on meta.tags');
    } else {
      for (const field of repository.fieldsByName.get(name)?.values() ?? []) {
        if (!kindOf(field.type) || field.type === 'json')
          throw badRequest(`Cannot sort on ${quote(key)}: ${field.type} fields are not sortable`);
      }
    }
    const order = parseDirection(direction, key);
    // A field no content type has is missing from every document and orders nothing; leaving it
    // out also keeps requests from making ranks, kept per snapshot, for names without end.
    if (scope === 'fields' && !repository.fieldsByName.has(name)) {
      dropped = true;
      continue;
    }
    keys.push({ scope, name, direction: order });
  }
  // Sorted on nothing but such fields, every document ties: the order is the tie-break's.
  if (dropped && keys.length === 0) keys.push({ scope: 'meta', name: 'id', direction: 1 });
  return keys;
}

/** Each document's rank for a sort key in a locale, by record index; -1 when the value is missing. */
export function ranks(repository: PreparedRepository, { scope, name }: ValueSource, view: LocaleView): Int32Array {
  const locale = view === 'all' ? repository.defaultLocale : view;
  const source = { scope, name };
  return kept(repository.indexes.sortRanks, source, locale, () => {
    const values = column(repository, source, locale);
    const collator = repository.collator(locale);
    const present: { record: PreparedRecord; kind: Kind; value: Comparable }[] = [];
    for (const record of repository.documents) {
      const value = values[record.index];
      if (value === undefined) continue;
      const kind = kindFor(record, source)!;
      // A multiple select sorts by its values joined with ",".
      present.push({
        record,
        kind,
        value: Array.isArray(value) && kind === 'text' ? value.join(',') : (value as Comparable),
      });
    }
    const order = (a: (typeof present)[number], b: (typeof present)[number]) =>
      a.kind === b.kind
        ? compare(a.value, b.value, a.kind, collator)
        : kindOrder.indexOf(a.kind) - kindOrder.indexOf(b.kind);
    present.sort(order);
    const result = new Int32Array(repository.documents.length).fill(-1);
    let rank = 0;
    present.forEach((entry, i) => {
      if (i > 0 && order(present[i - 1]!, entry) !== 0) rank++;
      result[entry.record.index] = rank;
    });
    return result;
  });
}

/** Sorts documents by the keys; missing values last whatever the direction, ties on `meta.id` ascending. */
export function sortRecords(
  repository: PreparedRepository,
  records: PreparedRecord[],
  keys: SortKey[],
  view: LocaleView,
): PreparedRecord[] {
  const columns = keys.map((key) => ({ ranks: ranks(repository, key, view), direction: key.direction }));
  const idRanks = ranks(repository, { scope: 'meta', name: 'id' }, view);
  return records.sort((a, b) => {
    for (const { ranks, direction } of columns) {
      const x = ranks[a.index]!;
      const y = ranks[b.index]!;
      if (x === y) continue;
      if (x < 0) return 1;
      if (y < 0) return -1;
      return direction * (x - y);
    }
    return idRanks[a.index]! - idRanks[b.index]!;
  });
}

const maxOrders = 32;

/**
 * Every document in the order of the keys, kept per snapshot for the last few distinct sortings
 * and locales. The order is total (ties end on `meta.id`), so filtering it gives the same list
 * as sorting the filtered documents, without a sort per request.
 */
export function sortedDocuments(repository: PreparedRepository, keys: SortKey[], view: LocaleView): PreparedRecord[] {
  const locale = view === 'all' ? repository.defaultLocale : view;
  const id = `${keys.map((k) => `${k.scope}.${k.name}${k.direction > 0 ? '+' : '-'}`).join(',')}@${locale}`;
  const make = () => sortRecords(repository, [...repository.documents], keys, view);
  return recent(repository.indexes.orders, id, maxOrders, make);
}
