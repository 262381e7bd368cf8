import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../bench/generate.ts';
import { compileFilters } from '../src/server/filters.ts';
import { compileLike, foldCase } from '../src/server/like.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { PreparedRepository } from '../src/server/repository.ts';
import { parseSnapshot } from '../src/server/snapshot.ts';
import { doc, everyWay, nordic, type Options, refusedEveryWay, repository } from './helpers/forms.ts';
import { fixture, getJson } from './helpers/server.ts';

/**
 * Spec §4 (filters), the tag options of §3 and `search` of §8, over HTTP against the real server.
 * Every case is sent three ways (bracketed parameters, `query=` JSON, a POST body) and must get
 * the same answer. Besides the shared `tiny` fixture, three small repositories are built below:
 * `ledger` (20-digit ids, revisions, a tagged collection), `blanks` (empty values of every kind)
 * and `nordic` (a Swedish locale, whose collation puts Ä after Z).
 */


const ledger = {
  repository: repository('ledger'),
  contentTypes: [{ apiId: 'entry', fields: [{ apiId: 'amount', type: 'number' }] }],
  documents: [
    // Two ids a double cannot tell apart.
    doc('18446744073709551614', 'entry', { amount: 1 }, { revision: 3, tags: ['a'] }),
    doc('18446744073709551615', 'entry', { amount: 2 }, { revision: 1, tags: ['b'] }),
    doc('9', 'entry', { amount: 3 }, { revision: 2, tags: ['a', 'b'] }),
  ],
  collections: [{ apiId: 'tagged', includeTags: ['a'] }],
};

const blanks = {
  repository: repository('blanks'),
  contentTypes: [
    {
      apiId: 'thing',
      fields: [
        { apiId: 'note', type: 'text' },
        { apiId: 'choices', type: 'select' },
        { apiId: 'data', type: 'json' },
        { apiId: 'body', type: 'richtext' },
      ],
    },
  ],
  documents: [
    doc('1', 'thing', { note: null, choices: [], data: {}, body: { html: '', plain: '' } }),
    doc('2', 'thing', { note: '', choices: ['a'], data: null, body: { html: '<p>x</p>', plain: 'x' } }),
    doc('3', 'thing', { note: 'n', data: { k: 1 } }),
  ],
};

/** Twelve documents updated a day apart in March (two on the 6th), created a day apart in February in the other order. */
const clock = {
  repository: repository('clock'),
  contentTypes: [{ apiId: 'tick', fields: [{ apiId: 'n', type: 'number' }] }],
  documents: Array.from({ length: 12 }, (_, i) => {
    const day = (month: number, n: number) => `2024-0${month}-${String(n).padStart(2, '0')}T00:00:00.000Z`;
    return doc(String(i + 1), 'tick', { n: i + 1 }, { updatedAt: day(3, i === 6 ? 6 : i + 1), createdAt: day(2, 12 - i) });
  }),
};

let server: ReadApiServer;
beforeAll(async () => {
  server = await startServer({ paths: [fixture('tiny.json')], snapshots: [ledger, blanks, nordic, clock], watch: false });
});
afterAll(() => server.close());

/** Asks a list route three ways; all must answer the same 200. */
async function list(path: string, options: Options): Promise<any> {
  const [brackets, query, post] = await everyWay(server, path, options);
  expect(brackets.status, JSON.stringify(brackets.body)).toBe(200);
  expect(query.body, 'query= JSON').toEqual(brackets.body);
  expect(post, 'a list route takes a POST body').toBeDefined();
  expect(post!.body, 'POST body').toEqual(brackets.body);
  return brackets.body;
}

const byId = (a: string, b: string) => (BigInt(a) < BigInt(b) ? -1 : 1);

/** The ids of the documents that match, in numeric order. */
async function matching(options: Options, path = '/tiny/documents'): Promise<string[]> {
  const body = await list(path, options);
  expect(body.meta.total).toBe(body.data.length);
  return body.data.map((d: any) => d.meta.id).sort(byId);
}

const where = (...filters: object[]) => ({ filters });

/** Asks three ways; all must be refused with a 400. Returns the first message. */
function refused(options: Options, path = '/tiny/documents'): Promise<string> {
  return refusedEveryWay(server, path, options);
}

