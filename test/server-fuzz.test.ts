import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSnapshot, mulberry32 } from '../bench/generate.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { type ServeProcess, serveProcess, startProbe } from './helpers/cli.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

/**
 * Spec §9: "No input, however malformed, produces a 5xx or stops the server." Seeded generators
 * send malformed (and valid) requests, as raw request targets, to the tiny fixture and to a
 * generated 200-document repository. Every answer must be a 200 where the request is valid, a
 * 4xx of the spec's error shape where it is not, never a 5xx; afterwards the server answers
 * exactly as before and no prototype is polluted.
 */

const seed = 20240531;
const codes: Record<number, string> = { 400: 'bad_request', 401: 'unauthorized', 404: 'not_found', 405: 'method_not_allowed', 413: 'payload_too_large' };

/** What a repository offers the generators: names of real items and of fields of each kind. */
interface Target {
  repo: string;
  key: string;
  collection: string;
  document: string;
  asset: string;
  alias: string;
  text: string;
  number: string;
  date: string;
  relation: string;
  assetField: string;
}

const tiny: Target = {
  repo: 'tiny', key: tinyKey, collection: 'goodNews', document: '100', asset: '300', alias: 'home',
  text: 'title', number: 'rating', date: 'date', relation: 'author', assetField: 'images',
};
const benchSnapshot = generateSnapshot({ documents: 200, seed: 11, apiId: 'fuzz', key: 'fuzz-key' });
const generated: Target = {
  repo: 'fuzz', key: 'fuzz-key', collection: 'technology', document: benchSnapshot.documents[0]!.meta.id, asset: benchSnapshot.assets[0]!.meta.id,
  alias: 'imprint', text: 'title', number: 'readingTime', date: 'publishedAt', relation: 'related', assetField: 'cover',
};
const targets = [tiny, generated];

interface Case {
  /** What was sent, shown when the case fails. */
  label: string;
  method?: string;
  /** The raw request target, sent as it is. */
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** `ok`: must be a 200; `error`: must be a 4xx (exactly `status` when given); `either`: a 200 or a 4xx. */
  expect: 'ok' | 'error' | 'either';
  status?: number;
  /** A further check of a 200's body; returns a problem or undefined. */
  check?: (body: any) => string | undefined;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

class Random {
  readonly next: () => number;
  constructor(value: number) {
    this.next = mulberry32(value);
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)]!;
  }
  some<T>(list: readonly T[], count: number): T[] {
    const pool = [...list];
    const out: T[] = [];
    while (out.length < count && pool.length > 0) out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0]!);
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Options as sent: every option with values that must answer 200 and values that must be a 400.

const listOnly = ['limit', 'offset', 'filters', 'includeTags', 'excludeTags', 'sorting', 'search'] as const;
const everywhere = ['locale', 'includes', 'embedAssets', 'fields'] as const;
type OptionName = (typeof listOnly)[number] | (typeof everywhere)[number];
const optionNames: OptionName[] = [...listOnly, ...everywhere];

interface Samples {
  valid: string[];
  invalid: string[];
}

