import { describe, expect, it } from 'vitest';
import { tinyKey } from './helpers/server.ts';
import {
  bracketSamples,
  type Case,
  decodeURIComponentSafe,
  getCase,
  jsonObject,
  jsonSamples,
  listOnly,
  optionNames,
  postCase,
  Random,
  rawExchange,
  run,
  seed,
  send,
  stillServesAsBefore,
  type Target,
  targets,
  tiny,
  useFuzzServer,
} from './helpers/fuzz.ts';

/**
 * Spec §9, for malformed options, forms and encodings: "No input, however malformed, produces a
 * 5xx or stops the server." Seeded generators send malformed (and valid) requests, as raw request targets, to the tiny fixture and to a
 * generated 200-document repository. Every answer must be a 200 where the request is valid, a
 * 4xx of the spec's error shape where it is not, never a 5xx; afterwards the server answers
 * exactly as before and no prototype is polluted.
 */

useFuzzServer();

describe('a known option with a malformed value is a 400 naming the option; a valid one answers 200 (§3)', () => {
  function casesFor(t: Target): Case[] {
    const cases: Case[] = [];
    const json = jsonSamples(t);
    const brackets = bracketSamples(t);
    const list = `/v1/${t.repo}/documents`;
    for (const name of optionNames) {
      for (const [valid, values] of [
        [true, json[name].valid],
        [false, json[name].invalid],
      ] as const) {
        for (const value of values) {
          const expected = valid ? 'ok' : 'error';
          const options = jsonObject([[name, value]]);
          const query = (path: string) => `${path}?query=${encodeURIComponent(options)}`;
          cases.push(getCase(t, query(list), expected, { label: `GET ${list}?query=${options}` }));
          cases.push(postCase(t, list, options, expected));
          // On a single document, list options are ignored (they apply to lists only).
          const single = `/v1/${t.repo}/documents/${t.document}`;
          const ignored = (listOnly as readonly string[]).includes(name);
          cases.push(getCase(t, query(single), ignored ? 'ok' : expected, { label: `GET ${single}?query=${options}` }));
        }
      }
      for (const [valid, values] of [
        [true, brackets[name].valid],
        [false, brackets[name].invalid],
      ] as const) {
        for (const fragment of values) {
          const collection = `/v1/${t.repo}/collections/${t.collection}`;
          for (const route of [list, collection])
            cases.push(getCase(t, `${route}?${fragment}`, valid ? 'ok' : 'error'));
        }
      }
    }
    return cases;
  }
  for (const t of targets) {
    it(`on the ${t.repo} repository, for every option in all three forms`, async () => {
      expect(await run(casesFor(t))).toEqual([]);
    });
  }

  it('names the option in the message', async () => {
    for (const name of optionNames) {
      const value = name === 'search' ? '[]' : 'null';
      const answer = await send(postCase(tiny, '/v1/tiny/documents', `{"${name}":${value}}`, 'error'));
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error.message).toContain(name);
    }
  });
});