/** A bracketed query string as written, sent as it is. */
async function raw(path: string, query: string): Promise<string[]> {
  const { status, body } = await getJson(server, `${path}?${query}`);
  expect(status, JSON.stringify(body)).toBe(200);
  return body.data.map((d: any) => d.meta.id).sort(byId);
}

describe('a filter path is <contentType|*>.<fields|meta>.<name>', () => {
  it('tests a field of any content type with *', async () => {
    expect(await matching(where({ '*.fields.title': { equal: 'Apple harvest' } }))).toEqual(['100']);
    expect(await matching(where({ '*.fields.title': { equal: 'Editor' } }))).toEqual(['200']);
  });

  it('tests a meta name under meta', async () => {
    expect(await matching(where({ '*.meta.contentType': { equal: 'author' } }))).toEqual(['200', '201']);
  });

  it('reads the bracket form filters[<i>][<path>][<operator>]=<value> as written', async () => {
    expect(await raw('/tiny/documents', 'filters[0][*.fields.title][equal]=Apple%20harvest')).toEqual(['100']);
  });
});

describe('with a content type instead of *, the condition also requires the document to be of that type', () => {
  it('matches only documents of that type', async () => {
    expect(await matching(where({ 'author.fields.title': { equal: 'Editor' } }))).toEqual(['200']);
    expect(await matching(where({ 'news.fields.title': { equal: 'Editor' } }))).toEqual([]);
  });

  it('makes a negative operator false for documents of other types', async () => {
    expect(await matching(where({ 'news.fields.title': { notEqual: 'Apple harvest' } }))).toEqual(['101', '102', '103']);
    expect(await matching(where({ 'news.meta.contentType': { equal: 'author' } }))).toEqual([]);
  });
});