/** JSON texts of option values, for `query=` and POST bodies. */
function jsonSamples(t: Target): Record<OptionName, Samples> {
  const integer: Samples = {
    valid: ['0', '3', '"7"', '1000', '5000', '-0', '" 2 "', '2.0'],
    invalid: ['-1', '1.5', '"1.5"', '""', '"ten"', '"1e3"', '"0x10"', '"-1"', 'true', 'null', '[]', '{}', '[1]', '1e400', '{"valueOf":5}'],
  };
  const tags: Samples = { valid: ['"a,b"', '["featured"]', '[]', '""', '"__proto__"'], invalid: ['1', 'null', 'true', '{}', '[1]', '[null]', '[["a"]]'] };
  return {
    limit: integer,
    offset: integer,
    locale: { valid: ['"en_US"', '"de_DE"', '"de_CH"', '"all"'], invalid: ['"fr_FR"', '""', '"EN_US"', '"__proto__"', '"constructor"', '"toString"', '1', 'null', 'true', '["en_US"]', '{}'] },
    includes: {
      valid: ['0', '1', '5', '"2"', `{"*.fields.${t.relation}":1}`, `{"*.fields.${t.relation}":{"*.fields.${t.relation}":"1"}}`, `{"*.fields.${t.relation}":true}`, '{"*.fields.__proto__":1}', '{"__proto__.fields.author":1}'],
      invalid: [
        '6', '-1', '1.5', '"x"', '"1.5"', '1e400', 'true', 'null', '[]', '{}', '[1]', '{"__proto__":1}', '{"bad":1}', '{"*.meta.id":1}',
        `{"*.fields.${t.relation}":2}`, `{"*.fields.${t.relation}":"yes"}`, `{"*.fields.${t.relation}":{"__proto__":1}}`,
        `${`{"*.fields.${t.relation}":`.repeat(6)}1${'}'.repeat(6)}`,
      ],
    },
    embedAssets: { valid: ['true', 'false', '1', '0', '"true"', '"0"'], invalid: ['"yes"', '2', 'null', '[]', '{}', '"TRUE"', '""'] },
    filters: {
      valid: [
        '[]', `[{"*.fields.${t.text}":{"equal":"x"}}]`, `[{"*.fields.${t.text}":{"equal":5}}]`,
        `[{"*.fields.${t.number}":{"greaterThan":"2"}},{"or":{"*.meta.id":{"in":[1,"2"]}}}]`,
        `{"0":{"*.fields.${t.text}":{"like":"a%"}}}`, '[{"*.fields.__proto__":{"equal":1}}]', '[{"OR":{"*.meta.tags":{"empty":null}}}]',
        '[{"*.meta.revision":{"lessThan":3}}]',
      ],
      invalid: [
        '"x"', '1', 'true', 'null', '{}', '[1]', '[null]', '[[]]', '[{}]', `[{"*.fields.${t.text}":"x"}]`, '[{"bad":{"equal":1}}]',
        `[{"*.fields.${t.text}":{"nope":1}}]`, `[{"*.fields.${t.relation}":{"equal":"1"}}]`, `[{"*.fields.${t.assetField}":{"empty":1}}]`,
        `[{"*.fields.${t.number}":{"equal":"abc"}}]`, `[{"*.fields.${t.number}":{"greaterThan":1e400}}]`, `[{"*.fields.${t.date}":{"lessThan":"yesterday"}}]`,
        '[{"and":1}]', '[{"*.meta.id":{"equal":1.5}}]', '[{"*.meta.revision":{"equal":1.5}}]', '[{"*.meta.__proto__":{"equal":1}}]',
        `[{"*.fields.${t.text}":{"__proto__":1}}]`, '[{"__proto__":{"equal":1}}]', `[{"*.fields.${t.text}":{"in":[]}}]`,
        `[{"*.fields.${t.text}":{"in":[{}]}}]`, `[{"*.fields.${t.text}":{"like":{}}}]`, `[{"*.fields.${t.text}":{"equal":{"toJSON":1}}}]`,
        '{"__proto__":{"*.fields.title":{"equal":"x"}}}',
      ],
    },
    includeTags: tags,
    excludeTags: tags,
    sorting: {
      valid: ['{"meta.id":"asc"}', '{}', `{"fields.${t.text}":-1}`, '{"fields.nothing":"DESC"}', `{"fields.${t.number}":"1","meta.createdAt":"desc"}`, '{"fields.__proto__":"asc"}'],
      invalid: [
        '"x"', '1', 'null', '[]', 'true', '{"meta.id":"up"}', `{"fields.${t.relation}":"asc"}`, `{"fields.${t.assetField}":"asc"}`, '{"fields.extra":"asc"}',
        '{"meta.tags":"asc"}', '{"x":"asc"}', '{"__proto__":"asc"}', '{"meta.__proto__":"asc"}', '{"meta.constructor":"asc"}',
        '{"meta.id":null}', '{"meta.id":{}}', '{"meta.id":["asc"]}', '{"meta.id":2}', '{"fields.a.b":"asc"}',
      ],
    },
    fields: {
      valid: ['"fields(title)"', '"meta"', '"*"', '"fields/title,meta/id"', '"meta(id,tags)"', '"__proto__"', '"constructor(prototype)"', '"includes"'],
      invalid: ['""', '"("', '"a("', '"a)"', '"a,,b"', '"a//b"', '"fields(title"', '1', 'null', '[]', '{}', 'true', '{"toString":"meta"}'],
    },
    search: { valid: ['"apple"', '""', '5', '"  "', '"__proto__"'], invalid: ['null', '[]', '{}', 'true', '["a"]'] },
  };
}

/** Bracketed query-string fragments (already URL-safe). */
function bracketSamples(t: Target): Record<OptionName, Samples> {
  const integer = (name: string): Samples => ({
    valid: [`${name}=0`, `${name}=7`, `${name}=%207%20`, `${name}=5000`, `${name}=+3`],
    invalid: [`${name}=-1`, `${name}=1.5`, `${name}=`, `${name}=ten`, `${name}=1e3`, `${name}[]=1`, `${name}[a]=1`, `${name}=0x10`, `${name}=2.0`],
  });
  const tags = (name: string): Samples => ({
    valid: [`${name}=a,b`, `${name}[]=a&${name}[]=b`, `${name}=`, `${name}[]=1`],
    invalid: [`${name}[a]=b`, `${name}[][x]=1`],
  });
  const rel = `*.fields.${t.relation}`;
  return {
    limit: integer('limit'),
    offset: integer('offset'),
    locale: { valid: ['locale=de_CH', 'locale=all'], invalid: ['locale=xx', 'locale=', 'locale[]=en_US', 'locale[a]=b', 'locale=__proto__'] },
    includes: {
      valid: ['includes=2', 'includes=0', `includes[${rel}]=1`, `includes[${rel}][${rel}]=1`, `includes[${rel}]=true`],
      invalid: ['includes=6', 'includes=-1', 'includes=1.5', 'includes=', 'includes=x', `includes[${rel}]=2`, 'includes[__proto__]=1', 'includes[]=1', `includes${`[${rel}]`.repeat(6)}=1`],
    },
    embedAssets: { valid: ['embedAssets=1', 'embedAssets=false'], invalid: ['embedAssets=yes', 'embedAssets=', 'embedAssets[]=1'] },
    filters: {
      valid: [
        `filters[0][*.fields.${t.text}][equal]=x`, `filters[0][*.fields.${t.number}][lessThan]=3&filters[1][or][*.meta.id][in]=1,2`,
        `filters[][*.fields.${t.text}][like]=%25a%25`, `filters[*.fields.${t.text}][notEmpty]=`,
      ],
      invalid: [
        'filters=x', 'filters[0]=x', `filters[0][*.fields.${t.text}]=x`, 'filters[0][bad][equal]=1', `filters[0][*.fields.${t.text}][nope]=1`,
        `filters[0][*.fields.${t.relation}][equal]=1`, `filters[0][*.fields.${t.number}][equal]=abc`, `filters[0][*.fields.${t.date}][lessThan]=yesterday`,
        'filters[0][*.meta.id][equal]=1.5', 'filters[0][__proto__][equal]=1', 'filters[__proto__][x]=1', `filters[0][*.fields.${t.text}][__proto__]=1`, 'filters[0][and]=1',
      ],
    },
    includeTags: tags('includeTags'),
    excludeTags: tags('excludeTags'),
    sorting: {
      valid: ['sorting[meta.id]=asc', `sorting[fields.${t.text}]=-1`, 'sorting[meta.createdAt]=DESC&sorting[meta.id]=1'],
      invalid: [
        'sorting=x', 'sorting[meta.id]=up', 'sorting[meta.tags]=asc', `sorting[fields.${t.relation}]=asc`, 'sorting[fields.extra]=asc', 'sorting[__proto__]=asc',
        'sorting[meta.__proto__]=asc', 'sorting[meta.id][]=asc', 'sorting[meta.id][x]=1', 'sorting[]=meta.id',
      ],
    },
    fields: { valid: ['fields=fields(title)', 'fields=meta/id', 'fields=*'], invalid: ['fields=', 'fields=(', 'fields=a)', 'fields[]=meta', 'fields[a]=b'] },
    search: { valid: ['search=apple', 'search=', 'search=a+b'], invalid: ['search[]=a', 'search[a]=b'] },
  };
}

const jsonObject = (entries: [string, string][]): string => `{${entries.map(([name, value]) => `${JSON.stringify(name)}:${value}`).join(',')}}`;
const auth = (t: Target) => ({ authorization: t.key });

// ---------------------------------------------------------------------------------------------
// Sending and judging.

let server: ReadApiServer;
let pool: Pool;
let sent = 0;

async function send(c: Case, to: Pool = pool): Promise<Answer> {
  const { statusCode, headers, body } = await to.request({
    path: c.path,
    method: (c.method ?? 'GET') as 'GET',
    headers: c.headers ?? {},
    ...(c.body !== undefined ? { body: c.body } : {}),
  });
  sent++;
  return { status: statusCode, headers, text: await body.text() };
}

/** Everything wrong with an answer, as sentences; empty when the answer is right. */
function problems(c: Case, answer: Answer): string[] {
  const out: string[] = [];
  const { status } = answer;
  if (status >= 500) return [`answered ${status}: ${answer.text.slice(0, 200)}`];
  if (c.expect === 'ok' && status !== 200) out.push(`expected 200, got ${status}: ${answer.text.slice(0, 200)}`);
  if (c.expect === 'error' && (status < 400 || status > 499)) out.push(`expected a 4xx, got ${status}`);
  if (c.status !== undefined && status !== c.status) out.push(`expected ${c.status}, got ${status}: ${answer.text.slice(0, 200)}`);
  if (status !== 200 && status !== 304 && (status < 400 || status > 499)) out.push(`unexpected status ${status}`);
  if (answer.headers['access-control-allow-origin'] !== '*') out.push('no Access-Control-Allow-Origin: *');
  if (c.method === 'HEAD' || status === 304) {
    if (answer.text !== '') out.push(`${c.method === 'HEAD' ? 'HEAD' : '304'} answered with a body`);
    return out;
  }
  if (status === 200 && c.path.startsWith('/files/')) return out;
  let body: any;
  try {
    body = JSON.parse(answer.text);
  } catch {
    return [...out, `the body is not JSON: ${answer.text.slice(0, 100)}`];
  }
  if (status === 200) {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) out.push('a 200 body that is not an object');
    else if (Array.isArray(body.data)) {
      const { count, limit, offset, total } = body.meta ?? {};
      if (body.status !== 200) out.push('a list without status 200');
      if (count !== body.data.length) out.push(`meta.count ${count} but ${body.data.length} documents`);
      if (!(limit >= count && limit <= 1000)) out.push(`meta.limit ${limit} out of range`);
      if (!(offset >= 0) || !(total >= count)) out.push(`meta.offset ${offset} / meta.total ${total} out of range`);
    }
    const problem = c.check?.(body);
    if (problem) out.push(problem);
    return out;
  }
  const shapeOk =
    Object.keys(body).join() === 'status,message,error' &&
    body.status === status &&
    typeof body.message === 'string' &&
    body.message !== '' &&
    body.error?.code === codes[status] &&
    typeof body.error?.message === 'string' &&
    body.error.message !== '';
  if (!shapeOk) out.push(`not the spec's error shape for ${status}: ${answer.text.slice(0, 200)}`);
  if (!String(answer.headers['content-type']).startsWith('application/json')) out.push('an error that is not application/json');
  return out;
}