describe('random mixes of the three forms: the body wins over query=, query= over brackets (§3)', () => {
  const noiseBrackets = [
    'utm_source=x',
    '__proto__[polluted]=1',
    'constructor[prototype][polluted]=1',
    'foo[bar][]=x',
    'x[][y]=1',
    'toString=1',
    'valueOf[]=2',
    'hasOwnProperty=1',
  ];
  const noiseJson: [string, string][] = [
    ['__proto__', '{"polluted":true}'],
    ['constructor', '{"prototype":{"polluted":1}}'],
    ['unknownOption', '[1,{"a":2}]'],
  ];

  function mix(random: Random, t: Target, index: number): Case {
    const method = random.chance(0.35) ? 'POST' : random.chance(0.15) ? 'HEAD' : 'GET';
    const path = random.chance(0.7) ? `/v1/${t.repo}/documents` : `/v1/${t.repo}/collections/${t.collection}`;
    const json = jsonSamples(t);
    const brackets = bracketSamples(t);
    const fragments: string[] = [];
    const query: [string, string][] = [];
    const body: [string, string][] = [];
    let valid = true;
    for (const name of random.some(optionNames, random.int(1, 4))) {
      const forms = random.some(
        method === 'POST' ? ['brackets', 'query', 'body'] : ['brackets', 'query'],
        random.int(1, 2),
      );
      const winner = ['body', 'query', 'brackets'].find((form) => forms.includes(form));
      for (const form of forms) {
        const good = random.chance(0.7);
        const samples = form === 'brackets' ? brackets[name] : json[name];
        const value = random.pick(good ? samples.valid : samples.invalid);
        if (form === winner && !good) valid = false;
        if (form === 'brackets') fragments.push(value);
        else (form === 'query' ? query : body).push([name, value]);
      }
    }
    if (random.chance(0.5)) fragments.push(random.pick(noiseBrackets));
    if (random.chance(0.3)) (random.chance(0.5) || method !== 'POST' ? query : body).push(random.pick(noiseJson));
    if (query.length > 0) fragments.push(`query=${encodeURIComponent(jsonObject(query))}`);
    const target = fragments.length > 0 ? `${path}?${random.some(fragments, fragments.length).join('&')}` : path;
    const bodyText = method === 'POST' && (body.length > 0 || random.chance(0.5)) ? jsonObject(body) : undefined;
    return getCase(t, target, valid ? 'ok' : 'error', {
      label: `#${index} ${method} ${decodeURIComponentSafe(target)}${bodyText ? ` body ${bodyText}` : ''}`,
      method,
      ...(bodyText !== undefined ? { body: bodyText } : {}),
    });
  }

  for (const t of targets) {
    it(`answers 200 when the winning value of every option is valid, else 400 (${t.repo}, 250 seeded requests)`, async () => {
      const random = new Random(seed + t.repo.length);
      expect(await run(Array.from({ length: 250 }, (_, i) => mix(random, t, i)))).toEqual([]);
    });
  }
});

describe('broken brackets in parameter names are a 400 (§3, §9)', () => {
  const breakers = [
    (n: string) => `${n}[0`,
    (n: string) => `${n}]b`,
    (n: string) => `${n}[a]b`,
    (n: string) => `${n}[a]]`,
    (n: string) => `${n}[[a]]`,
    (n: string) => `[${n}]`,
    (n: string) => `${n}][`,
    (n: string) => `${n}[a][b`,
    (n: string) => `${n}[a[b]]`,
    (n: string) => `${n}[]x`,
    (n: string) => `${n}[a][][]`,
    (n: string) => `${n}%5B0`,
    (n: string) => `${n}%5Da`,
  ];
  const conflicts = [
    (n: string) => `${n}=2&${n}[a]=1`,
    (n: string) => `${n}[a]=1&${n}=2`,
    (n: string) => `${n}[]=1&${n}[a]=2`,
    (n: string) => `${n}[a]=1&${n}[]=2`,
  ];
  const names = ['filters', 'sorting', 'includes', 'fields', 'limit', 'query', 'x', 'a', '__proto__', 'constructor'];

  it('for every broken shape, on every name, on both repositories', async () => {
    const random = new Random(seed + 1);
    const cases: Case[] = [];
    for (const t of targets) {
      for (const name of names) {
        for (const broken of breakers) {
          const value = random.pick(['1', '', 'x', '%5B', 'asc']);
          const path = `/v1/${t.repo}/${random.pick(['documents', `collections/${t.collection}`, `documents/${t.document}`])}?${broken(name)}=${value}`;
          cases.push(getCase(t, path, 'error'));
        }
        for (const conflict of conflicts) {
          const path = `/v1/${t.repo}/documents?${conflict(name)}`;
          cases.push(getCase(t, path, 'error'));
        }
      }
    }
    expect(await run(cases)).toEqual([]);
  });

  it('treats x[][y] as an array of objects: ignored for an unknown name, a list of filter entries for filters', async () => {
    expect(
      await run([
        getCase(tiny, '/v1/tiny/documents?x[][y]=1', 'ok'),
        getCase(tiny, '/v1/tiny/documents?filters[][*.fields.title][equal]=Apple%20harvest', 'ok', {
          check: (body) =>
            body.data.map((d: any) => d.meta.id).join() === '100'
              ? undefined
              : `got ${body.data.map((d: any) => d.meta.id)}`,
        }),
      ]),
    ).toEqual([]);
  });
});

