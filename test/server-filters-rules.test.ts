import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compileFilters } from '../src/server/filters.ts';
import { PreparedRepository } from '../src/server/prepared-repository.ts';
import { parseSnapshot } from '../src/wire/snapshot.ts';
import type { Options } from './helpers/forms.ts';
import { fixture, servedForFile } from './helpers/server.ts';
import { byId, filterAsks, startFiltersServer, where } from './helpers/server-filters.ts';

/**
 * Spec §4 (filters), over HTTP against the real server: how filter entries join (AND, OR, and an
 * id or time filter narrowing only its branch), and the rules every condition follows: a value
 * must read as the field type, a missing field, a localized field, the meta names, and the paths
 * and fields that are refused. Every case is sent three ways (bracketed parameters, `query=` JSON,
 * a POST body) and must get the same answer. Besides the shared `tiny` fixture, the server holds
 * the small repositories of test/helpers/server-filters.ts (`clock`: documents a day apart).
 */

const server = servedForFile(startFiltersServer);
const { list, matching, raw, refused } = filterAsks(server);

describe('entries join with AND, an or entry starts a new branch, and AND binds tighter than OR', () => {
  const a = { '*.fields.category': { equal: 'food' } }; // 100
  const b = { '*.fields.published': { equal: true } }; // 100, 102
  const c = { '*.fields.name': { equal: 'Bob' } }; // 201
  const d = { '*.meta.contentType': { equal: 'author' } }; // 200, 201

  it('reads [a, {and: b}, {or: c}, {and: d}] as (a AND b) OR (c AND d)', async () => {
    // Left to right it would be 201 alone; with OR binding tighter, nothing.
    expect(await matching(where(a, { and: b }, { or: c }, { and: d }))).toEqual(['100', '201']);
    const query = [
      'filters[0][*.fields.category][equal]=food',
      'filters[1][and][*.fields.published][equal]=true',
      'filters[2][or][*.fields.name][equal]=Bob',
      'filters[3][and][*.meta.contentType][equal]=author',
    ].join('&');
    expect(await raw('/tiny/documents', query)).toEqual(['100', '201']);
  });

  it('joins an entry without a wrapper with AND', async () => {
    expect(await matching(where(a, b))).toEqual(['100']);
    expect(await matching(where(a, { '*.fields.published': { equal: false } }))).toEqual([]);
  });

  it('accepts and / or in any letter case', async () => {
    expect(await matching(where(a, { AND: b }, { Or: c }, { aNd: d }))).toEqual(['100', '201']);
    expect(await matching(where(a, { OR: c }))).toEqual(['100', '201']);
  });

  it('takes bracket entries in the order of their index, numerically', async () => {
    // In text order "10" would come first, and the OR branch would start before the condition on food.
    expect(
      await raw(
        '/tiny/documents',
        'filters[10][or][*.fields.name][equal]=Bob&filters[2][*.fields.category][equal]=food',
      ),
    ).toEqual(['100', '201']);
  });

  // A filter on ids narrows a list to those documents before the rest is tested: only within its branch.
  it('narrows to the ids of an id filter within its AND branch alone', async () => {
    const ids = { '*.meta.id': { in: ['0100', '101', '200', '999'] } };
    expect(await matching(where(ids))).toEqual(['100', '101', '200']);
    expect(await matching(where(ids, { and: d }))).toEqual(['200']);
    expect(await matching(where(d, { and: ids }))).toEqual(['200']);
    expect(await matching(where(ids, { and: d }, { or: c }))).toEqual(['200', '201']);
    expect(await matching(where(c, { or: ids }))).toEqual(['100', '101', '200', '201']);
    expect(await matching(where({ 'news.meta.id': { equal: '200' } }))).toEqual([]);
    expect(await matching(where({ '*.meta.id': { equal: ' 0201' } }))).toEqual(['201']);
    expect(await matching(where(ids), '/tiny/collections/goodNews')).toEqual(['100']);
    const sorted = await list('/tiny/documents', { ...where(ids), sorting: { 'meta.id': 'DESC' } });
    expect(sorted.data.map((doc: any) => doc.meta.id)).toEqual(['200', '101', '100']);
  });

  it('names the documents an id filter can match, when its branch is the only one', () => {
    const tiny = new PreparedRepository(
      parseSnapshot(JSON.parse(readFileSync(fixture('tiny.json'), 'utf8')), 'tiny.json'),
      'http://localhost',
    );
    const candidates = (filters: object[]) => {
      const found = compileFilters(tiny, filters, 'en_US')?.candidates?.();
      return found && [...found].map((record) => record.id).sort(byId);
    };
    const ids = { '*.meta.id': { in: ['0100', '101', '999'] } };
    expect(candidates([ids])).toEqual(['100', '101']);
    expect(candidates([{ '*.meta.id': { equal: '201' } }])).toEqual(['201']);
    expect(candidates([d, { and: ids }])).toEqual(['100', '101']); // and-ed: the filter still decides
    expect(candidates([ids, { or: c }])).toBeUndefined();
    expect(candidates([a, { and: b }])).toBeUndefined();
    expect(candidates([{ '*.meta.id': { notIn: ['100'] } }])).toBeUndefined();
  });

  it('takes the bounds of a range of meta times as asked, ties included, alone or with other conditions', async () => {
    const at = (day: number) => `2024-03-${String(day).padStart(2, '0')}T00:00:00.000Z`;
    const updated = (operator: string, day: number) => ({ '*.meta.updatedAt': { [operator]: at(day) } });
    const ticks = (options: Options) => matching(options, '/clock/documents');
    expect(await ticks(where(updated('greaterThanEqual', 10)))).toEqual(['10', '11', '12']);
    expect(await ticks(where(updated('greaterThan', 10)))).toEqual(['11', '12']);
    expect(await ticks(where(updated('lessThanEqual', 2)))).toEqual(['1', '2']);
    expect(await ticks(where(updated('lessThan', 2)))).toEqual(['1']);
    expect(await ticks(where(updated('greaterThanEqual', 6), { and: updated('lessThanEqual', 6) }))).toEqual([
      '6',
      '7',
    ]);
    expect(await ticks(where(updated('greaterThan', 5), { and: updated('lessThan', 7) }))).toEqual(['6', '7']);
    expect(await ticks(where(updated('greaterThanEqual', 11), { or: updated('lessThan', 2) }))).toEqual([
      '1',
      '11',
      '12',
    ]);
    expect(await ticks(where(updated('greaterThanEqual', 11), { or: { '*.fields.n': { equal: 5 } } }))).toEqual([
      '5',
      '11',
      '12',
    ]);
    expect(await ticks(where({ '*.meta.createdAt': { lessThanEqual: '2024-02-02' } }))).toEqual(['11', '12']);
    expect(await ticks(where(updated('greaterThan', 3)))).toHaveLength(9);
    expect(await ticks(where(updated('greaterThan', 12)))).toEqual([]);
  });

  it('ANDs several paths and operators in one condition', async () => {
    const condition = {
      '*.fields.rating': { greaterThanEqual: 3, lessThan: 5 },
      '*.fields.published': { equal: true },
    };
    expect(await matching(where(condition))).toEqual(['102']);
    expect(await matching(where({ '*.fields.rating': { greaterThanEqual: 3, lessThan: 5 } }))).toEqual(['101', '102']);
  });
});

