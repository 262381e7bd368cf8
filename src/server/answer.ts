import { type ApiError, refusalOf } from './errors.ts';
import { compileFilters } from './filters.ts';
import { collectIncludes } from './includes.ts';
import { recent } from './indexes.ts';
import { applyMask } from './mask.ts';
import type { RequestOptions } from './options.ts';
import type { LocaleView, PreparedRecord, PreparedRepository } from './prepared-repository.ts';
import type { CollectionDefinition } from '../wire/snapshot-format.ts';
import { parseSorting, sortedDocuments, sortRecords } from './sorting.ts';

/**
 * Computes answers. A list runs: collection definition → request filters → tags → search →
 * sort → total → offset/limit → locale → includes → embedAssets → fields mask (spec §3).
 * Without a mask, documents are spliced in as JSON serialised once per snapshot and locale.
 */

function hasAnyTag(record: PreparedRecord, tags: ReadonlySet<string>): boolean {
  for (const tag of record.meta.tags) if (tags.has(tag)) return true;
  return false;
}

/** What a list selects by, a collection's or a request's: a content type, tags, filters and search words. */
type Selection = Pick<RequestOptions, 'includeTags' | 'excludeTags' | 'filters' | 'search'> & { contentType?: string };

/** A test of a document against a selection in a locale view. */
function selects(selection: Selection, view: LocaleView): (record: PreparedRecord) => boolean {
  const { contentType, includeTags, excludeTags, filters, search } = selection;
  const candidates = filters?.candidates?.();
  return (record) =>
    (!contentType || record.contentType === contentType) &&
    (!candidates || candidates.has(record)) &&
    (!includeTags || hasAnyTag(record, includeTags)) &&
    (!excludeTags || !hasAnyTag(record, excludeTags)) &&
    (!filters || filters(record, view)) &&
    (!search || search.every((term) => record.searchText(view).includes(term)));
}

/**
 * A collection's candidates before its conditions: its listed documents that exist, in listed order, or every document
 * in the default order.
 */
function memberBase(repository: PreparedRepository, collection: CollectionDefinition): PreparedRecord[] {
  if (!collection.members) return repository.defaultOrder;
  const listed: PreparedRecord[] = [];
  for (const id of collection.members) {
    const record = repository.byId.get(id);
    if (record && record.contentType !== '_asset') listed.push(record);
  }
  return listed;
}

/**
 * The documents of a collection in its own order (its sorting, else its listed order, else the default order), for a
 * locale; kept for the snapshot.
 */
export function collectionMembers(
  repository: PreparedRepository,
  collection: CollectionDefinition,
  view: LocaleView,
): PreparedRecord[] {
  const key = `${collection.apiId}:${view}`;
  const done = repository.indexes.collections.get(key);
  if (done) return done.members;
  const tags = (list: string[] | undefined) => (list?.length ? new Set(list) : undefined);
  const selection = {
    contentType: collection.contentType,
    includeTags: tags(collection.includeTags),
    excludeTags: tags(collection.excludeTags),
    filters: collection.filters?.length ? compileFilters(repository, collection.filters, view) : undefined,
  };
  const matching = memberBase(repository, collection).filter(selects(selection, view));
  const members = collection.sorting
    ? sortRecords(repository, matching, parseSorting(repository, collection.sorting), view)
    : matching;
  repository.indexes.collections.set(key, { apiId: collection.apiId, view, members });
  return members;
}

/**
 * Checks a collection's stored filters and sorting; returns the 400 a request would get, and which of the two it is
 * about.
 */
export function collectionError(
  repository: PreparedRepository,
  collection: CollectionDefinition,
): { key: 'filters' | 'sorting'; error: ApiError } | undefined {
  const filters = refusalOf(
    () => collection.filters?.length && compileFilters(repository, collection.filters, repository.defaultLocale),
  );
  if (filters) return { key: 'filters', error: filters };
  const sorting = refusalOf(() => collection.sorting && parseSorting(repository, collection.sorting));
  return sorting && { key: 'sorting', error: sorting };
}

const maxSelections = 32;
const selections = new WeakMap<PreparedRecord[], Map<string, PreparedRecord[]>>();

/**
 * The documents a list answers before offset and limit. The last few selections of each base
 * list (a snapshot's documents, a collection) are kept, so paging through one costs a slice.
 */
function selectDocuments(
  repository: PreparedRepository,
  base: PreparedRecord[],
  options: RequestOptions,
): PreparedRecord[] {
  const key = options.selectionKey;
  if (key === undefined) return base;
  let cache = selections.get(base);
  if (!cache) selections.set(base, (cache = new Map()));
  return recent(cache, key, maxSelections, () => computeSelection(repository, base, options));
}

function computeSelection(
  repository: PreparedRepository,
  base: PreparedRecord[],
  options: RequestOptions,
): PreparedRecord[] {
  const { filters, includeTags, excludeTags, search, locale } = options;
  const matches = selects(options, locale);
  const filtered = filters || includeTags || excludeTags || search;
  if (!options.sorting?.length) return filtered ? base.filter(matches) : base;
  // Filter the whole repository in the requested order (kept per snapshot) rather than sort per request.
  const order = sortedDocuments(repository, options.sorting, locale);
  if (base === repository.defaultOrder) return filtered ? order.filter(matches) : order;
  const inBase = new Uint8Array(repository.documents.length);
  for (const record of base) inBase[record.index] = 1;
  return order.filter((record) => inBase[record.index] === 1 && (!filtered || matches(record)));
}