describe('bad JSON in query= and in POST bodies is a 400 (§3, §9)', () => {
  const broken = [
    '{',
    '{"limit":',
    '{"limit":1,}',
    "{'limit':1}",
    '{limit:1}',
    'nul',
    'undefined',
    '[1,2',
    '"unterminated',
    '{"a":1}}',
    '{"a" 1}',
    '01',
    '{"limit":01}',
    'NaN',
    '{"limit":NaN}',
    '{"limit":Infinity}',
    '{"a":"\\x"}',
    '{"a":"\\u12"}',
    '\u0000',
    '\uFEFF{}',
    '{"a":1}x',
    '{"a":\u0001}',
  ];
  const notObjects = ['[]', '1', '"x"', 'null', 'true', '[{"limit":1}]', '-0', '1e400'];

  it('refuses every broken or non-object JSON text in both places, on both routes', async () => {
    const cases: Case[] = [];
    for (const t of targets) {
      for (const text of [...broken, ...notObjects]) {
        for (const path of [`/v1/${t.repo}/documents`, `/v1/${t.repo}/collections/${t.collection}`]) {
          const label = `${path}?query=${JSON.stringify(text)}`;
          cases.push(getCase(t, `${path}?query=${encodeURIComponent(text)}`, 'error', { label: `GET ${label}` }));
          cases.push(postCase(t, path, text, 'error', { label: `POST ${path} ${JSON.stringify(text)}` }));
        }
        const single = `/v1/${t.repo}/documents/${t.document}`;
        const label = `GET ${single}?query=${JSON.stringify(text)}`;
        cases.push(getCase(t, `${single}?query=${encodeURIComponent(text)}`, 'error', { label }));
      }
      const list = `/v1/${t.repo}/documents`;
      for (const query of ['query=', 'query[a]=1', 'query[]=x']) cases.push(getCase(t, `${list}?${query}`, 'error'));
      const limit = (b: any) => (b.meta.limit === 2 ? undefined : `limit ${b.meta.limit}`);
      cases.push(getCase(t, `${list}?query={"limit":2}`, 'ok', { label: 'raw query={"limit":2}', check: limit }));
      cases.push(postCase(t, list, '', 'ok', { label: 'an empty POST body is no options' }));
      cases.push(postCase(t, list, ' \n\t', 'ok', { label: 'a blank POST body is no options' }));
    }
    expect(await run(cases)).toEqual([]);
  });

  it('refuses a body that is not UTF-8 JSON', async () => {
    const answer = await rawExchange(
      Buffer.concat([
        Buffer.from(
          `POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nAuthorization: ${tinyKey}\r\nContent-Length: 4\r\nConnection: close\r\n\r\n`,
        ),
        Buffer.from([0xff, 0xfe, 0x7b, 0x7d]),
      ]),
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, error: { code: 'bad_request' } });
  });

  it('answers 413 payload_too_large to a body over 1 MiB, declared or streamed', async () => {
    // Asked to close, the server closes once its answer is written (without that, it reads the rest of the body first).
    const declared = await rawExchange(
      `POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nAuthorization: ${tinyKey}\r\nConnection: close\r\nContent-Length: 2000000\r\n\r\n{"limit":`,
    );
    const chunk = `${'{"search":"'.padEnd(65_536, 'a')}`;
    const chunked = [
      `POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nAuthorization: ${tinyKey}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n`,
    ];
    for (let i = 0; i < 18; i++) chunked.push(`${(65_536).toString(16)}\r\n${chunk}\r\n`);
    const streamed = await rawExchange(`${chunked.join('')}0\r\n\r\n`);
    for (const answer of [declared, streamed]) {
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toMatchObject({ status: 413, error: { code: 'payload_too_large' } });
    }
  });
});

describe('bad percent-encoding is a 400, wherever it is (§9)', () => {
  const bad = ['%zz', '%E0%A4%A', '%', '%%', '%1', '%C0%80', '%ED%A0%80', '%FF', 'a%2', '%u0041', '%E0%A4'];

  it('in parameter names and values, in query=, in the key, and in every path segment', async () => {
    const cases: Case[] = [];
    for (const t of targets) {
      for (const b of bad) {
        const list = `/v1/${t.repo}/documents`;
        const places = [
          `${list}?${b}=1`,
          `${list}?limit=${b}`,
          `${list}?filters[0][*.fields.${t.text}][equal]=${b}`,
          `${list}?filters[0][${b}][equal]=1`,
          `${list}?query=${b}`,
          `${list}?fields=${b}`,
          `/v1/${t.repo}/documents/${b}`,
          `/v1/${b}/documents`,
          `/v1/${t.repo}/collections/${b}`,
          `/v1/${t.repo}/alias/${b}`,
          `/v1/${t.repo}/assets/${b}`,
          `/files/${t.repo}/${b}`,
          `/files/${b}/x.png`,
        ];
        for (const path of places) cases.push(getCase(t, path, 'error'));
        cases.push({ label: `GET ${list}?key=${b}`, path: `${list}?key=${b}`, expect: 'error', status: 400 });
      }
    }
    expect(await run(cases)).toEqual([]);
  });
});

