import { describe, expect, it } from 'vitest';
import { Filter, Includes, type ListOptions, Sorting } from '../src/api/query.ts';
import type { ResponseEvent } from '../src/api/transport.ts';
import { byId, ids, includedIds, serveClients } from './helpers/client.ts';
import { tinyKey } from './helpers/server.ts';

/**
 * The client's wire forms against the local server (helpers/client.ts): every option at once
 * in brackets, `query=` JSON and a POST body, and how a list request chooses its form.
 */

const { server, clientOf, inEveryForm } = serveClients();

describe('every option at once', () => {
  it('gets the same answer in brackets, query= JSON and a POST body', async () => {
    const options: ListOptions = {
      locale: 'de_DE',
      includes: new Includes().add('author'),
      embedAssets: true,
      fields: 'fields(title,images,author),meta(id,tags),includes',
      filters: new Filter().where('news.fields.rating', 'greaterThan', 1).or('news.meta.tags', 'equal', 'featured'),
      excludeTags: ['nothing'],
      sorting: new Sorting().asc('title'),
      search: 'a',
      limit: 2,
      offset: 1,
    };
    const answer = await inEveryForm((client) => client.documents(options));
    // Rated news or featured news: 100, 101, 102, all with an "a"; sorted by German title, the second and third.
    expect(answer.meta).toEqual({ count: 2, limit: 2, offset: 1, total: 3 });
    expect(answer.data.map((d) => [d.meta!.id, d.fields!.title])).toEqual([
      ['101', 'Bananenboote'],
      ['102', 'cherry season'],
    ]);
    expect(answer.data[0]!.meta).toEqual({ id: '101', tags: ['exclude'] });
    expect(includedIds(answer.includes)).toEqual({ author: ['201', '200'] });
  });
});

describe('the wire form of list requests', () => {
  it('sends a filter list too long for a URL as a POST body with the default maxUrlLength', async () => {
    const events: ResponseEvent[] = [];
    let filters = new Filter().where('meta.id', 'equal', 100);
    for (let id = 1000; id < 1400; id++) filters = filters.or('meta.id', 'equal', id);
    filters.or('meta.id', 'equal', 201);
    const answer = await clientOf('tiny', {}, events).documents({ filters, ...byId });
    expect(ids(answer)).toEqual(['100', '201']);
    expect(events.map((e) => e.method)).toEqual(['POST']);
    expect(events[0]!.url).toBe(`${server().url}/tiny/documents`);
  });

  it('keeps a URL within maxUrlLength a GET', async () => {
    const events: ResponseEvent[] = [];
    await clientOf('tiny', {}, events).documents({ filters: new Filter().where('meta.id', 'equal', 100) });
    expect(events.map((e) => e.method)).toEqual(['GET']);
  });

  it('with keyInUrl, sends the key as ?key= on GET and in the header on POST, showing it in neither event', async () => {
    const events: ResponseEvent[] = [];
    const inUrl = clientOf('tiny', { keyInUrl: true }, events);
    expect((await inUrl.repository()).meta.apiId).toBe('tiny');
    const post = clientOf('tiny', { keyInUrl: true, maxUrlLength: 1 }, events);
    expect(ids(await post.documents({ ...byId, limit: 1 }))).toEqual(['100']);
    expect(events.map((e) => [e.method, e.status])).toEqual([
      ['GET', 200],
      ['POST', 200],
    ]);
    for (const event of events) expect(event.url).not.toContain(tinyKey);
  });
});
