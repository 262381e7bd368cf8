import { ApiError } from './errors.ts';
import { compileFilters } from './filters.ts';
import { collectIncludes } from './includes.ts';
import { applyMask } from './mask.ts';
import type { RequestOptions } from './options.ts';
import type { LocaleView, PreparedRecord, PreparedRepository } from './repository.ts';
import type { CollectionDefinition } from './snapshot.ts';
import { parseSorting, sortRecords } from './sorting.ts';

/**
 * Computes answers. A list runs: collection definition → request filters → tags → search →
 * sort → total → offset/limit → locale → includes → embedAssets → fields mask (spec §3).
 * Without a mask, documents are spliced in as JSON serialised once per snapshot and locale.
 */

function hasAnyTag(record: PreparedRecord, tags: string[]): boolean {
  return record.meta.tags.some((tag) => tags.includes(tag));
}

/** The documents of a collection in its own order, for a locale; memoised per snapshot. */
export function collectionMembers(repository: PreparedRepository, collection: CollectionDefinition, view: LocaleView): PreparedRecord[] {
  return repository.memoize(`collection:${collection.apiId}:${view}`, () => {
    const filters = collection.filters?.length ? compileFilters(repository, collection.filters, view) : undefined;
    const members = repository.defaultOrder.filter(
      (record) =>
        (!collection.contentType || record.contentType === collection.contentType) &&
        (!collection.includeTags?.length || hasAnyTag(record, collection.includeTags)) &&
        (!collection.excludeTags?.length || !hasAnyTag(record, collection.excludeTags)) &&
        (!filters || filters(record, view)),
    );
    return collection.sorting ? sortRecords(repository, members, parseSorting(repository, collection.sorting), view) : members;
  });
}

/** Checks a collection's stored filters and sorting; returns the 400 a request would get, and which of the two it is about. */
export function collectionError(repository: PreparedRepository, collection: CollectionDefinition): { key: 'filters' | 'sorting'; error: ApiError } | undefined {
  const checks = {
    filters: () => collection.filters?.length && compileFilters(repository, collection.filters, repository.defaultLocale),
    sorting: () => collection.sorting && parseSorting(repository, collection.sorting),
  };
  for (const key of ['filters', 'sorting'] as const) {
    try {
      checks[key]();
    } catch (error) {
      if (error instanceof ApiError) return { key, error };
      throw error;
    }
  }
  return undefined;
}

function selectDocuments(repository: PreparedRepository, base: PreparedRecord[], options: RequestOptions): PreparedRecord[] {
  const { filters, includeTags, excludeTags, search, locale } = options;
  let records = base;
  if (filters || includeTags || excludeTags || search) {
    records = base.filter(
      (record) =>
        (!filters || filters(record, locale)) &&
        (!includeTags || hasAnyTag(record, includeTags)) &&
        (!excludeTags || !hasAnyTag(record, excludeTags)) &&
        (!search || search.every((term) => record.searchText(locale).includes(term))),
    );
  }
  if (options.sorting?.length) records = sortRecords(repository, records === base ? [...base] : records, options.sorting, locale);
  return records;
}

function includeGroups(repository: PreparedRepository, answered: PreparedRecord[], options: RequestOptions): Map<string, PreparedRecord[]> | undefined {
  return options.includes && collectIncludes(repository, answered, options.includes, options.locale, options.embedAssets);
}

function recordObject(repository: PreparedRepository, record: PreparedRecord, options: RequestOptions): object {
  return options.embedAssets ? repository.embedAssets(record, options.locale) : record.toObject(options.locale);
}

function includesObject(repository: PreparedRepository, groups: Map<string, PreparedRecord[]>, options: RequestOptions): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null);
  for (const [name, records] of groups) out[name] = records.map((r) => recordObject(repository, r, options));
  return out;
}

/** The JSON body of a list answer. */
export function listBody(repository: PreparedRepository, base: PreparedRecord[], options: RequestOptions): string {
  const selected = selectDocuments(repository, base, options);
  const page = options.limit === 0 ? [] : selected.slice(options.offset, options.offset + options.limit);
  const meta = { count: page.length, limit: options.limit, offset: options.offset, total: selected.length };
  const groups = includeGroups(repository, page, options);
  const { mask } = options;
  if (mask) {
    const data = page.map((record) => applyMask(recordObject(repository, record, options), mask));
    const includes = groups && (applyMask({ includes: includesObject(repository, groups, options) }, mask) as { includes?: unknown }).includes;
    return JSON.stringify({ status: 200, meta, data, ...(includes !== undefined ? { includes } : {}) });
  }
  const json = (records: PreparedRecord[]) => records.map((record) => record.toJson(options.locale, options.embedAssets)).join(',');
  const head = `{"status":200,"meta":${JSON.stringify(meta)},"data":[${json(page)}]`;
  if (!groups) return `${head}}`;
  const includes = [...groups].map(([name, records]) => `${JSON.stringify(name)}:[${json(records)}]`).join(',');
  return `${head},"includes":{${includes}}}`;
}

/** The JSON body of a single document or asset answer. */
export function recordBody(repository: PreparedRepository, record: PreparedRecord, options: RequestOptions): string {
  const groups = includeGroups(repository, [record], options);
  const object = { ...recordObject(repository, record, options), ...(groups ? { includes: includesObject(repository, groups, options) } : {}) };
  return JSON.stringify(options.mask ? applyMask(object, options.mask) : object);
}