/** Sends the cases, eight at a time (to the in-process server unless told), and returns the failures, each with its label. */
async function run(cases: Case[], to: Pool = pool): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++]!;
      try {
        const found = problems(c, await send(c, to));
        if (found.length > 0) failures.push(`${c.label}\n    ${found.join('\n    ')}`);
      } catch (error) {
        failures.push(`${c.label}\n    request failed: ${(error as Error).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return failures;
}

/** Sends raw bytes on a fresh connection and returns the status and body of the answer. */
function rawExchange(bytes: string | Buffer): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {}); // the server may close while we still write; what it answered counts
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const end = text.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
      if (end === -1 || !status) reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 100))}`));
      else resolve({ status, headers: text.slice(0, end), body: text.slice(end + 4) });
    });
    socket.write(bytes);
  });
}

/** Normal requests whose answers must not change after the fuzzing. */
function normalRequests(t: Target): string[] {
  return [
    `/v1/${t.repo}`,
    `/v1/${t.repo}/documents?limit=5&sorting[meta.id]=asc&includes=1&locale=de_CH`,
    `/v1/${t.repo}/documents?filters[0][*.fields.${t.number}][greaterThan]=2&sorting[fields.${t.text}]=asc&locale=all`,
    `/v1/${t.repo}/collections/${t.collection}?includes=2`,
    `/v1/${t.repo}/documents/${t.document}?includes=2&locale=de_DE`,
    `/v1/${t.repo}/alias/${t.alias}?fields=fields,meta(id)`,
    `/v1/${t.repo}/assets/${t.asset}?locale=all`,
  ];
}
const baseline = new Map<string, string>();

beforeAll(async () => {
  server = await startTiny({ snapshots: [benchSnapshot] });
  pool = new Pool(server.origin, { connections: 8 });
  for (const t of targets) {
    for (const path of normalRequests(t)) {
      const answer = await send({ label: path, path, headers: auth(t), expect: 'ok' });
      expect(answer.status).toBe(200);
      baseline.set(`${t.repo} ${path}`, answer.text);
    }
  }
});
afterAll(async () => {
  await pool?.close();
  await server?.close();
});

// ---------------------------------------------------------------------------------------------

describe('a known option with a malformed value is a 400 naming the option; a valid one answers 200 (§3)', () => {
  function casesFor(t: Target): Case[] {
    const cases: Case[] = [];
    const json = jsonSamples(t);
    const brackets = bracketSamples(t);
    const list = `/v1/${t.repo}/documents`;
    for (const name of optionNames) {
      for (const [valid, values] of [[true, json[name].valid], [false, json[name].invalid]] as const) {
        for (const value of values) {
          const expect = valid ? 'ok' : 'error';
          const status = valid ? undefined : 400;
          const options = jsonObject([[name, value]]);
          cases.push({ label: `GET ${list}?query=${options}`, path: `${list}?query=${encodeURIComponent(options)}`, headers: auth(t), expect, status });
          cases.push({ label: `POST ${list} ${options}`, method: 'POST', path: list, body: options, headers: auth(t), expect, status });
          // On a single document, list options are ignored (they apply to lists only).
          const single = `/v1/${t.repo}/documents/${t.document}`;
          const ignored = (listOnly as readonly string[]).includes(name);
          cases.push({ label: `GET ${single}?query=${options}`, path: `${single}?query=${encodeURIComponent(options)}`, headers: auth(t), expect: ignored ? 'ok' : expect, status: ignored ? undefined : status });
        }
      }
      for (const [valid, values] of [[true, brackets[name].valid], [false, brackets[name].invalid]] as const) {
        for (const fragment of values) {
          cases.push({ label: `GET ${list}?${fragment}`, path: `${list}?${fragment}`, headers: auth(t), expect: valid ? 'ok' : 'error', status: valid ? undefined : 400 });
          const collection = `/v1/${t.repo}/collections/${t.collection}`;
          cases.push({ label: `GET ${collection}?${fragment}`, path: `${collection}?${fragment}`, headers: auth(t), expect: valid ? 'ok' : 'error', status: valid ? undefined : 400 });
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
      const answer = await send({ label: name, method: 'POST', path: '/v1/tiny/documents', body: `{"${name}":${value}}`, headers: auth(tiny), expect: 'error' });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text).error.message).toContain(name);
    }
  });
});

