import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  type Answer,
  bookCount,
  callsTo,
  ids,
  query,
  shelfKey,
  startRoutesServer,
  tinyOrder,
} from './helpers/routes.ts';
import { servedForFile, tinyKey } from './helpers/server.ts';

/**
 * Spec §3 (options), §7 (locales) and §9 (errors), over HTTP against the real server, with the
 * `tiny` and `shelf` repositories of helpers/routes.ts (§2: server-routes.test.ts).
 */

const server = servedForFile(startRoutesServer);
const { call, post } = callsTo(server);

describe('§3 limit defaults to 25 and is clamped to 1000', () => {
  it('answers 25 documents when no limit is given', async () => {
    const answer = await call('/shelf/documents', { authorization: shelfKey });
    expect(answer.body.meta).toEqual({ count: 25, limit: 25, offset: 0, total: bookCount });
  });

  it('clamps a limit above 1000 to 1000, and meta.limit says so', async () => {
    const expected = { count: 1000, limit: 1000, offset: 0, total: bookCount };
    expect((await call('/shelf/documents?limit=5000', { authorization: shelfKey })).body.meta).toEqual(expected);
    expect((await call(`/shelf/documents?${query({ limit: 1001 })}`, { authorization: shelfKey })).body.meta).toEqual(
      expected,
    );
    expect((await post('/shelf/documents', { limit: 99999 }, { authorization: shelfKey })).body.meta).toEqual(expected);
  });

  it('answers no documents for limit 0, and still counts the total', async () => {
    const answer = await call('/tiny/documents?limit=0');
    expect(answer.body.meta).toEqual({ count: 0, limit: 0, offset: 0, total: 6 });
    expect(answer.body.data).toEqual([]);
  });

  it('reads limit in each notation', async () => {
    expect(ids(await call('/tiny/documents?limit=2'))).toEqual(tinyOrder.slice(0, 2));
    expect(ids(await call(`/tiny/documents?${query({ limit: 2 })}`))).toEqual(tinyOrder.slice(0, 2));
    expect(ids(await post('/tiny/documents', { limit: 2 }))).toEqual(tinyOrder.slice(0, 2));
    expect(ids(await post('/tiny/collections/news', { limit: 1 }))).toHaveLength(1);
  });
});

describe('§3 offset skips documents of the ordered list', () => {
  it('reads offset in each notation', async () => {
    expect(ids(await call('/tiny/documents?offset=4'))).toEqual(tinyOrder.slice(4));
    expect(ids(await call(`/tiny/documents?${query({ offset: 4 })}`))).toEqual(tinyOrder.slice(4));
    expect(ids(await post('/tiny/documents', { offset: 4 }))).toEqual(tinyOrder.slice(4));
  });

  it('pages with offset and limit together', async () => {
    const answer = await call('/tiny/documents?offset=1&limit=2');
    expect(answer.body.meta).toEqual({ count: 2, limit: 2, offset: 1, total: 6 });
    expect(ids(answer)).toEqual(tinyOrder.slice(1, 3));
  });

  it('answers an empty page past the end', async () => {
    const answer = await call('/tiny/documents?offset=10');
    expect(answer.body.meta).toEqual({ count: 0, limit: 25, offset: 10, total: 6 });
  });

  it('pages a collection in its own order', async () => {
    const whole = ids(await call('/tiny/collections/news'));
    expect(ids(await call('/tiny/collections/news?offset=1&limit=2'))).toEqual(whole.slice(1, 3));
  });
});

describe('§3 on conflict the JSON body wins over query=, and query= over brackets', () => {
  it('query= wins over a bracketed parameter', async () => {
    expect(ids(await call(`/tiny/documents?limit=1&${query({ limit: 3 })}`))).toHaveLength(3);
  });

  it('the POST body wins over query= and brackets', async () => {
    expect(ids(await post(`/tiny/documents?limit=1&${query({ limit: 2 })}`, { limit: 3 }))).toHaveLength(3);
  });

  it('merges option by option: each form may bring its own options', async () => {
    const answer = await post(`/tiny/documents?offset=1&${query({ limit: 2 })}`, { locale: 'de_DE' });
    expect(answer.body.meta).toEqual({ count: 2, limit: 2, offset: 1, total: 6 });
    const deutsch = await post(`/tiny/documents?offset=3&${query({ limit: 1 })}`, { locale: 'de_DE' });
    expect(deutsch.body.data[0].fields.title).toBe('Apfelernte');
  });

  it('a bracketed option not named in the body still applies', async () => {
    expect(ids(await post('/tiny/documents?limit=1', {}))).toHaveLength(1);
  });
});