describe('a value that cannot be read as the field type is a 400', () => {
  it.each([
    ['a number', { '*.fields.rating': { equal: 'abc' } }],
    ['a number in a list', { '*.fields.rating': { in: '3,x' } }],
    ['a date', { '*.fields.date': { greaterThan: 'yesterday' } }],
    ['a date that does not exist', { '*.fields.date': { equal: '2024-13-45' } }],
    ['a boolean', { '*.fields.published': { equal: 'yes' } }],
    ['a location', { '*.fields.place': { equal: 'north' } }],
    ['an id', { '*.meta.id': { equal: '12a' } }],
    ['a revision', { '*.meta.revision': { lessThan: 'two' } }],
    ['a timestamp', { '*.meta.createdAt': { greaterThan: 'soon' } }],
  ])('refuses %s', async (_, condition) => {
    expect(await refused(where(condition))).toMatch(/filter/i);
  });
});

describe('on a missing field notEqual, notLike, notIn and empty are true, every other operator false', () => {
  // 103 is news without a rating; 200 is an author, a type without the field.
  it.each([
    ['equal', 5, false],
    ['notEqual', 5, true],
    ['greaterThan', 0, false],
    ['greaterThanEqual', 0, false],
    ['lessThan', 100, false],
    ['lessThanEqual', 100, false],
    ['like', '%', false],
    ['notLike', '%', true],
    ['empty', true, true],
    ['notEmpty', true, false],
    ['in', [5], false],
    ['notIn', [5], true],
  ])('%s is %s', async (operator, value, expected) => {
    const ids = await matching(where({ '*.fields.rating': { [operator]: value } }));
    expect(ids.includes('103')).toBe(expected);
    expect(ids.includes('200')).toBe(expected);
  });
});