describe('random mixes of the three forms: the body wins over query=, query= over brackets (§3)', () => {
  const noiseBrackets = ['utm_source=x', '__proto__[polluted]=1', 'constructor[prototype][polluted]=1', 'foo[bar][]=x', 'x[][y]=1', 'toString=1', 'valueOf[]=2', 'hasOwnProperty=1'];
  const noiseJson: [string, string][] = [['__proto__', '{"polluted":true}'], ['constructor', '{"prototype":{"polluted":1}}'], ['unknownOption', '[1,{"a":2}]']];

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
      const forms = random.some(method === 'POST' ? ['brackets', 'query', 'body'] : ['brackets', 'query'], random.int(1, 2));
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
    return {
      label: `#${index} ${method} ${decodeURIComponentSafe(target)}${bodyText ? ` body ${bodyText}` : ''}`,
      method,
      path: target,
      ...(bodyText !== undefined ? { body: bodyText } : {}),
      headers: auth(t),
      expect: valid ? 'ok' : 'error',
      ...(valid ? {} : { status: 400 }),
    };
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
    (n: string) => `${n}[0`, (n: string) => `${n}]b`, (n: string) => `${n}[a]b`, (n: string) => `${n}[a]]`, (n: string) => `${n}[[a]]`,
    (n: string) => `[${n}]`, (n: string) => `${n}][`, (n: string) => `${n}[a][b`, (n: string) => `${n}[a[b]]`, (n: string) => `${n}[]x`,
    (n: string) => `${n}[a][][]`, (n: string) => `${n}%5B0`, (n: string) => `${n}%5Da`,
  ];
  const conflicts = [(n: string) => `${n}=2&${n}[a]=1`, (n: string) => `${n}[a]=1&${n}=2`, (n: string) => `${n}[]=1&${n}[a]=2`, (n: string) => `${n}[a]=1&${n}[]=2`];
  const names = ['filters', 'sorting', 'includes', 'fields', 'limit', 'query', 'x', 'a', '__proto__', 'constructor'];

  it('for every broken shape, on every name, on both repositories', async () => {
    const random = new Random(seed + 1);
    const cases: Case[] = [];
    for (const t of targets) {
      for (const name of names) {
        for (const broken of breakers) {
          const value = random.pick(['1', '', 'x', '%5B', 'asc']);
          const path = `/v1/${t.repo}/${random.pick(['documents', `collections/${t.collection}`, `documents/${t.document}`])}?${broken(name)}=${value}`;
          cases.push({ label: `GET ${path}`, path, headers: auth(t), expect: 'error', status: 400 });
        }
        for (const conflict of conflicts) {
          const path = `/v1/${t.repo}/documents?${conflict(name)}`;
          cases.push({ label: `GET ${path}`, path, headers: auth(t), expect: 'error', status: 400 });
        }
      }
    }
    expect(await run(cases)).toEqual([]);
  });

  it('treats x[][y] as an array of objects: ignored for an unknown name, a list of filter entries for filters', async () => {
    expect(
      await run([
        { label: 'x[][y]', path: '/v1/tiny/documents?x[][y]=1', headers: auth(tiny), expect: 'ok' },
        {
          label: 'filters[][...]',
          path: '/v1/tiny/documents?filters[][*.fields.title][equal]=Apple%20harvest',
          headers: auth(tiny),
          expect: 'ok',
          check: (body) => (body.data.map((d: any) => d.meta.id).join() === '100' ? undefined : `got ${body.data.map((d: any) => d.meta.id)}`),
        },
      ]),
    ).toEqual([]);
  });
});

