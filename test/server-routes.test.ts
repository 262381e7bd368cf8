import { describe, expect, it } from 'vitest';
import { type Answer, callsTo, shelfKey, startRoutesServer, tinyOrder } from './helpers/routes.ts';
import { servedForFile, tinyKey } from './helpers/server.ts';

/**
 * Spec §2 (routes and authentication), over HTTP against the real server, with the `tiny` and
 * `shelf` repositories of helpers/routes.ts (§3, §7 and §9: server-options.test.ts).
 */

const server = servedForFile(startRoutesServer);
const { call, post } = callsTo(server);

describe('§2 every route answers, with or without a trailing slash', () => {
  const routes: [string, (body: any) => void][] = [
    [
      '/tiny',
      (body) =>
        expect(body).toEqual({
          status: 200,
          meta: {
            id: '900000000000000000',
            apiId: 'tiny',
            name: 'Tiny',
            defaultLocale: 'en_US',
            locales: [{ key: 'en_US' }, { key: 'de_DE', fallback: 'en_US' }, { key: 'de_CH', fallback: 'de_DE' }],
          },
        }),
    ],
    ['/tiny/documents', (body) => expect(body.data.map((d: any) => d.meta.id)).toEqual(tinyOrder)],
    [
      '/tiny/documents/100',
      (body) => expect(body.meta).toMatchObject({ id: '100', contentType: 'news', repository: '900000000000000000' }),
    ],
    ['/tiny/alias/home', (body) => expect(body.meta.id).toBe('100')],
    [
      '/tiny/collections/goodNews',
      (body) => expect(body.data.map((d: any) => d.meta.id).sort()).toEqual(['100', '102']),
    ],
    ['/tiny/assets/300', (body) => expect(body.fields.file.fileName).toBe('apples.svg')],
  ];
  for (const [path, check] of routes) {
    it(`GET /v1${path} answers 200`, async () => {
      const answer = await call(path);
      expect(answer.status).toBe(200);
      check(answer.body);
    });
    it(`GET /v1${path}/ answers the same`, async () => {
      const plain = await call(path);
      const slashed = await call(`${path}/`);
      expect(slashed.status).toBe(200);
      expect(slashed.body).toEqual(plain.body);
    });
  }

  it('answers JSON', async () => {
    expect((await call('/tiny/documents')).headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('answers 404 for a path that is no route', async () => {
    for (const path of [
      '/tiny/documents/100/more',
      '/tiny/unknown/1',
      '/tiny/alias',
      '/tiny/collections/',
      '/tiny/assets',
    ]) {
      expect((await call(path)).status, path).toBe(404);
    }
    const outside = await fetch(`${server().origin}/v2/tiny`, { headers: { authorization: tinyKey } });
    expect(outside.status).toBe(404);
  });

  it('answers 404 for an unknown repository, document, alias, collection or asset', async () => {
    for (const path of [
      '/nowhere',
      '/tiny/documents/12345',
      '/tiny/alias/away',
      '/tiny/collections/none',
      '/tiny/assets/12345',
    ]) {
      const answer = await call(path);
      expect(answer.status, path).toBe(404);
      expect(answer.body.error.code).toBe('not_found');
    }
  });

  it('does not answer an asset on the document route, nor a document on the asset route', async () => {
    expect((await call('/tiny/documents/300')).status).toBe(404);
    expect((await call('/tiny/assets/100')).status).toBe(404);
  });
});

describe('§2 a list answers in the envelope, a single document or asset answers bare', () => {
  it('wraps a list in status, meta and data', async () => {
    const answer = await call('/tiny/documents?limit=2');
    expect(Object.keys(answer.body).sort()).toEqual(['data', 'meta', 'status']);
    expect(answer.body.status).toBe(200);
    expect(answer.body.meta).toEqual({ count: 2, limit: 2, offset: 0, total: 6 });
    expect(answer.body.data).toHaveLength(2);
  });

  it('adds includes to the envelope when includes were asked for', async () => {
    const answer = await call('/tiny/collections/news?includes=1');
    expect(Object.keys(answer.body).sort()).toEqual(['data', 'includes', 'meta', 'status']);
  });

  it('answers a document, an alias and an asset as { fields, meta }', async () => {
    for (const path of ['/tiny/documents/100', '/tiny/alias/home', '/tiny/assets/300']) {
      expect(Object.keys((await call(path)).body).sort(), path).toEqual(['fields', 'meta']);
    }
  });

  it('adds includes to a single document when asked for', async () => {
    const answer = await call('/tiny/documents/100?includes=1');
    expect(Object.keys(answer.body).sort()).toEqual(['fields', 'includes', 'meta']);
  });
});

describe('§2 HEAD answers like GET without a body', () => {
  for (const path of [
    '/tiny',
    '/tiny/documents',
    '/tiny/documents/100',
    '/tiny/nowhere/x/y',
    '/tiny/documents/12345',
  ]) {
    it(`HEAD /v1${path} has GET's status, length and ETag`, async () => {
      const get = await fetch(`${server().url}${path}`, { headers: { authorization: tinyKey } });
      const getBody = Buffer.from(await get.arrayBuffer());
      const head = await fetch(`${server().url}${path}`, { method: 'HEAD', headers: { authorization: tinyKey } });
      expect(head.status).toBe(get.status);
      expect(await head.text()).toBe('');
      expect(head.headers.get('content-length')).toBe(String(getBody.length));
      expect(head.headers.get('etag')).toBe(get.headers.get('etag'));
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
    });
  }
});

describe('§2 OPTIONS answers CORS preflight', () => {
  it('allows any origin, the methods and the headers a browser client sends, without a key', async () => {
    const answer = await fetch(`${server().url}/tiny/documents`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://site.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe('*');
    const methods = answer.headers.get('access-control-allow-methods')!.split(/,\s*/);
    expect(methods).toEqual(expect.arrayContaining(['GET', 'HEAD', 'POST', 'OPTIONS']));
    const headers = answer.headers.get('access-control-allow-headers')!.toLowerCase().split(/,\s*/);
    expect(headers).toEqual(expect.arrayContaining(['authorization', 'content-type', 'if-none-match']));
    expect(await answer.text()).toBe('');
  });
});

describe('§2 every answer carries Access-Control-Allow-Origin: *', () => {
  it('on 200, 304, 400, 401, 404, 405 and 413', async () => {
    const ok = await call('/tiny/documents');
    const answers: Answer[] = [
      ok,
      await call('/tiny/documents', { headers: { 'if-none-match': ok.headers.get('etag')! } }),
      await call('/tiny/documents?limit=x'),
      await call('/tiny/documents', { authorization: null }),
      await call('/tiny/documents/12345'),
      await call('/tiny/documents', { method: 'DELETE' }),
      await post('/tiny/documents', { search: 'x'.repeat(1024 * 1024 + 1) }),
    ];
    expect(answers.map((a) => a.status)).toEqual([200, 304, 400, 401, 404, 405, 413]);
    for (const answer of answers)
      expect(answer.headers.get('access-control-allow-origin'), String(answer.status)).toBe('*');
  });
});

describe('§2 other methods answer 405 with Allow', () => {
  for (const method of ['PUT', 'PATCH', 'DELETE']) {
    it(`${method} on a list route is 405, allowing GET, HEAD, POST and OPTIONS`, async () => {
      const answer = await call('/tiny/documents', { method, body: {} });
      expect(answer.status).toBe(405);
      expect(answer.body.error.code).toBe('method_not_allowed');
      expect(answer.headers.get('allow')!.split(/,\s*/).sort()).toEqual(['GET', 'HEAD', 'OPTIONS', 'POST']);
    });
  }

  it('POST is allowed on the two list routes only', async () => {
    expect((await post('/tiny/documents', {})).status).toBe(200);
    expect((await post('/tiny/collections/news', {})).status).toBe(200);
    for (const path of ['/tiny', '/tiny/documents/100', '/tiny/alias/home', '/tiny/assets/300']) {
      const answer = await post(path, {});
      expect(answer.status, path).toBe(405);
      expect(answer.headers.get('allow')!.split(/,\s*/).sort(), path).toEqual(['GET', 'HEAD', 'OPTIONS']);
    }
  });
});

describe('§2 the key travels in Authorization, as Bearer, or as ?key= for GET and HEAD', () => {
  it('accepts the bare key in Authorization', async () => {
    expect((await call('/tiny/documents', { authorization: tinyKey })).status).toBe(200);
  });

  it('accepts Authorization: Bearer <key>', async () => {
    expect((await call('/tiny/documents', { authorization: `Bearer ${tinyKey}` })).status).toBe(200);
    expect((await post('/tiny/documents', {}, { authorization: `Bearer ${tinyKey}` })).status).toBe(200);
  });

  it('accepts ?key= on GET and HEAD', async () => {
    expect((await call(`/tiny/documents?key=${tinyKey}`, { authorization: null })).status).toBe(200);
    expect((await call(`/tiny/documents/100?key=${tinyKey}`, { method: 'HEAD', authorization: null })).status).toBe(
      200,
    );
  });

  it('does not read ?key= on POST', async () => {
    const answer = await post(`/tiny/documents?key=${tinyKey}`, {}, { authorization: null });
    expect(answer.status).toBe(401);
    expect(answer.body.message).toBe('No API key found in request');
  });

  it('does not count the key as an option', async () => {
    const withKey = await call(`/tiny/documents?key=${tinyKey}&limit=2`, { authorization: null });
    expect(withKey.body.meta).toEqual({ count: 2, limit: 2, offset: 0, total: 6 });
  });

  it('is valid for its own repository only', async () => {
    expect((await call('/shelf', { authorization: shelfKey })).status).toBe(200);
    const foreign = await call('/shelf', { authorization: tinyKey });
    expect(foreign.status).toBe(401);
    expect(foreign.body.message).toBe('Invalid authentication credentials');
    expect((await call('/tiny', { authorization: shelfKey })).status).toBe(401);
    expect((await call(`/tiny?key=${shelfKey}`, { authorization: null })).status).toBe(401);
  });
});

describe('§2 checks run in order: route, repository, key, options, item', () => {
  it('a path that is no route is 404 before the key is looked at', async () => {
    const answer = await call('/tiny/unknown/1', { authorization: null });
    expect(answer.status).toBe(404);
  });

  it('an unknown repository is 404 before the key is looked at', async () => {
    expect((await call('/nowhere/documents', { authorization: null })).status).toBe(404);
    expect((await call('/nowhere/documents', { authorization: 'wrong' })).status).toBe(404);
  });

  it('a missing or wrong key is 401 before the options are read', async () => {
    expect((await call('/tiny/documents?limit=x', { authorization: null })).status).toBe(401);
    expect((await call('/tiny/documents?limit=x', { authorization: 'wrong' })).status).toBe(401);
  });

  it('a malformed option is 400 before the item is looked up', async () => {
    for (const path of ['/tiny/documents/12345', '/tiny/alias/away', '/tiny/assets/12345']) {
      expect((await call(`${path}?locale=xx_XX`)).status, path).toBe(400);
    }
    expect((await call('/tiny/collections/none?limit=x')).status).toBe(400);
    expect((await post('/tiny/collections/none', { limit: 'x' })).status).toBe(400);
  });

  it('the item is looked up last', async () => {
    for (const path of ['/tiny/documents/12345', '/tiny/alias/away', '/tiny/collections/none', '/tiny/assets/12345']) {
      expect((await call(`${path}?locale=de_DE`)).status, path).toBe(404);
    }
  });
});

describe('§2 every 200 carries an ETag, and a matching If-None-Match gets 304', () => {
  it('tags every kind of 200', async () => {
    const answers = [
      await call('/tiny'),
      await call('/tiny/documents'),
      await call('/tiny/documents/100'),
      await call('/tiny/alias/home'),
      await call('/tiny/collections/news'),
      await call('/tiny/assets/300'),
      await post('/tiny/documents', { limit: 1 }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get('etag')).toMatch(/^(W\/)?".+"$/);
    }
  });

  it('gives different answers different tags', async () => {
    const all = await call('/tiny/documents');
    const two = await call('/tiny/documents?limit=2');
    expect(all.headers.get('etag')).not.toBe(two.headers.get('etag'));
  });

  it('answers 304 with no body to a matching If-None-Match', async () => {
    const first = await call('/tiny/documents/100');
    const etag = first.headers.get('etag')!;
    const again = await call('/tiny/documents/100', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(etag);
    const listed = await call('/tiny/documents/100', { headers: { 'if-none-match': `"other", ${etag}` } });
    expect(listed.status).toBe(304);
  });

  it('answers 304 to POST and HEAD too', async () => {
    const first = await post('/tiny/documents', { limit: 1 });
    const etag = first.headers.get('etag')!;
    expect((await post('/tiny/documents', { limit: 1 }, { headers: { 'if-none-match': etag } })).status).toBe(304);
    expect((await call('/tiny/documents?limit=1', { method: 'HEAD', headers: { 'if-none-match': etag } })).status).toBe(
      304,
    );
  });

  it('answers 200 in full to a tag that does not match', async () => {
    const answer = await call('/tiny/documents/100', { headers: { 'if-none-match': '"stale"' } });
    expect(answer.status).toBe(200);
    expect(answer.body.meta.id).toBe('100');
  });
});