describe('equal and notEqual compare the value; on an array value they mean contains and does not contain', () => {
  it('compares text, numbers and booleans', async () => {
    expect(await matching(where({ '*.fields.category': { equal: 'travel' } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.rating': { equal: 4.5 } }))).toEqual(['102']);
    expect(await matching(where({ '*.fields.published': { equal: false } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.rating': { notEqual: 5 } }))).toEqual(['101', '102', '103', '200', '201']);
  });

  it('tests whether a multiple select contains the value', async () => {
    expect(await matching(where({ '*.fields.labels': { equal: 'fruit' } }))).toEqual(['100']);
    expect(await matching(where({ '*.fields.labels': { notEqual: 'fruit' } }))).toEqual(['101', '102', '103', '200', '201']);
  });

  it('tests whether meta.tags contains the value', async () => {
    expect(await matching(where({ '*.meta.tags': { equal: 'featured' } }))).toEqual(['100']);
    expect(await matching(where({ '*.meta.tags': { notEqual: 'exclude' } }))).toEqual(['100', '102', '103', '200', '201']);
  });
});

describe('ordered comparisons read the given value as the field type', () => {
  it('compares numbers numerically', async () => {
    expect(await matching(where({ '*.fields.rating': { greaterThan: 4 } }))).toEqual(['100', '102']);
    expect(await matching(where({ '*.fields.rating': { greaterThanEqual: 4.5 } }))).toEqual(['100', '102']);
    expect(await matching(where({ '*.fields.rating': { lessThan: 4.5 } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.rating': { lessThanEqual: 4.5 } }))).toEqual(['101', '102']);
    // As text, "10" would sort before "3".
    expect(await matching(where({ '*.fields.rating': { lessThan: 10 } }))).toEqual(['100', '101', '102']);
  });

  it('compares dates as instants, a date-only value meaning midnight UTC', async () => {
    // 100 is dated 2024-03-01T10:00Z; 101 is stored date-only as 2024-02-01.
    expect(await matching(where({ '*.fields.date': { greaterThan: '2024-03-01' } }))).toEqual(['100']);
    expect(await matching(where({ '*.fields.date': { lessThan: '2024-03-01' } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.date': { equal: '2024-02-01T00:00:00.000Z' } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.date': { greaterThanEqual: '2024-02-01' } }))).toEqual(['100', '101']);
    expect(await matching(where({ '*.fields.date': { equal: '2024-03-01T11:00:00+01:00' } }))).toEqual(['100']);
    expect(await matching(where({ '*.meta.createdAt': { lessThanEqual: '2023-12-01T00:00:00.000Z' } }))).toEqual(['200']);
  });

  it('compares booleans with false before true', async () => {
    expect(await matching(where({ '*.fields.published': { greaterThan: false } }))).toEqual(['100', '102']);
    expect(await matching(where({ '*.fields.published': { lessThanEqual: '0' } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.published': { equal: 1 } }))).toEqual(['100', '102']);
  });

  it('compares meta.id as big integers, up to a 30-digit value', async () => {
    // As text, "99" would be greater than "100".
    expect(await matching(where({ '*.meta.id': { greaterThan: 99 } }))).toEqual(['100', '101', '102', '103', '200', '201']);
    const thirtyDigits = '999999999999999999999999999999';
    expect(await matching(where({ '*.meta.id': { lessThan: thirtyDigits } }))).toHaveLength(6);
    expect(await matching(where({ '*.meta.id': { greaterThanEqual: thirtyDigits } }))).toEqual([]);
  });

  it('tells apart 20-digit ids that a double would round to the same number', async () => {
    expect(await matching(where({ '*.meta.id': { equal: '18446744073709551615' } }), '/ledger/documents')).toEqual(['18446744073709551615']);
    expect(await matching(where({ '*.meta.id': { greaterThan: '18446744073709551614' } }), '/ledger/documents')).toEqual([
      '18446744073709551615',
    ]);
  });

  it('compares meta.revision as an integer', async () => {
    expect(await matching(where({ '*.meta.revision': { greaterThan: 1 } }), '/ledger/documents')).toEqual(['9', '18446744073709551614']);
    expect(await matching(where({ '*.meta.revision': { lessThanEqual: '2' } }), '/ledger/documents')).toEqual(['9', '18446744073709551615']);
  });

  it('compares text by collation, not by code point', async () => {
    // By code point, "cherry" and "Éclairs" would both come after "F".
    expect(await matching(where({ '*.fields.title': { lessThan: 'D' } }))).toEqual(['100', '101', '102']);
    expect(await matching(where({ '*.fields.title': { lessThan: 'F' } }))).toEqual(['100', '101', '102', '103', '200']);
  });

  it('compares text with the collation of the request locale', async () => {
    // Swedish puts Ä after Z; English puts it beside A.
    expect(await matching({ ...where({ '*.fields.w': { lessThan: 'Z' } }) }, '/nordic/documents')).toEqual(['2', '3']);
    expect(await matching({ locale: 'sv_SE', ...where({ '*.fields.w': { lessThan: 'Z' } }) }, '/nordic/documents')).toEqual(['3']);
  });
});

describe('like and notLike match a whole value case-insensitively, % standing for any run of characters', () => {
  it('matches a start, an end, a part and a whole value', async () => {
    expect(await matching(where({ '*.fields.title': { like: 'apple%' } }))).toEqual(['100']);
    expect(await matching(where({ '*.fields.title': { like: '%BOATS' } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.title': { like: '%an%' } }))).toEqual(['101', '103']);
    expect(await matching(where({ '*.fields.title': { like: 'Cherry Season' } }))).toEqual(['102']);
  });

  it('needs the whole value to match', async () => {
    expect(await matching(where({ '*.fields.title': { like: 'cherry' } }))).toEqual([]);
  });

  it('takes every character but % literally', async () => {
    expect(await matching(where({ '*.fields.title': { like: 'Apple_harvest' } }))).toEqual([]);
    expect(await matching(where({ '*.fields.title': { like: 'Apple.harvest' } }))).toEqual([]);
    expect(await matching(where({ '*.fields.title': { like: 'Apple harves.' } }))).toEqual([]);
  });

  it('matches any element of an array value', async () => {
    expect(await matching(where({ '*.fields.labels': { like: 'fru%' } }))).toEqual(['100']);
    expect(await matching(where({ '*.meta.tags': { like: '%CLU%' } }))).toEqual(['100', '101']);
  });

  it('negates with notLike', async () => {
    // "Editor" has no "a"; author 201 has no title at all.
    expect(await matching(where({ '*.fields.title': { notLike: '%a%' } }))).toEqual(['200', '201']);
  });

  it('takes any number of %, side by side or apart, and answers at once', async () => {
    expect(await matching(where({ '*.fields.title': { like: '%%%%%%%%%%%%%%x' } }))).toEqual([]);
    expect(await matching(where({ '*.fields.title': { like: '%%%%%%%%%%%%%%s' } }))).toEqual(['101']);
    expect(await matching(where({ '*.fields.title': { like: 'c%h%e%r%r%y%' } }))).toEqual(['102']);
    expect(await matching(where({ '*.fields.title': { like: '%'.repeat(5000) } }))).toEqual(['100', '101', '102', '103', '200']);
    expect(await matching(where({ '*.fields.text': { like: `${'%a'.repeat(2000)}%` } }))).toEqual([]);
  });

  it('folds the case of letters beyond ASCII too', async () => {
    expect(await matching(where({ '*.fields.title': { like: 'éCLAIRS AND MORE' } }))).toEqual(['103']);
    expect(await matching({ locale: 'de_DE', ...where({ '*.fields.title': { like: 'APFELERNTE' } }) })).toEqual(['100']);
    expect(await matching(where({ '*.fields.text': { like: '%CRISP%' } }))).toEqual(['100']);
  });
});

describe('the like matcher agrees with the regular expression it replaces (seeded)', () => {
  /** The old matcher: backtracking, fine on inputs this small. */
  const reference = (pattern: string) => new RegExp(`^${pattern.split('%').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[\\s\\S]*')}$`, 'iu');
  const alphabet = ['a', 'b', 'A', 'B', '%', '.', '*', '\n', 'ä', 'Ä', 'σ', 'Σ', 'ς', 'ß', '€', '😀'];

  it('on 20,000 random patterns and values', () => {
    const random = mulberry32(7);
    const word = (length: number, pool: string[]) => Array.from({ length }, () => pool[Math.floor(random() * pool.length)]).join('');
    const disagreements: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const pattern = word(Math.floor(random() * 7), alphabet);
      const value = word(Math.floor(random() * 9), alphabet.filter((c) => c !== '%'));
      const expected = reference(pattern).test(value);
      if (compileLike(pattern)(foldCase(value)) !== expected) disagreements.push(`${JSON.stringify(pattern)} on ${JSON.stringify(value)}: expected ${expected}`);
    }
    expect(disagreements.slice(0, 10)).toEqual([]);
  });
});

describe('empty and notEmpty test for a missing value, null, "", [], {} or richtext with empty plain text', () => {
  const blank = (name: string, operator = 'empty') => matching(where({ [`*.fields.${name}`]: { [operator]: true } }), '/blanks/documents');

  it('counts null, "" and a missing value as empty text', async () => {
    expect(await blank('note')).toEqual(['1', '2']);
    expect(await blank('note', 'notEmpty')).toEqual(['3']);
  });

  it('counts [] and a missing value as an empty select', async () => {
    expect(await blank('choices')).toEqual(['1', '3']);
    expect(await blank('choices', 'notEmpty')).toEqual(['2']);
  });

  it('counts {} and null as empty JSON', async () => {
    expect(await blank('data')).toEqual(['1', '2']);
    expect(await blank('data', 'notEmpty')).toEqual(['3']);
  });

  it('counts richtext with empty plain text as empty', async () => {
    expect(await blank('body')).toEqual(['1', '3']);
    expect(await matching(where({ '*.fields.text': { notEmpty: 1 } }))).toEqual(['100']);
  });

  it('ignores the given value', async () => {
    expect(await matching(where({ '*.fields.note': { empty: false } }), '/blanks/documents')).toEqual(['1', '2']);
    expect(await matching(where({ '*.fields.note': { notEmpty: 'whatever' } }), '/blanks/documents')).toEqual(['3']);
  });
});

describe('in and notIn test the value, or any element of an array value, against a list', () => {
  it('takes a JSON array, or a comma-separated string in the bracket form', async () => {
    expect(await matching(where({ '*.fields.category': { in: ['food', 'travel'] } }))).toEqual(['100', '101']);
    expect(await raw('/tiny/documents', 'filters[0][*.fields.category][in]=food,travel')).toEqual(['100', '101']);
    expect(await matching(where({ '*.fields.category': { notIn: ['food', 'travel'] } }))).toEqual(['102', '103', '200', '201']);
  });

  it('reads the list as the field type', async () => {
    expect(await matching(where({ '*.fields.rating': { in: [3, 5] } }))).toEqual(['100', '101']);
    expect(await matching(where({ '*.meta.id': { in: ['0100', '201'] } }))).toEqual(['100', '201']);
  });

  it('tests every element of an array value', async () => {
    expect(await matching(where({ '*.fields.labels': { in: ['boats', 'nothing'] } }))).toEqual(['101']);
    expect(await matching(where({ '*.meta.tags': { notIn: ['featured', 'exclude'] } }))).toEqual(['102', '103', '200', '201']);
  });
});

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
    expect(await raw('/tiny/documents', 'filters[10][or][*.fields.name][equal]=Bob&filters[2][*.fields.category][equal]=food')).toEqual(['100', '201']);
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
    const tiny = new PreparedRepository(parseSnapshot(JSON.parse(readFileSync(fixture('tiny.json'), 'utf8')), 'tiny.json'), 'http://localhost');
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
    expect(await ticks(where(updated('greaterThanEqual', 6), { and: updated('lessThanEqual', 6) }))).toEqual(['6', '7']);
    expect(await ticks(where(updated('greaterThan', 5), { and: updated('lessThan', 7) }))).toEqual(['6', '7']);
    expect(await ticks(where(updated('greaterThanEqual', 11), { or: updated('lessThan', 2) }))).toEqual(['1', '11', '12']);
    expect(await ticks(where(updated('greaterThanEqual', 11), { or: { '*.fields.n': { equal: 5 } } }))).toEqual(['5', '11', '12']);
    expect(await ticks(where({ '*.meta.createdAt': { lessThanEqual: '2024-02-02' } }))).toEqual(['11', '12']);
    expect(await ticks(where(updated('greaterThan', 3)))).toHaveLength(9);
    expect(await ticks(where(updated('greaterThan', 12)))).toEqual([]);
  });

  it('ANDs several paths and operators in one condition', async () => {
    const condition = { '*.fields.rating': { greaterThanEqual: 3, lessThan: 5 }, '*.fields.published': { equal: true } };
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
    expect(await matching({ locale: 'de_DE', ...where({ '*.fields.title': { equal: 'Apfelernte' } }) })).toEqual(['100']);
    expect(await matching({ locale: 'de_CH', ...where({ '*.fields.title': { equal: 'Bananenschiffe' } }) })).toEqual(['101']);
    expect(await matching({ locale: 'de_CH', ...where({ '*.fields.title': { equal: 'Bananenboote' } }) })).toEqual([]);
  });

  it('follows the fallback chain', async () => {
    expect(await matching({ locale: 'de_CH', ...where({ '*.fields.title': { equal: 'Apfelernte' } }) })).toEqual(['100']);
    expect(await matching({ locale: 'de_DE', ...where({ '*.fields.title': { like: 'cherry%' } }) })).toEqual(['102']);
  });

  it('tests the default locale for locale=all', async () => {
    expect(await matching({ locale: 'all', ...where({ '*.fields.title': { equal: 'Apple harvest' } }) })).toEqual(['100']);
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

  it.each(['title', 'fields.title', '*.title.x', '*.fields.', '*.fields.title.en_US', '..'])('refuses the path %j', async (path) => {
    expect(await refused(where({ [path]: { equal: 'x' } }))).toMatch(/path/i);
  });
});

describe('a field name that no content type has matches nothing', () => {
  it.each(['equal', 'notEqual', 'empty'])('with %s', async (operator) => {
    expect(await matching(where({ '*.fields.nothing': { [operator]: 'x' } }))).toEqual([]);
  });
});

describe("a collection's own filters and tags are ANDed with the request's", () => {
  // goodNews: news with rating ≥ 4, without the tag "exclude": 100 and 102.
  it('narrows the collection with the request filters', async () => {
    expect(await matching({}, '/tiny/collections/goodNews')).toEqual(['100', '102']);
    expect(await matching(where({ '*.fields.category': { equal: 'food' } }), '/tiny/collections/goodNews')).toEqual(['100']);
    expect(await matching(where({ '*.fields.rating': { lessThan: 4 } }), '/tiny/collections/goodNews')).toEqual([]);
  });

  it('keeps the collection filters around a request OR', async () => {
    const filters = where({ '*.fields.category': { equal: 'travel' } }, { or: { '*.fields.title': { like: 'cherry%' } } });
    expect(await matching(filters)).toEqual(['101', '102']);
    expect(await matching(filters, '/tiny/collections/goodNews')).toEqual(['102']);
  });

  it('applies the request tags inside the collection tags', async () => {
    expect(await matching({ includeTags: ['exclude'] }, '/tiny/collections/goodNews')).toEqual([]);
    expect(await matching({ includeTags: ['include'] }, '/tiny/collections/goodNews')).toEqual(['100']);
    // ledger's collection "tagged" holds the documents tagged "a".
    expect(await matching({}, '/ledger/collections/tagged')).toEqual(['9', '18446744073709551614']);
    expect(await matching({ excludeTags: ['b'] }, '/ledger/collections/tagged')).toEqual(['18446744073709551614']);
  });
});

describe('includeTags and excludeTags take a comma-separated string, repeated name[]= or a JSON array', () => {
  it('keeps documents with any of the included tags', async () => {
    expect(await matching({ includeTags: ['featured', 'exclude'] })).toEqual(['100', '101']);
    expect(await raw('/tiny/documents', 'includeTags=featured,exclude')).toEqual(['100', '101']);
    expect(await raw('/tiny/documents', 'includeTags[]=featured&includeTags[]=exclude')).toEqual(['100', '101']);
  });

  it('drops documents with any of the excluded tags', async () => {
    expect(await matching({ excludeTags: ['featured', 'exclude'] })).toEqual(['102', '103', '200', '201']);
    expect(await raw('/tiny/documents', 'excludeTags[]=featured&excludeTags[]=exclude')).toEqual(['102', '103', '200', '201']);
  });

  it('applies both together', async () => {
    expect(await matching({ includeTags: ['featured', 'exclude'], excludeTags: ['exclude'] })).toEqual(['100']);
  });
});

describe('search needs every whitespace-separated term in a text, richtext or select value of the request locale', () => {
  const found = (search: string, locale?: string) => matching({ search, ...(locale ? { locale } : {}) });

  it('finds a term case-insensitively, as part of a word', async () => {
    expect(await found('apple')).toEqual(['100']);
    expect(await found('APPLE')).toEqual(['100']);
    expect(await found('ppl')).toEqual(['100']);
  });

  it('looks in text, richtext plain text and select values', async () => {
    expect(await found('crisp')).toEqual(['100']);
    expect(await found('travel')).toEqual(['101']);
    expect(await found('autumn')).toEqual(['100']);
    expect(await found('ada')).toEqual(['200']);
  });

  it('does not look in tags, colours, numbers or html', async () => {
    expect(await found('featured')).toEqual([]);
    expect(await found('aa0000')).toEqual([]);
    expect(await found('4.5')).toEqual([]);
    expect(await found('<p>')).toEqual([]);
  });

  it('needs every term, each anywhere in the document', async () => {
    expect(await found('apple food')).toEqual(['100']);
    expect(await found('  apple   harvest ')).toEqual(['100']);
    expect(await found('apple boats')).toEqual([]);
  });

  it('looks in the request locale, after fallback', async () => {
    expect(await found('apfelernte')).toEqual([]);
    expect(await found('apfelernte', 'de_DE')).toEqual(['100']);
    expect(await found('redakteurin', 'de_DE')).toEqual(['200']);
    expect(await found('bananenschiffe', 'de_CH')).toEqual(['101']);
    expect(await found('bananenboote', 'de_CH')).toEqual([]);
    expect(await found('cherry', 'de_DE')).toEqual(['102']);
  });

  it('looks in every locale for locale=all', async () => {
    expect(await found('apfelernte', 'all')).toEqual(['100']);
    expect(await found('bananenschiffe', 'all')).toEqual(['101']);
    expect(await found('apfelernte harvest', 'all')).toEqual(['100']);
  });
});