describe('bad JSON in query= and in POST bodies is a 400 (§3, §9)', () => {
  const broken = [
    '{', '{"limit":', '{"limit":1,}', "{'limit':1}", '{limit:1}', 'nul', 'undefined', '[1,2', '"unterminated', '{"a":1}}', '{"a" 1}', '01',
    '{"limit":01}', 'NaN', '{"limit":NaN}', '{"limit":Infinity}', '{"a":"\\x"}', '{"a":"\\u12"}', '\u0000', '\uFEFF{}', '{"a":1}x', '{"a":\u0001}',
  ];
  const notObjects = ['[]', '1', '"x"', 'null', 'true', '[{"limit":1}]', '-0', '1e400'];

  it('refuses every broken or non-object JSON text in both places, on both routes', async () => {
    const cases: Case[] = [];
    for (const t of targets) {
      for (const text of [...broken, ...notObjects]) {
        for (const path of [`/v1/${t.repo}/documents`, `/v1/${t.repo}/collections/${t.collection}`]) {
          cases.push({ label: `GET ${path}?query=${JSON.stringify(text)}`, path: `${path}?query=${encodeURIComponent(text)}`, headers: auth(t), expect: 'error', status: 400 });
          cases.push({ label: `POST ${path} ${JSON.stringify(text)}`, method: 'POST', path, body: text, headers: auth(t), expect: 'error', status: 400 });
        }
        const single = `/v1/${t.repo}/documents/${t.document}`;
        cases.push({ label: `GET ${single}?query=${JSON.stringify(text)}`, path: `${single}?query=${encodeURIComponent(text)}`, headers: auth(t), expect: 'error', status: 400 });
      }
      const list = `/v1/${t.repo}/documents`;
      cases.push({ label: 'query=', path: `${list}?query=`, headers: auth(t), expect: 'error', status: 400 });
      cases.push({ label: 'query[a]=1', path: `${list}?query[a]=1`, headers: auth(t), expect: 'error', status: 400 });
      cases.push({ label: 'query[]=x', path: `${list}?query[]=x`, headers: auth(t), expect: 'error', status: 400 });
      cases.push({ label: 'raw query={"limit":2}', path: `${list}?query={"limit":2}`, headers: auth(t), expect: 'ok', check: (b) => (b.meta.limit === 2 ? undefined : `limit ${b.meta.limit}`) });
      cases.push({ label: 'an empty POST body is no options', method: 'POST', path: list, body: '', headers: auth(t), expect: 'ok' });
      cases.push({ label: 'a blank POST body is no options', method: 'POST', path: list, body: ' \n\t', headers: auth(t), expect: 'ok' });
    }
    expect(await run(cases)).toEqual([]);
  });

  it('refuses a body that is not UTF-8 JSON', async () => {
    const answer = await rawExchange(
      Buffer.concat([Buffer.from(`POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nAuthorization: ${tinyKey}\r\nContent-Length: 4\r\nConnection: close\r\n\r\n`), Buffer.from([0xff, 0xfe, 0x7b, 0x7d])]),
    );
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 400, error: { code: 'bad_request' } });
  });

  it('answers 413 payload_too_large to a body over 1 MiB, declared or streamed', async () => {
    // Asked to close, the server closes once its answer is written (without that, it reads the rest of the body first).
    const declared = await rawExchange(`POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nAuthorization: ${tinyKey}\r\nConnection: close\r\nContent-Length: 2000000\r\n\r\n{"limit":`);
    const chunk = `${'{"search":"'.padEnd(65_536, 'a')}`;
    const chunked = [`POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nAuthorization: ${tinyKey}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n`];
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
          `${list}?${b}=1`, `${list}?limit=${b}`, `${list}?filters[0][*.fields.${t.text}][equal]=${b}`, `${list}?filters[0][${b}][equal]=1`, `${list}?query=${b}`,
          `${list}?fields=${b}`, `/v1/${t.repo}/documents/${b}`, `/v1/${b}/documents`, `/v1/${t.repo}/collections/${b}`, `/v1/${t.repo}/alias/${b}`,
          `/v1/${t.repo}/assets/${b}`, `/files/${t.repo}/${b}`, `/files/${b}/x.png`,
        ];
        for (const path of places) cases.push({ label: `GET ${path}`, path, headers: auth(t), expect: 'error', status: 400 });
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
    const filter = (path: string, operator: string, value: string) => `${list}?filters[0][${path}][${operator}]=${value}`;
    const ok: string[] = [
      `${list}?limit=99999999999999999999`, `${list}?offset=99999999999999999999`, `${list}?query=${encodeURIComponent('{"limit":1e21,"offset":1e300}')}`,
      `${list}?includes=05`, `${list}?query=${encodeURIComponent('{"includes":5.0}')}`,
      filter(`*.fields.${t.number}`, 'greaterThan', '1e308'), filter(`*.fields.${t.number}`, 'lessThan', '0.1'), filter(`*.fields.${t.number}`, 'equal', '-0'),
      filter(`*.fields.${t.number}`, 'equal', '1.5e3'), filter(`*.fields.${t.number}`, 'equal', '.5'), filter(`*.fields.${t.number}`, 'equal', '5.'),
      filter(`*.fields.${t.number}`, 'in', '1,2.5,%203'), filter('*.meta.id', 'equal', '99999999999999999999'), filter('*.meta.id', 'greaterThan', '1'.repeat(64)),
      filter('*.meta.id', 'lessThan', '-1'), filter('*.meta.revision', 'greaterThan', '99999999999999999999'), filter(`*.fields.${t.date}`, 'greaterThan', '9999-12-31'),
    ];
    const errors: string[] = [
      `${list}?limit=1.5`, `${list}?limit=0.0`, `${list}?limit=1e2`, `${list}?limit=-0.5`, `${list}?offset=2.5`, `${list}?offset=-1`,
      `${list}?query=${encodeURIComponent('{"limit":1e400}')}`, `${list}?query=${encodeURIComponent('{"offset":0.5}')}`,
      `${list}?includes=2.5`, `${list}?includes=1e0`, `${list}?includes=${huge}`, `${list}?includes=99999999999999999999`, `${list}?includes=-0.0`,
      `${list}?query=${encodeURIComponent('{"includes":1e400}')}`, `${list}?query=${encodeURIComponent('{"includes":0.5}')}`,
      filter(`*.fields.${t.number}`, 'greaterThan', '1e400'), filter(`*.fields.${t.number}`, 'equal', 'NaN'), filter(`*.fields.${t.number}`, 'equal', 'Infinity'),
      filter(`*.fields.${t.number}`, 'equal', '0x10'), filter(`*.fields.${t.number}`, 'equal', '1_000'), filter(`*.fields.${t.number}`, 'equal', huge),
      filter('*.meta.id', 'equal', '1.5'), filter('*.meta.id', 'equal', '1e5'), filter('*.meta.revision', 'equal', '1.5'), filter('*.meta.revision', 'lessThan', '2e1'),
      filter(`*.fields.${t.date}`, 'lessThan', '2024-13-45'), filter(`*.fields.${t.date}`, 'lessThan', '99999-01-01'), filter(`*.fields.${t.date}`, 'lessThan', '1.5'),
    ];
    // Beyond what a double holds: a 200 (clamped or empty) or a 400 are both fair.
    const either: string[] = [`${list}?limit=${huge}`, `${list}?offset=${huge}`, filter('*.meta.id', 'equal', '1'.repeat(65)), filter(`*.fields.${t.date}`, 'equal', '2024-02-30')];
    const limitCheck = (body: any) => (body.meta.limit <= 1000 ? undefined : `meta.limit ${body.meta.limit}`);
    return [
      ...ok.map((path): Case => ({ label: `GET ${path}`, path, headers: auth(t), expect: 'ok', check: limitCheck })),
      ...errors.map((path): Case => ({ label: `GET ${path}`, path, headers: auth(t), expect: 'error', status: 400 })),
      ...either.map((path): Case => ({ label: `GET ${path}`, path, headers: auth(t), expect: 'either', check: limitCheck })),
    ];
  }

  it('answer 200 when they are integers (clamped above 1000) or readable numbers, else 400', async () => {
    expect(await run(targets.flatMap(casesFor))).toEqual([]);
  });

  it('clamps a 20-digit limit to 1000', async () => {
    const answer = await send({ label: '', path: '/v1/tiny/documents?limit=99999999999999999999', headers: auth(tiny), expect: 'ok' });
    expect(JSON.parse(answer.text).meta).toMatchObject({ limit: 1000, count: 6 });
  });
});