describe('§3 unknown option names are ignored', () => {
  it('in each notation', async () => {
    expect((await call('/tiny/documents?colour=blue&page[size]=3')).body.meta.total).toBe(6);
    expect((await call(`/tiny/documents?${query({ colour: 'blue', limit: 2 })}`)).body.meta.limit).toBe(2);
    expect((await post('/tiny/documents', { colour: 'blue', limit: 2 })).body.meta.limit).toBe(2);
    expect((await call('/tiny/documents/100?colour=blue')).status).toBe(200);
  });

  it('list options on a single document are not read', async () => {
    expect((await call('/tiny/documents/100?limit=x&sorting=bad')).status).toBe(200);
  });
});

describe('§3 a known option with a malformed value is a 400 that names the option', () => {
  const cases: [string, string][] = [
    ['limit=x', 'limit'],
    ['limit=-1', 'limit'],
    ['limit=1.5', 'limit'],
    ['offset=x', 'offset'],
    ['offset=-2', 'offset'],
    ['embedAssets=maybe', 'embedAssets'],
    ['locale=xx_XX', 'locale'],
    ['includes=9', 'includes'],
    ['fields=fields(', 'fields'],
    [query({ limit: 'ten' }), 'limit'],
    [query({ offset: -1 }), 'offset'],
    [query({ embedAssets: 'maybe' }), 'embedAssets'],
    [query({ includeTags: 5 }), 'includeTags'],
    ['query=%7Bnot+json', 'query'],
    [query([1, 2]), 'query'],
  ];
  for (const [parameters, option] of cases) {
    it(`?${decodeURIComponent(parameters)} names ${option}`, async () => {
      const answer = await call(`/tiny/documents?${parameters}`);
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe('bad_request');
      expect(answer.body.message).toContain(option);
    });
  }

  for (const [body, option] of [
    [{ limit: 'ten' }, 'limit'],
    [{ offset: -1 }, 'offset'],
    [{ locale: 'fr' }, 'locale'],
    [{ excludeTags: 5 }, 'excludeTags'],
  ] as const) {
    it(`a POST body ${JSON.stringify(body)} names ${option}`, async () => {
      const answer = await post('/tiny/documents', body);
      expect(answer.status).toBe(400);
      expect(answer.body.message).toContain(option);
    });
  }

  it('a POST body that is not JSON, or not an object, is a 400', async () => {
    const broken = await post('/tiny/documents', '{"limit":');
    expect(broken.status).toBe(400);
    expect(broken.body.message).toMatch(/JSON/);
    const list = await post('/tiny/documents', [1]);
    expect(list.status).toBe(400);
    expect(list.body.message).toMatch(/object/);
  });

  it('names the malformed value too', async () => {
    expect((await call('/tiny/documents?limit=lots')).body.message).toContain('lots');
  });
});

describe('§7 without locale, localized fields hold the default locale value', () => {
  it('on a document, a list, an asset and a collection', async () => {
    expect((await call('/tiny/documents/100')).body.fields.title).toBe('Apple harvest');
    const list = await call('/tiny/documents?offset=3&limit=1');
    expect(list.body.data[0].fields.title).toBe('Apple harvest');
    expect((await call('/tiny/assets/300')).body.fields.title).toBe('Apples');
    const collection = await call('/tiny/collections/news');
    expect(collection.body.data.find((d: any) => d.meta.id === '101').fields.title).toBe('Banana boats');
  });

  it('a field with no default-locale value is null', async () => {
    const answer = await call('/shelf/documents/1000', { authorization: shelfKey });
    expect(answer.body.fields.motto).toBeNull();
  });
});