describe('a localized field is tested in the request locale after fallback, and in the default locale for locale=all', () => {
  it('tests the default locale without a locale option', async () => {
    expect(await matching(where({ '*.fields.title': { equal: 'Apfelernte' } }))).toEqual([]);
  });

  it('tests the request locale', async () => {
    expect(await matching({ locale: 'de_DE', ...where({ '*.fields.title': { equal: 'Apfelernte' } }) })).toEqual([
      '100',
    ]);
    expect(await matching({ locale: 'de_CH', ...where({ '*.fields.title': { equal: 'Bananenschiffe' } }) })).toEqual([
      '101',
    ]);
    expect(await matching({ locale: 'de_CH', ...where({ '*.fields.title': { equal: 'Bananenboote' } }) })).toEqual([]);
  });

  it('follows the fallback chain', async () => {
    expect(await matching({ locale: 'de_CH', ...where({ '*.fields.title': { equal: 'Apfelernte' } }) })).toEqual([
      '100',
    ]);
    expect(await matching({ locale: 'de_DE', ...where({ '*.fields.title': { like: 'cherry%' } }) })).toEqual(['102']);
  });

  it('tests the default locale for locale=all', async () => {
    expect(await matching({ locale: 'all', ...where({ '*.fields.title': { equal: 'Apple harvest' } }) })).toEqual([
      '100',
    ]);
    expect(await matching({ locale: 'all', ...where({ '*.fields.title': { equal: 'Apfelernte' } }) })).toEqual([]);
  });
});

describe('meta names are id, contentType, revision, tags, createdAt and updatedAt', () => {
  it('filters on each of them', async () => {
    expect(await matching(where({ '*.meta.id': { equal: '101' } }))).toEqual(['101']);
    expect(await matching(where({ '*.meta.contentType': { notEqual: 'news' } }))).toEqual(['200', '201']);
    expect(await matching(where({ '*.meta.revision': { equal: 1 } }))).toHaveLength(6);
    expect(await matching(where({ '*.meta.tags': { empty: true } }))).toEqual(['102', '103', '200', '201']);
    expect(await matching(where({ '*.meta.createdAt': { lessThan: '2024-01-01' } }))).toEqual(['200', '201']);
    expect(await matching(where({ '*.meta.updatedAt': { greaterThanEqual: '2024-01-03' } }))).toEqual(['102', '103']);
  });

  it('refuses any other meta name', async () => {
    expect(await refused(where({ '*.meta.title': { equal: 'x' } }))).toMatch(/title/);
  });
});

describe('a filter on a relation or asset field, an unknown operator or a malformed path is a 400', () => {
  it.each([
    ['a relation field', { '*.fields.author': { equal: '200' } }],
    ['a relation field of a named type', { 'news.fields.relatedNews': { notEmpty: true } }],
    ['an asset field', { '*.fields.images': { empty: true } }],
    ['an asset field of a named type', { 'author.fields.avatar': { empty: true } }],
  ])('refuses %s', async (_, condition) => {
    expect(await refused(where(condition))).toMatch(/relation|asset/);
  });

  it('refuses an unknown operator and names it', async () => {
    expect(await refused(where({ '*.fields.title': { contains: 'x' } }))).toMatch(/contains/);
  });

  it.each(['title', 'fields.title', '*.title.x', '*.fields.', '*.fields.title.en_US', '..'])(
    'refuses the path %j',
    async (path) => {
      expect(await refused(where({ [path]: { equal: 'x' } }))).toMatch(/path/i);
    },
  );
});

describe('a field name that no content type has matches nothing', () => {
  it.each(['equal', 'notEqual', 'empty'])('with %s', async (operator) => {
    expect(await matching(where({ '*.fields.nothing': { [operator]: 'x' } }))).toEqual([]);
  });
});