describe('huge and fractional numbers (§3, §4, §6)', () => {
  const huge = '9'.repeat(400);
  function casesFor(t: Target): Case[] {
    const list = `/v1/${t.repo}/documents`;
    const filter = (path: string, operator: string, value: string) =>
      `${list}?filters[0][${path}][${operator}]=${value}`;
    const ok: string[] = [
      `${list}?limit=99999999999999999999`,
      `${list}?offset=99999999999999999999`,
      `${list}?query=${encodeURIComponent('{"limit":1e21,"offset":1e300}')}`,
      `${list}?includes=05`,
      `${list}?query=${encodeURIComponent('{"includes":5.0}')}`,
      filter(`*.fields.${t.number}`, 'greaterThan', '1e308'),
      filter(`*.fields.${t.number}`, 'lessThan', '0.1'),
      filter(`*.fields.${t.number}`, 'equal', '-0'),
      filter(`*.fields.${t.number}`, 'equal', '1.5e3'),
      filter(`*.fields.${t.number}`, 'equal', '.5'),
      filter(`*.fields.${t.number}`, 'equal', '5.'),
      filter(`*.fields.${t.number}`, 'in', '1,2.5,%203'),
      filter('*.meta.id', 'equal', '99999999999999999999'),
      filter('*.meta.id', 'greaterThan', '1'.repeat(64)),
      filter('*.meta.id', 'lessThan', '-1'),
      filter('*.meta.revision', 'greaterThan', '99999999999999999999'),
      filter(`*.fields.${t.date}`, 'greaterThan', '9999-12-31'),
    ];
    const errors: string[] = [
      `${list}?limit=1.5`,
      `${list}?limit=0.0`,
      `${list}?limit=1e2`,
      `${list}?limit=-0.5`,
      `${list}?offset=2.5`,
      `${list}?offset=-1`,
      `${list}?query=${encodeURIComponent('{"limit":1e400}')}`,
      `${list}?query=${encodeURIComponent('{"offset":0.5}')}`,
      `${list}?includes=2.5`,
      `${list}?includes=1e0`,
      `${list}?includes=${huge}`,
      `${list}?includes=99999999999999999999`,
      `${list}?includes=-0.0`,
      `${list}?query=${encodeURIComponent('{"includes":1e400}')}`,
      `${list}?query=${encodeURIComponent('{"includes":0.5}')}`,
      filter(`*.fields.${t.number}`, 'greaterThan', '1e400'),
      filter(`*.fields.${t.number}`, 'equal', 'NaN'),
      filter(`*.fields.${t.number}`, 'equal', 'Infinity'),
      filter(`*.fields.${t.number}`, 'equal', '0x10'),
      filter(`*.fields.${t.number}`, 'equal', '1_000'),
      filter(`*.fields.${t.number}`, 'equal', huge),
      filter('*.meta.id', 'equal', '1.5'),
      filter('*.meta.id', 'equal', '1e5'),
      filter('*.meta.revision', 'equal', '1.5'),
      filter('*.meta.revision', 'lessThan', '2e1'),
      filter(`*.fields.${t.date}`, 'lessThan', '2024-13-45'),
      filter(`*.fields.${t.date}`, 'lessThan', '99999-01-01'),
      filter(`*.fields.${t.date}`, 'lessThan', '1.5'),
    ];
    // Beyond what a double holds: a 200 (clamped or empty) or a 400 are both fair.
    const either: string[] = [
      `${list}?limit=${huge}`,
      `${list}?offset=${huge}`,
      filter('*.meta.id', 'equal', '1'.repeat(65)),
      filter(`*.fields.${t.date}`, 'equal', '2024-02-30'),
    ];
    const limitCheck = (body: any) => (body.meta.limit <= 1000 ? undefined : `meta.limit ${body.meta.limit}`);
    return [
      ...ok.map((path) => getCase(t, path, 'ok', { check: limitCheck })),
      ...errors.map((path) => getCase(t, path, 'error')),
      ...either.map((path) => getCase(t, path, 'either', { check: limitCheck })),
    ];
  }

  it('answer 200 when they are integers (clamped above 1000) or readable numbers, else 400', async () => {
    expect(await run(targets.flatMap(casesFor))).toEqual([]);
  });

  it('clamps a 20-digit limit to 1000', async () => {
    const answer = await send(getCase(tiny, '/v1/tiny/documents?limit=99999999999999999999', 'ok'));
    expect(JSON.parse(answer.text).meta).toMatchObject({ limit: 1000, count: 6 });
  });
});