describe('§7 locale=<key> answers that locale, else along the fallback chain, else null', () => {
  const title = async (id: string, locale: string) =>
    (await call(`/tiny/documents/${id}?locale=${locale}`)).body.fields.title;

  it('answers the locale own value', async () => {
    expect(await title('100', 'de_DE')).toBe('Apfelernte');
    expect(await title('101', 'de_CH')).toBe('Bananenschiffe');
  });

  it('falls back de_CH → de_DE → en_US', async () => {
    expect(await title('100', 'de_CH')).toBe('Apfelernte');
    expect(await title('102', 'de_CH')).toBe('cherry season');
    expect(await title('102', 'de_DE')).toBe('cherry season');
  });

  it('answers null when no locale of the chain has a value', async () => {
    const motto = async (locale: string) =>
      (await call(`/shelf/documents/1000?locale=${locale}`, { authorization: shelfKey })).body.fields.motto;
    expect(await motto('de_CH')).toBe('Grüezi');
    expect(await motto('de_DE')).toBeNull();
    expect(await motto('en_US')).toBeNull();
  });

  it('reads locale in each notation, on every route', async () => {
    expect((await call(`/tiny/documents/100?${query({ locale: 'de_DE' })}`)).body.fields.title).toBe('Apfelernte');
    expect((await call('/tiny/alias/home?locale=de_DE')).body.fields.title).toBe('Apfelernte');
    expect((await call('/tiny/assets/300?locale=de_CH')).body.fields.title).toBe('Äpfel');
    const first = (answer: Answer) => answer.body.data.find((d: any) => d.meta.id === '100').fields.title;
    expect(first(await call('/tiny/documents?locale=de_DE'))).toBe('Apfelernte');
    expect(first(await call(`/tiny/documents?${query({ locale: 'de_DE' })}`))).toBe('Apfelernte');
    expect(first(await post('/tiny/documents', { locale: 'de_DE' }))).toBe('Apfelernte');
    expect(first(await post('/tiny/collections/news', { locale: 'de_CH' }))).toBe('Apfelernte');
  });

  it('leaves fields that are not localized as they are', async () => {
    const answer = await call('/tiny/documents/100?locale=de_DE');
    expect(answer.body.fields.rating).toBe(5);
    expect(answer.body.fields.labels).toEqual(['fruit', 'autumn']);
  });
});

describe('§7 locale=all answers every locale own value, without fallback', () => {
  it('gives a localized field as an object of the locales that have a value', async () => {
    const answer = await call('/tiny/documents/100?locale=all');
    expect(answer.body.fields.title).toEqual({ en_US: 'Apple harvest', de_DE: 'Apfelernte' });
    expect(answer.body.fields.text).toEqual({ en_US: { html: '<p>Crisp apples</p>', plain: 'Crisp apples' } });
    expect((await call('/tiny/documents/101?locale=all')).body.fields.title).toEqual({
      en_US: 'Banana boats',
      de_DE: 'Bananenboote',
      de_CH: 'Bananenschiffe',
    });
  });

  it('keeps fields that are not localized plain', async () => {
    const fields = (await call('/tiny/documents/100?locale=all')).body.fields;
    expect(fields.rating).toBe(5);
    expect(fields.published).toBe(true);
    expect(fields.author).toEqual({ meta: { id: '200', contentType: 'author' } });
    expect(fields.extra).toEqual({ a: 1 });
  });

  it('in each notation', async () => {
    const shelf = { authorization: shelfKey };
    const motto = (answer: Answer) => answer.body.data.find((d: any) => d.meta.id === '1000').fields.motto;
    expect(motto(await call('/shelf/documents?locale=all&offset=1000', shelf))).toEqual({ de_CH: 'Grüezi' });
    expect(motto(await call(`/shelf/documents?${query({ locale: 'all', offset: 1000 })}`, shelf))).toEqual({
      de_CH: 'Grüezi',
    });
    expect(motto(await post('/shelf/documents', { locale: 'all', offset: 1000 }, shelf))).toEqual({ de_CH: 'Grüezi' });
  });
});