function includeGroups(
  repository: PreparedRepository,
  answered: PreparedRecord[],
  options: RequestOptions,
): Map<string, PreparedRecord[]> | undefined {
  return (
    options.includes && collectIncludes(repository, answered, options.includes, options.locale, options.embedAssets)
  );
}

function includesObject(groups: Map<string, PreparedRecord[]>, options: RequestOptions): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null);
  for (const [name, records] of groups) out[name] = records.map((r) => r.toObject(options.locale, options.embedAssets));
  return out;
}

/**
 * An answer's JSON: text, or UTF-8 parts to be sent one after another (spliced from cached record
 * JSON, never joined: a 1,000-document page is megabytes). For parts, `identity` names what they
 * are made of (locale, meta, record ids); within one snapshot it determines the bytes, so an ETag
 * hashes it instead of the bytes. Without `identity`, the ETag hashes the bytes: a single record
 * keeps its ETag across snapshots while it is unchanged.
 */
export type Body = { json: string | Buffer[]; identity?: undefined } | { json: Buffer[]; identity: string };

/** The JSON body of a list answer. */
export function listBody(repository: PreparedRepository, base: PreparedRecord[], options: RequestOptions): Body {
  const selected = selectDocuments(repository, base, options);
  const page = options.limit === 0 ? [] : selected.slice(options.offset, options.offset + options.limit);
  const meta = { count: page.length, limit: options.limit, offset: options.offset, total: selected.length };
  const groups = includeGroups(repository, page, options);
  const { mask } = options;
  if (mask) {
    const keepsFields = mask.has('fields') || mask.has('*');
    // A mask that keeps no fields needs no field values worked out.
    const object = keepsFields
      ? (record: PreparedRecord) => record.toObject(options.locale, options.embedAssets)
      : (record: PreparedRecord) => ({ meta: record.meta });
    const data = page.map((record) => applyMask(object(record), mask));
    const includes =
      groups && (applyMask({ includes: includesObject(groups, options) }, mask) as { includes?: unknown }).includes;
    return { json: JSON.stringify({ status: 200, meta, data, ...(includes !== undefined ? { includes } : {}) }) };
  }
  const parts = [Buffer.from(`{"status":200,"meta":${JSON.stringify(meta)},"data":[`)];
  pushRecords(parts, page, options);
  parts.push(Buffer.from(']'));
  if (groups) {
    parts.push(comma);
    pushIncludes(parts, groups, options);
  }
  parts.push(Buffer.from('}'));
  return { json: parts, identity: identity('list', options, meta, page, groups) };
}

/** The JSON body of a single document or asset answer. */
export function recordBody(repository: PreparedRepository, record: PreparedRecord, options: RequestOptions): Body {
  const groups = includeGroups(repository, [record], options);
  if (options.mask) {
    const object = {
      ...record.toObject(options.locale, options.embedAssets),
      ...(groups ? { includes: includesObject(groups, options) } : {}),
    };
    return { json: JSON.stringify(applyMask(object, options.mask)) };
  }
  const json = record.toJson(options.locale, options.embedAssets);
  if (!groups) return { json: [json] };
  const id = identity('record', options, undefined, [record], groups);
  const parts = [json.subarray(0, json.length - 1), comma]; // `{"fields":…,"meta":…` + `,"includes":{…}}`
  pushIncludes(parts, groups, options);
  parts.push(Buffer.from('}'));
  return { json: parts, identity: id };
}

function identity(
  kind: string,
  options: RequestOptions,
  meta: object | undefined,
  records: PreparedRecord[],
  groups: Map<string, PreparedRecord[]> | undefined,
): string {
  const ids = (list: PreparedRecord[]) => list.map((r) => r.id).join(',');
  const included = groups ? [...groups].map(([name, list]) => `${name}:${ids(list)}`).join(';') : '-';
  return `${kind}|${options.locale}|${options.embedAssets}|${JSON.stringify(meta)}|${ids(records)}|${included}`;
}

const comma = Buffer.from(',');

/** Appends the records' JSON, comma-separated. */
function pushRecords(parts: Buffer[], records: PreparedRecord[], options: RequestOptions): void {
  records.forEach((record, i) => {
    if (i > 0) parts.push(comma);
    parts.push(record.toJson(options.locale, options.embedAssets));
  });
}

/** Appends `"includes":{"<field>":[…],…}`. */
function pushIncludes(parts: Buffer[], groups: Map<string, PreparedRecord[]>, options: RequestOptions): void {
  parts.push(Buffer.from('"includes":{'));
  [...groups].forEach(([name, records], i) => {
    parts.push(Buffer.from(`${i > 0 ? ',' : ''}${JSON.stringify(name)}:[`));
    pushRecords(parts, records, options);
    parts.push(Buffer.from(']'));
  });
  parts.push(Buffer.from('}'));
}