describe('nesting 1,000 levels deep is a 400, in brackets and in JSON (§9)', () => {
  const depth = 1000;
  const deepArray = (inner = '1', n = depth) => `${'['.repeat(n)}${inner}${']'.repeat(n)}`;
  const deepObject = (key: string, inner = '1', n = depth) =>
    `${`{${JSON.stringify(key)}:`.repeat(n)}${inner}${'}'.repeat(n)}`;

  function casesFor(t: Target): Case[] {
    const list = `/v1/${t.repo}/documents`;
    const cases: Case[] = [];
    const bracketNames = [
      `filters${'[0]'.repeat(depth)}`,
      `sorting${'[a]'.repeat(depth)}`,
      `includes${`[*.fields.${t.relation}]`.repeat(depth)}`,
      `x${'['.repeat(depth)}`,
      `x${'[]'.repeat(depth)}`,
      '['.repeat(depth),
      `x${']'.repeat(depth)}`,
      `fields${'[a]'.repeat(13)}`,
    ];
    for (const name of bracketNames)
      cases.push(getCase(t, `${list}?${name}=1`, 'error', { label: `GET ${list}?${name.slice(0, 60)}...=1` }));
    // Arrays stay short enough for a URL (2 characters a level); objects go in POST bodies.
    for (const options of [
      deepArray(),
      `{"filters":${deepArray()}}`,
      `{"limit":${deepArray()}}`,
      `{"includeTags":${deepArray('"a"')}}`,
      `{"filters":[{"*.fields.${t.text}":{"in":${deepArray()}}}]}`,
    ]) {
      cases.push(
        getCase(t, `${list}?query=${options}`, 'error', { label: `GET ${list}?query=${options.slice(0, 60)}...` }),
      );
    }
    const bodies = [
      deepArray(),
      `{"filters":${deepArray()}}`,
      `{"filters":[${deepObject('or')}]}`,
      `{"filters":[{"*.fields.${t.text}":{"equal":${deepObject('a')}}}]}`,
      `{"includes":${deepObject(`*.fields.${t.relation}`)}}`,
      `{"includes":${deepObject('a')}}`,
      `{"sorting":{"meta.id":${deepObject('a')}}}`,
      `{"sorting":${deepObject('meta.id')}}`,
      `{"limit":${deepArray()}}`,
      `{"offset":${deepObject('a')}}`,
      `{"locale":${deepArray()}}`,
      `{"fields":${deepObject('a')}}`,
      `{"search":${deepArray()}}`,
      `{"embedAssets":${deepArray()}}`,
      `{"excludeTags":${deepArray('"a"')}}`,
      // 100,000 levels: too deep even to print in an error message.
      `{"limit":${deepArray('1', 100_000)}}`,
      `{"filters":[{"*.fields.${t.text}":{"equal":${deepObject('a', '1', 50_000)}}}]}`,
      `{"includes":${deepArray('1', 100_000)}}`,
    ];
    for (const body of bodies)
      cases.push(postCase(t, list, body, 'error', { label: `POST ${list} ${body.slice(0, 60)}...` }));
    // Deep JSON under names that are not options is ignored.
    for (const body of [
      deepObject('a'),
      `{"x":${deepArray()}}`,
      `{"__proto__":${deepObject('polluted')}}`,
      `{"unknown":${deepArray('1', 100_000)}}`,
    ]) {
      cases.push(postCase(t, list, body, 'ok', { label: `POST ${list} ${body.slice(0, 60)}...` }));
    }
    return cases;
  }

  it('on both repositories', async () => {
    expect(await run(targets.flatMap(casesFor))).toEqual([]);
  });
});

stillServesAsBefore(1000);