describe('§7 an unknown locale is a 400 that lists the repository locales', () => {
  for (const [how, send] of [
    ['brackets', () => call('/tiny/documents?locale=fr_FR')],
    ['query=', () => call(`/tiny/documents/100?${query({ locale: 'fr_FR' })}`)],
    ['a POST body', () => post('/tiny/collections/news', { locale: 'fr_FR' })],
  ] as const) {
    it(`in ${how}`, async () => {
      const answer = await send();
      expect(answer.status).toBe(400);
      expect(answer.body.message).toContain('fr_FR');
      for (const key of ['en_US', 'de_DE', 'de_CH']) expect(answer.body.message).toContain(key);
    });
  }
});

describe('§9 every error answers { status, message, error: { code, message } }', () => {
  const cases: [number, string, () => Promise<Answer>][] = [
    [400, 'bad_request', () => call('/tiny/documents?limit=x')],
    [401, 'unauthorized', () => call('/tiny/documents', { authorization: null })],
    [404, 'not_found', () => call('/tiny/documents/12345')],
    [405, 'method_not_allowed', () => call('/tiny/documents', { method: 'PUT', body: {} })],
    [413, 'payload_too_large', () => post('/tiny/documents', { search: 'x'.repeat(1024 * 1024) })],
  ];
  for (const [status, code, send] of cases) {
    it(`${status} ${code}`, async () => {
      const answer = await send();
      expect(answer.status).toBe(status);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(Object.keys(answer.body).sort()).toEqual(['error', 'message', 'status']);
      expect(answer.body.status).toBe(status);
      expect(answer.body.error).toEqual({ code, message: answer.body.message });
      expect(answer.body.message).toMatch(/\w/);
    });
  }
});

describe('§9 a POST body over 1 MiB is a 413', () => {
  it('accepts a body just under the limit', async () => {
    const body = JSON.stringify({ search: '' }).replace('""', `"${' '.repeat(1024 * 1024 - 20)}"`);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(1024 * 1024);
    expect((await post('/tiny/documents', body)).status).toBe(200);
  });

  it('refuses a body sent without Content-Length once it grows past 1 MiB', async () => {
    const answer = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = httpRequest(
        `${server().url}/tiny/documents`,
        { method: 'POST', headers: { authorization: tinyKey, 'content-type': 'application/json' } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
        },
      );
      req.on('error', reject);
      req.write('{"search":"');
      for (let i = 0; i < 20; i++) req.write(' '.repeat(64 * 1024));
      req.end('"}');
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error.code).toBe('payload_too_large');
  });
});

describe('§9 a malformed path or percent-encoding is a 400', () => {
  it('in a path segment', async () => {
    const answer = await call('/tiny/documents/%E0%A4%A');
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('bad_request');
  });

  it('in a query parameter', async () => {
    const answer = await call('/tiny/documents?search=%E0%A4%A');
    expect(answer.status).toBe(400);
    expect(answer.body.message).toContain('search');
  });

  it('in the brackets of a parameter name', async () => {
    expect((await call('/tiny/documents?filters[0][*.fields.title][equal=x')).status).toBe(400);
  });
});

describe('§9 the two 401 messages', () => {
  it('a missing key: "No API key found in request"', async () => {
    const answer = await call('/tiny', { authorization: null });
    expect(answer.body).toEqual({
      status: 401,
      message: 'No API key found in request',
      error: { code: 'unauthorized', message: 'No API key found in request' },
    });
  });

  it('an empty key counts as missing', async () => {
    expect((await call('/tiny?key=', { authorization: null })).body.message).toBe('No API key found in request');
  });

  it('a wrong key: "Invalid authentication credentials"', async () => {
    const answer = await call('/tiny', { authorization: 'Bearer nope' });
    expect(answer.body).toEqual({
      status: 401,
      message: 'Invalid authentication credentials',
      error: { code: 'unauthorized', message: 'Invalid authentication credentials' },
    });
  });
});

describe('§9 the message names what was wrong', () => {
  it('names the missing document, alias, collection and repository', async () => {
    expect((await call('/tiny/documents/12345')).body.message).toContain('12345');
    expect((await call('/tiny/alias/away')).body.message).toContain('away');
    expect((await call('/tiny/collections/none')).body.message).toContain('none');
    expect((await call('/nowhere')).body.message).toContain('nowhere');
  });
});
