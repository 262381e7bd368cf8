import { hash } from 'node:crypto';
import { isObject } from '../wire/schemas.ts';
import { badRequest, quote } from './errors.ts';
import { compileFilters, type Predicate } from './filters.ts';
import { type IncludePlan, parseIncludes } from './includes.ts';
import { type Mask, parseMask } from './mask.ts';
import type { QueryTree } from './query-string.ts';
import type { LocaleView, PreparedRepository } from './prepared-repository.ts';
import { parseSorting, type SortKey } from './sorting.ts';

/** Request options (spec §3), read and checked; every malformed value is a 400 naming the option. */
export interface RequestOptions {
  limit: number;
  offset: number;
  locale: LocaleView;
  includes?: IncludePlan;
  embedAssets: boolean;
  filters?: Predicate;
  includeTags?: ReadonlySet<string>;
  excludeTags?: ReadonlySet<string>;
  sorting?: SortKey[];
  mask?: Mask;
  /** The distinct terms of `search`, lower-cased. */
  search?: string[];
  /**
   * Names what filters, tags, search, sorting and locale select, so lists can reuse a selection; absent when nothing is
   * selected.
   */
  selectionKey?: string;
}

const defaultLimit = 25;
const maxLimit = 1000;
/**
 * Every search term and every tag is looked for in every document: bounds far beyond any real
 * use keep one request from holding the server up for the others (spec §9).
 */
const maxSearchTerms = 100;
const maxTags = 1_000;

const listOnly = ['limit', 'offset', 'filters', 'includeTags', 'excludeTags', 'sorting', 'search'] as const;
const everywhere = ['locale', 'includes', 'embedAssets', 'fields'] as const;
type OptionName = (typeof listOnly)[number] | (typeof everywhere)[number];

/**
 * Merges the three forms: the JSON body wins over `query=`, and `query=` over bracketed
 * parameters, option by option. Only own keys of known option names are read.
 */
export function mergeOptionSources(brackets: QueryTree, body: unknown): Map<OptionName, unknown> {
  const sources: Record<string, unknown>[] = [];
  if (body !== undefined) {
    if (!isObject(body)) throw badRequest('The request body must be a JSON object of options');
    sources.push(body);
  }
  const query = brackets.query;
  if (query !== undefined) {
    if (typeof query !== 'string')
      throw badRequest('Invalid query: expected URI-encoded JSON, such as query=%7B%22limit%22%3A10%7D');
    let parsed: unknown;
    try {
      parsed = JSON.parse(query);
    } catch (error) {
      throw badRequest(`Invalid query: not valid JSON (${(error as Error).message})`);
    }
    if (!isObject(parsed)) throw badRequest('Invalid query: expected a JSON object of options');
    sources.push(parsed);
  }
  sources.push(brackets);
  const merged = new Map<OptionName, unknown>();
  for (const name of [...listOnly, ...everywhere]) {
    const source = sources.find((s) => Object.hasOwn(s, name));
    if (source) merged.set(name, source[name]);
  }
  return merged;
}

function readInteger(value: unknown, name: string): number {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < 0)
    throw badRequest(`Invalid ${name} ${quote(value)}: expected a whole number of 0 or more`);
  return n;
}

function readBoolean(value: unknown, name: string): boolean {
  if (value === true || value === 'true' || value === 1 || value === '1') return true;
  if (value === false || value === 'false' || value === 0 || value === '0') return false;
  throw badRequest(`Invalid ${name} ${quote(value)}: expected true, false, 1 or 0`);
}

function readTags(value: unknown, name: string): Set<string> {
  const list = typeof value === 'string' ? value.split(',') : Array.isArray(value) ? value : undefined;
  if (list && list.length > maxTags) throw badRequest(`Invalid ${name}: ${list.length} tags, at most ${maxTags}`);
  if (!list || list.some((tag) => typeof tag !== 'string')) {
    throw badRequest(`Invalid ${name} ${quote(value)}: expected tags as a,b or a JSON array of strings`);
  }
  return new Set((list as string[]).map((tag) => tag.trim()).filter((tag) => tag !== ''));
}

/**
 * The distinct words of a search, lower-cased; stops at the first word over the bound, so a huge search costs no more
 * than a small one.
 */
function searchTerms(search: string): string[] {
  const terms = new Set<string>();
  for (const [word] of search.matchAll(/\S+/g)) {
    terms.add(word.toLowerCase());
    if (terms.size > maxSearchTerms) throw badRequest(`Invalid search: more than ${maxSearchTerms} words`);
  }
  return [...terms];
}

function readLocale(repository: PreparedRepository, value: unknown): LocaleView {
  if (value === 'all' || (typeof value === 'string' && repository.chains.has(value))) return value;
  const keys = [...repository.chains.keys()].join(', ');
  throw badRequest(`Unknown locale ${quote(value)}: this repository has ${keys} (or use all)`);
}

/** Reads the options that apply to the endpoint; list-only options are ignored on single records. */
export function readOptions(
  repository: PreparedRepository,
  merged: Map<OptionName, unknown>,
  isList: boolean,
): RequestOptions {
  const get = (name: OptionName) => merged.get(name);
  const has = (name: OptionName) => merged.has(name) && (isList || !(listOnly as readonly string[]).includes(name));
  const locale = has('locale') ? readLocale(repository, get('locale')) : repository.defaultLocale;
  const options: RequestOptions = {
    limit: has('limit') ? Math.min(readInteger(get('limit'), 'limit'), maxLimit) : defaultLimit,
    offset: has('offset') ? readInteger(get('offset'), 'offset') : 0,
    locale,
    embedAssets: has('embedAssets') ? readBoolean(get('embedAssets'), 'embedAssets') : false,
  };
  if (has('includes')) {
    const plan = parseIncludes(get('includes'));
    if (plan) options.includes = plan;
  }
  if (has('filters')) {
    const filters = compileFilters(repository, get('filters'), locale);
    if (filters) options.filters = filters;
  }
  if (has('includeTags')) options.includeTags = readTags(get('includeTags'), 'includeTags');
  if (has('excludeTags')) options.excludeTags = readTags(get('excludeTags'), 'excludeTags');
  if (has('sorting')) options.sorting = parseSorting(repository, get('sorting'));
  if (has('fields')) {
    const mask = get('fields');
    if (typeof mask !== 'string')
      throw badRequest(`Invalid fields ${quote(mask)}: expected a mask such as fields(title),meta`);
    options.mask = parseMask(mask);
  }
  if (has('search')) {
    const search = get('search');
    if (typeof search !== 'string' && typeof search !== 'number')
      throw badRequest(`Invalid search ${quote(search)}: expected text`);
    const terms = searchTerms(String(search));
    if (terms.length > 0) options.search = terms;
  }
  const { filters, includeTags, excludeTags, sorting, search } = options;
  if (filters || includeTags || excludeTags || sorting || search) {
    const tags = (set?: ReadonlySet<string>) => set && [...set];
    const key = JSON.stringify([
      locale,
      filters ? get('filters') : null,
      tags(includeTags),
      tags(excludeTags),
      sorting,
      search,
    ]);
    // Selections are kept under their key: a hash keeps a megabyte of options from being kept with them.
    options.selectionKey = key.length > 256 ? hash('sha256', key) : key;
  }
  return options;
}