describe('nesting 1,000 levels deep is a 400, in brackets and in JSON (§9)', () => {
  const depth = 1000;
  const deepArray = (inner = '1', n = depth) => `${'['.repeat(n)}${inner}${']'.repeat(n)}`;
  const deepObject = (key: string, inner = '1', n = depth) => `${`{${JSON.stringify(key)}:`.repeat(n)}${inner}${'}'.repeat(n)}`;

  function casesFor(t: Target): Case[] {
    const list = `/v1/${t.repo}/documents`;
    const cases: Case[] = [];
    const bracketNames = [
      `filters${'[0]'.repeat(depth)}`, `sorting${'[a]'.repeat(depth)}`, `includes${`[*.fields.${t.relation}]`.repeat(depth)}`, `x${'['.repeat(depth)}`,
      `x${'[]'.repeat(depth)}`, '['.repeat(depth), `x${']'.repeat(depth)}`, `fields${'[a]'.repeat(13)}`,
    ];
    for (const name of bracketNames) cases.push({ label: `GET ${list}?${name.slice(0, 60)}...=1`, path: `${list}?${name}=1`, headers: auth(t), expect: 'error', status: 400 });
    // Arrays stay short enough for a URL (2 characters a level); objects go in POST bodies.
    for (const options of [deepArray(), `{"filters":${deepArray()}}`, `{"limit":${deepArray()}}`, `{"includeTags":${deepArray('"a"')}}`, `{"filters":[{"*.fields.${t.text}":{"in":${deepArray()}}}]}`]) {
      cases.push({ label: `GET ${list}?query=${options.slice(0, 60)}...`, path: `${list}?query=${options}`, headers: auth(t), expect: 'error', status: 400 });
    }
    const bodies = [
      deepArray(), `{"filters":${deepArray()}}`, `{"filters":[${deepObject('or')}]}`, `{"filters":[{"*.fields.${t.text}":{"equal":${deepObject('a')}}}]}`,
      `{"includes":${deepObject(`*.fields.${t.relation}`)}}`, `{"includes":${deepObject('a')}}`, `{"sorting":{"meta.id":${deepObject('a')}}}`, `{"sorting":${deepObject('meta.id')}}`,
      `{"limit":${deepArray()}}`, `{"offset":${deepObject('a')}}`, `{"locale":${deepArray()}}`, `{"fields":${deepObject('a')}}`, `{"search":${deepArray()}}`,
      `{"embedAssets":${deepArray()}}`, `{"excludeTags":${deepArray('"a"')}}`,
      // 100,000 levels: too deep even to print in an error message.
      `{"limit":${deepArray('1', 100_000)}}`, `{"filters":[{"*.fields.${t.text}":{"equal":${deepObject('a', '1', 50_000)}}}]}`, `{"includes":${deepArray('1', 100_000)}}`,
    ];
    for (const body of bodies) cases.push({ label: `POST ${list} ${body.slice(0, 60)}...`, method: 'POST', path: list, body, headers: auth(t), expect: 'error', status: 400 });
    // Deep JSON under names that are not options is ignored.
    for (const body of [deepObject('a'), `{"x":${deepArray()}}`, `{"__proto__":${deepObject('polluted')}}`, `{"unknown":${deepArray('1', 100_000)}}`]) {
      cases.push({ label: `POST ${list} ${body.slice(0, 60)}...`, method: 'POST', path: list, body, headers: auth(t), expect: 'ok' });
    }
    return cases;
  }

  it('on both repositories', async () => {
    expect(await run(targets.flatMap(casesFor))).toEqual([]);
  });
});

describe('__proto__, constructor and prototype are ordinary keys (§3: only known option names are read)', () => {
  const none = (body: any) => (body.meta.total === 0 ? undefined : `expected no documents, got ${body.meta.total}`);
  const emptyDocuments = (body: any) => (body.data.every((d: any) => Object.keys(d).length === 0) ? undefined : 'masked documents should be empty');
  const noIncludes = (body: any) => (JSON.stringify(body.includes) === '{}' ? undefined : `includes ${JSON.stringify(body.includes)}`);
  const limit = (n: number) => (body: any) => (body.meta.limit === n ? undefined : `meta.limit ${body.meta.limit}, expected ${n}`);
  const idsAscending = (body: any) => {
    const ids = body.data.map((d: any) => BigInt(d.meta.id));
    return ids.every((id: bigint, i: number) => i === 0 || ids[i - 1] < id) ? undefined : 'not ordered by id';
  };

  function casesFor(t: Target): Case[] {
    const list = `/v1/${t.repo}/documents`;
    const get = (query: string, expect: Case['expect'], check?: Case['check']): Case => ({
      label: `GET ${list}?${query}`, path: `${list}?${query}`, headers: auth(t), expect, ...(expect === 'error' ? { status: 400 } : {}), ...(check ? { check } : {}),
    });
    const post = (body: string, expect: Case['expect'], check?: Case['check']): Case => ({
      label: `POST ${list} ${body}`, method: 'POST', path: list, body, headers: auth(t), expect, ...(expect === 'error' ? { status: 400 } : {}), ...(check ? { check } : {}),
    });
    const viaQuery = (json: string, expect: Case['expect'], check?: Case['check']) => get(`query=${encodeURIComponent(json)}`, expect, check);
    const path = (p: string, status: number, headers: Record<string, string> = auth(t)): Case => ({ label: `GET ${p}`, path: p, headers, expect: 'error', status });
    const json: [string, Case['expect'], Case['check']?][] = [
      ['{"__proto__":{"limit":1}}', 'ok', limit(25)],
      ['{"__proto__":{"polluted":true},"limit":2}', 'ok', limit(2)],
      ['{"constructor":{"prototype":{"polluted":true}}}', 'ok'],
      ['{"prototype":{"limit":3}}', 'ok', limit(25)],
      ['{"filters":[{"__proto__":{"equal":1}}]}', 'error'],
      ['{"filters":{"__proto__":{"*.fields.title":{"equal":"x"}}}}', 'error'],
      ['{"filters":[{"*.fields.title":{"__proto__":"x"}}]}', 'error'],
      ['{"filters":[{"*.fields.title":{"constructor":"x"}}]}', 'error'],
      ['{"filters":[{"*.fields.__proto__":{"equal":"x"}}]}', 'ok', none],
      ['{"filters":[{"*.fields.constructor":{"notEqual":"x"}}]}', 'ok'],
      ['{"filters":[{"*.meta.constructor":{"equal":"x"}}]}', 'error'],
      ['{"sorting":{"__proto__":"asc"}}', 'error'],
      ['{"sorting":{"meta.constructor":"asc"}}', 'error'],
      ['{"sorting":{"meta.hasOwnProperty":"asc"}}', 'error'],
      ['{"sorting":{"fields.__proto__":"asc"}}', 'ok', idsAscending],
      ['{"includes":{"__proto__":1}}', 'error'],
      [`{"includes":{"*.fields.${t.relation}":{"__proto__":1}}}`, 'error'],
      ['{"includes":{"*.fields.__proto__":1}}', 'ok', noIncludes],
      ['{"includes":{"constructor.fields.prototype":1}}', 'ok', noIncludes],
      ['{"fields":"__proto__"}', 'ok', emptyDocuments],
      ['{"fields":"constructor/prototype"}', 'ok', emptyDocuments],
      ['{"locale":"__proto__"}', 'error'],
      ['{"locale":"constructor"}', 'error'],
      ['{"limit":{"__proto__":1}}', 'error'],
      ['{"includeTags":"__proto__"}', 'ok', none],
      ['{"search":"constructor"}', 'ok', none],
    ];
    return [
      get('__proto__[polluted]=1', 'ok'),
      get('constructor[prototype][polluted]=1', 'ok'),
      get('__proto__=x&prototype=y&constructor=z', 'ok'),
      get('__proto__[limit]=1', 'ok', limit(25)),
      get('filters[__proto__][polluted]=1', 'error'),
      get('filters[0][__proto__][equal]=1', 'error'),
      get('filters[0][*.fields.__proto__][equal]=1', 'ok', none),
      get('filters[0][*.fields.constructor][equal]=1', 'ok', none),
      get('filters[0][__proto__.fields.title][equal]=1', 'ok', none),
      get('filters[0][*.meta.__proto__][equal]=1', 'error'),
      get('filters[0][*.meta.toString][equal]=1', 'error'),
      get('filters[0][*.fields.title][__proto__]=1', 'error'),
      get('filters[0][*.fields.title][constructor]=1', 'error'),
      get('filters[0][*.fields.title][toString]=1', 'error'),
      get('sorting[__proto__]=asc', 'error'),
      get('sorting[fields.__proto__]=asc', 'ok', idsAscending),
      get('sorting[meta.__proto__]=asc', 'error'),
      get('sorting[meta.constructor]=asc', 'error'),
      get('sorting[meta.id]=__proto__', 'error'),
      get('includes[__proto__]=1', 'error'),
      get('includes[*.fields.__proto__]=1', 'ok', noIncludes),
      get(`includes[*.fields.${t.relation}][__proto__]=1`, 'error'),
      get('includes[__proto__.fields.author]=1', 'ok', noIncludes),
      get('fields=__proto__', 'ok', emptyDocuments),
      get('fields=__proto__(polluted)', 'ok', emptyDocuments),
      get('fields=constructor/prototype', 'ok', emptyDocuments),
      get('locale=__proto__', 'error'),
      get('locale=constructor', 'error'),
      get('includeTags=__proto__', 'ok', none),
      get('includeTags[__proto__]=1', 'error'),
      get('search=__proto__', 'ok', none),
      ...json.map(([text, expect, check]) => viaQuery(text, expect, check)),
      ...json.map(([text, expect, check]) => post(text, expect, check)),
      path(`/v1/__proto__/documents`, 404),
      path(`/v1/constructor`, 404),
      path(`/v1/${t.repo}/collections/__proto__`, 404),
      path(`/v1/${t.repo}/collections/constructor`, 404),
      path(`/v1/${t.repo}/alias/__proto__`, 404),
      path(`/v1/${t.repo}/alias/hasOwnProperty`, 404),
      path(`/v1/${t.repo}/documents/__proto__`, 404),
      path(`/v1/${t.repo}/assets/constructor`, 404),
      path(`/files/__proto__/x.png`, 404),
      path(`/files/${t.repo}/__proto__`, 404),
      path(`/v1/${t.repo}/documents?key=__proto__`, 401, {}),
      path(`/v1/${t.repo}/documents`, 401, { authorization: '__proto__' }),
      path(`/v1/${t.repo}/documents`, 401, { authorization: 'constructor' }),
    ];
  }

  it('on both repositories, in brackets, in query= and in POST bodies', async () => {
    expect(await run(targets.flatMap(casesFor))).toEqual([]);
  });
});

describe('routes, methods and keys: the order of checks (§2)', () => {
  const segments = ['v1', 'tiny', 'fuzz', 'documents', 'collections', 'alias', 'assets', 'files', '', '..', '.', '%2e%2e', '%2F', 'x'.repeat(300), '__proto__', '100', 'news', 'home', '300', ';', '%00', '*'];

  function routeCases(random: Random): Case[] {
    const cases: Case[] = [];
    for (let i = 0; i < 150; i++) {
      const parts = Array.from({ length: random.int(1, 5) }, () => random.pick(segments));
      const path = `/${parts.join('/')}${random.chance(0.2) ? '/' : ''}${random.chance(0.3) ? '?limit=1' : ''}`;
      const t = random.pick(targets);
      cases.push({ label: `GET ${path}`, path, headers: auth(t), expect: 'either' });
    }
    for (const t of targets) {
      const list = `/v1/${t.repo}/documents`;
      const single = `/v1/${t.repo}/documents/${t.document}`;
      for (const method of ['PUT', 'DELETE', 'PATCH', 'TRACE', 'PROPFIND']) {
        cases.push({ label: `${method} ${list}`, method, path: list, headers: auth(t), expect: 'error', status: 405 });
        cases.push({ label: `${method} ${single}`, method, path: single, headers: auth(t), expect: 'error', status: 405 });
        cases.push({ label: `${method} /v1/nowhere/documents`, method, path: '/nowhere/documents', headers: auth(t), expect: 'error', status: 404 });
      }
      cases.push({ label: `POST ${single}`, method: 'POST', path: single, body: '{}', headers: auth(t), expect: 'error', status: 405 });
      cases.push({ label: `POST /v1/${t.repo}`, method: 'POST', path: `/v1/${t.repo}`, body: '{}', headers: auth(t), expect: 'error', status: 405 });
      cases.push({ label: 'no key', path: list, expect: 'error', status: 401 });
      cases.push({ label: 'a wrong key', path: list, headers: { authorization: 'wrong' }, expect: 'error', status: 401 });
      cases.push({ label: "another repository's key", path: list, headers: { authorization: t === tiny ? generated.key : tiny.key }, expect: 'error', status: 401 });
      cases.push({ label: 'Bearer alone', path: list, headers: { authorization: 'Bearer' }, expect: 'error', status: 401 });
      cases.push({ label: 'Bearer key', path: list, headers: { authorization: `Bearer ${t.key}` }, expect: 'ok' });
      cases.push({ label: 'a 10,000-character key', path: list, headers: { authorization: 'k'.repeat(10_000) }, expect: 'error', status: 401 });
      cases.push({ label: 'POST with the key in the URL', method: 'POST', path: `${list}?key=${t.key}`, body: '{}', expect: 'error', status: 401 });
      cases.push({ label: 'a bad key before bad options: 401 first', path: `${list}?limit=-1`, headers: { authorization: 'wrong' }, expect: 'error', status: 401 });
      cases.push({ label: 'bad options before a missing document: 400 first', path: `/v1/${t.repo}/documents/1?locale=xx`, headers: auth(t), expect: 'error', status: 400 });
      cases.push({ label: 'If-None-Match: * answers 304', path: list, headers: { ...auth(t), 'if-none-match': '*' }, expect: 'either', status: 304 });
      cases.push({ label: 'HEAD with bad options', method: 'HEAD', path: `${list}?limit=x`, headers: auth(t), expect: 'error', status: 400 });
    }
    return cases;
  }

  it('random paths and methods never get a 5xx; wrong methods get 405, keys 401', async () => {
    expect(await run(routeCases(new Random(seed + 2)))).toEqual([]);
  });
});

describe("requests Node's HTTP parser refuses still get the spec's JSON error (§9)", () => {
  const requests = [
    `GET /v1/tiny/documents?a=b c HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET /v1/tiny/documents?a=\u0001 HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n`,
    `GET /v1/tiny/documents?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`,
    `GET /v1/tiny/documents HTTP/9.9\r\nHost: x\r\n\r\n`,
    `POST /v1/tiny/documents HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}`,
  ];

  it('answers 400 with the error shape and closes the connection', async () => {
    for (const raw of requests) {
      const answer = await rawExchange(raw);
      expect(answer.status, raw.slice(0, 60)).toBe(400);
      expect(JSON.parse(answer.body), raw.slice(0, 60)).toMatchObject({ status: 400, error: { code: 'bad_request' } });
    }
  });
});

describe('adversarial input is answered in time linear in its size, and holds up no other client (§9)', () => {
  // A server of its own, and a probe of its own, each in a process of its own: in this process
  // the probe would wait for this file's own work, and a blocked server would block the runner.
  let folder: string;
  let served: ServeProcess;
  let attacker: Pool;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'fuzz-adversarial-'));
    await writeFile(join(folder, 'fuzz.json'), JSON.stringify(benchSnapshot));
    served = await serveProcess({ paths: [fixture('tiny.json'), join(folder, 'fuzz.json')], flags: ['--quiet'] });
    attacker = new Pool(served.origin, { connections: 2 });
  });
  afterAll(async () => {
    await attacker?.close();
    await served?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  const percents = (n: number) => '%'.repeat(n);
  const many = <T,>(n: number, make: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => make(i));

  function casesFor(t: Target, richtext: string): Case[] {
    const list = `/v1/${t.repo}/documents`;
    const post = (label: string, options: object | string, expect: Case['expect'], status?: number): Case => ({
      label: `POST ${list} ${label}`, method: 'POST', path: list, body: typeof options === 'string' ? options : JSON.stringify(options), headers: auth(t), expect,
      ...(status ? { status } : {}),
    });
    const filter = (path: string, operator: string, value: unknown) => ({ filters: [{ [path]: { [operator]: value } }] });
    const get = (label: string, query: string, expect: Case['expect'], status?: number): Case => ({
      label: `GET ${list}?${label}`, path: `${list}?${query}`, headers: auth(t), expect, ...(status ? { status } : {}),
    });
    return [
      // like: a pattern of many % against text that almost matches
      get(`filters[0][*.fields.${richtext}][like]=%×14 x`, `filters[0][*.fields.${richtext}][like]=${encodeURIComponent(`${percents(14)}x`)}`, 'ok'),
      get(`filters[0][*.fields.${t.text}][notLike]=%×30 x`, `filters[0][*.fields.${t.text}][notLike]=${encodeURIComponent(`${percents(30)}x`)}`, 'ok'),
      post('like: 200,000 %', filter(`*.fields.${richtext}`, 'like', percents(200_000)), 'ok'),
      post('like: 200,000 % and x', filter(`*.fields.${t.text}`, 'like', `${percents(200_000)}x`), 'ok'),
      post('like: %a repeated 100,000 times', filter(`*.fields.${richtext}`, 'like', `${'%a'.repeat(100_000)}%`), 'ok'),
      post('like: 300,000 a', filter(`*.fields.${t.text}`, 'like', 'a'.repeat(300_000)), 'ok'),
      post('notLike on tags: %x% repeated', filter('*.meta.tags', 'notLike', '%x'.repeat(50_000)), 'ok'),
      // numbers, dates, ids and locations as long as a body allows
      post('a number of 300,000 digits and x', filter(`*.fields.${t.number}`, 'equal', `${'1'.repeat(300_000)}x`), 'error', 400),
      post('a number of 300,000 digits', filter(`*.fields.${t.number}`, 'greaterThan', '1'.repeat(300_000)), 'either'),
      post('a location of 300,000 digits', filter('*.fields.place', 'equal', `${'1'.repeat(300_000)}x,1`), 'error', 400),
      post('a date of 300,000 characters', filter(`*.fields.${t.date}`, 'lessThan', `2024-01-01T${'1'.repeat(300_000)}`), 'error', 400),
      post('an id of 300,000 digits', filter('*.meta.id', 'equal', '9'.repeat(300_000)), 'error', 400),
      post('limit of 500,000 digits', { limit: '9'.repeat(500_000) }, 'either'),
      post('includes of 500,000 spaces', { includes: `${' '.repeat(500_000)}1x` }, 'error', 400),
      // long lists and many conditions
      post('in: 10,000 texts', filter(`*.fields.${t.text}`, 'in', many(10_000, (i) => `title ${i}`)), 'ok'),
      post('in: 100,000 texts', filter(`*.fields.${t.text}`, 'in', many(100_000, (i) => `t${i}`)), 'error', 400),
      post('notIn: 10,000 numbers', filter(`*.fields.${t.number}`, 'notIn', many(10_000, (i) => i)), 'ok'),
      post('includeTags: 1,000 tags', { includeTags: many(1_000, (i) => `tag ${i}`) }, 'ok'),
      post('includeTags: 100,000 tags', { includeTags: many(100_000, (i) => `t${i}`) }, 'error', 400),
      post('excludeTags: 100,000 tags', { excludeTags: many(100_000, (i) => `t${i}`).join(',') }, 'error', 400),
      post('search: 100,000 words', { search: many(100_000, (i) => `w${i}`).join(' ') }, 'error', 400),
      post('search: 100 words', { search: many(100, (i) => `w${i}`).join(' ') }, 'ok'),
      post('search: one word of 500,000 characters', { search: 'a'.repeat(500_000) }, 'ok'),
      post('filters: 100 conditions', { filters: many(100, (i) => ({ [`*.fields.${t.text}`]: { like: `%${i}%` } })) }, 'ok'),
      post('filters: 20,000 conditions', { filters: many(20_000, (i) => ({ or: { [`*.fields.${t.text}`]: { like: `%${i}%` } } })) }, 'error', 400),
      post('sorting: 32 fields no type has', { sorting: Object.fromEntries(many(32, (i) => [`fields.f${i}`, 'asc'])) }, 'ok'),
      post('sorting: 20,000 fields no type has', { sorting: Object.fromEntries(many(20_000, (i) => [`fields.f${i}`, 'asc'])) }, 'error', 400),
      post('fields: a mask of 500,000 characters', { fields: `fields(${'a,'.repeat(250_000)}b)` }, 'error', 400),
      post('includes: 1,000 fields', { includes: Object.fromEntries(many(1_000, (i) => [`*.fields.f${i}`, 1])) }, 'ok'),
      post('includes: 20,000 fields', { includes: Object.fromEntries(many(20_000, (i) => [`*.fields.f${i}`, 1])) }, 'error', 400),
      // nesting as deep as a body allows
      post('filters nested 100,000 levels', `{"filters":${'['.repeat(100_000)}1${']'.repeat(100_000)}}`, 'error', 400),
    ];
  }

  it('answers each with a 200 or a 4xx while a GET of the repository keeps being answered within 100 ms', async () => {
    const once = [...casesFor(tiny, 'text'), ...casesFor(generated, 'body')];
    const cases = [...once, ...once, ...once]; // three rounds, to meet the probe at more moments
    const probe = await startProbe(`${served.url}/tiny`, tinyKey);
    let waits: number[];
    try {
      expect(await run(cases, attacker)).toEqual([]);
    } finally {
      waits = await probe.stop();
    }
    expect(waits.length).toBeGreaterThan(20);
    expect(Math.max(...waits), `the slowest of ${waits.length} answers`).toBeLessThan(100);
  }, 120_000);
});

describe('after all of that, the server still serves correctly (§9)', () => {
  it('sent at least 1,000 requests', () => {
    expect(sent).toBeGreaterThanOrEqual(1000);
  });

  it('answers every normal request exactly as before', async () => {
    for (const t of targets) {
      for (const path of normalRequests(t)) {
        const answer = await send({ label: path, path, headers: auth(t), expect: 'ok' });
        expect(answer.status, path).toBe(200);
        expect(answer.text, path).toBe(baseline.get(`${t.repo} ${path}`));
      }
    }
    const home = JSON.parse((await send({ label: '', path: '/v1/tiny/alias/home?locale=de_DE', headers: auth(tiny), expect: 'ok' })).text);
    expect(home.fields.title).toBe('Apfelernte');
  });

  it('polluted no prototype', () => {
    for (const proto of [Object.prototype, Array.prototype, Function.prototype, String.prototype]) {
      expect(Object.hasOwn(proto, 'polluted')).toBe(false);
      expect(Object.hasOwn(proto, 'limit')).toBe(false);
    }
    expect(({} as any).polluted).toBeUndefined();
    expect((Object.create(null) as any).polluted).toBeUndefined();
  });
});

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
