import { describe, expect, it } from 'vitest';
import { filterAsks, startFiltersServer, where } from './helpers/server-filters.ts';
import { servedForFile } from './helpers/server.ts';

/**
 * A collection's own filters and tags (spec §4), the tag options of §3 and `search` of §8, over
 * HTTP against the real server. Every case is sent three ways (bracketed parameters, `query=`
 * JSON, a POST body) and must get the same answer. Besides the shared `tiny` fixture, the server
 * holds the small repositories of test/helpers/server-filters.ts (`ledger`: a tagged collection).
 */

const server = servedForFile(startFiltersServer);
const { matching, raw } = filterAsks(server);

describe("a collection's own filters and tags are ANDed with the request's", () => {
  // goodNews: news with rating ≥ 4, without the tag "exclude": 100 and 102.
  it('narrows the collection with the request filters', async () => {
    expect(await matching({}, '/tiny/collections/goodNews')).toEqual(['100', '102']);
    expect(await matching(where({ '*.fields.category': { equal: 'food' } }), '/tiny/collections/goodNews')).toEqual([
      '100',
    ]);
    expect(await matching(where({ '*.fields.rating': { lessThan: 4 } }), '/tiny/collections/goodNews')).toEqual([]);
  });

  it('keeps the collection filters around a request OR', async () => {
    const filters = where(
      { '*.fields.category': { equal: 'travel' } },
      { or: { '*.fields.title': { like: 'cherry%' } } },
    );
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
    expect(await raw('/tiny/documents', 'excludeTags[]=featured&excludeTags[]=exclude')).toEqual([
      '102',
      '103',
      '200',
      '201',
    ]);
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
