import { connect } from 'node:net';
import { Pool } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSnapshot } from './generate-snapshot.ts';
import { Random as GeneratorRandom } from './random.ts';
import type { ReadApiServer } from '../../src/server/index.ts';
import { startTiny, tinyKey } from './server.ts';

/**
 * What the fuzz tests share: seeded generators of malformed (and valid) requests for the tiny
 * fixture and a generated 200-document repository, sending and judging, and a server per test
 * file (`useFuzzServer`) whose normal answers are recorded first, to compare after the fuzzing.
 */

export const seed = 20240531;
export const codes: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
};

/** What a repository offers the generators: names of real items and of fields of each kind. */
export interface Target {
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

export const tiny: Target = {
  repo: 'tiny',
  key: tinyKey,
  collection: 'goodNews',
  document: '100',
  asset: '300',
  alias: 'home',
  text: 'title',
  number: 'rating',
  date: 'date',
  relation: 'author',
  assetField: 'images',
};
export const benchSnapshot = generateSnapshot({ documents: 200, seed: 11, apiId: 'fuzz', key: 'fuzz-key' });
export const generated: Target = {
  repo: 'fuzz',
  key: 'fuzz-key',
  collection: 'technology',
  document: benchSnapshot.documents[0]!.meta.id,
  asset: benchSnapshot.assets[0]!.meta.id,
  alias: 'imprint',
  text: 'title',
  number: 'readingTime',
  date: 'publishedAt',
  relation: 'related',
  assetField: 'cover',
};
export const targets = [tiny, generated];

export interface Case {
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

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** The generator's seeded choices; `some` here draws without putting back, so it gives `count` items whenever the list has them (a shuffle when `count` is its length). */
export class Random extends GeneratorRandom {
  override some<T>(list: readonly T[], count: number): T[] {
    const pool = [...list];
    const out: T[] = [];
    while (out.length < count && pool.length > 0) out.push(pool.splice(Math.floor(this.next() * pool.length), 1)[0]!);
    return out;
  }
}

// ---------------------------------------------------------------------------------------------
// Options as sent: every option with values that must answer 200 and values that must be a 400.

export const listOnly = ['limit', 'offset', 'filters', 'includeTags', 'excludeTags', 'sorting', 'search'] as const;
export const everywhere = ['locale', 'includes', 'embedAssets', 'fields'] as const;
export type OptionName = (typeof listOnly)[number] | (typeof everywhere)[number];
export const optionNames: OptionName[] = [...listOnly, ...everywhere];

export interface Samples {
  valid: string[];
  invalid: string[];
}

/** JSON texts of option values, for `query=` and POST bodies. */
export function jsonSamples(t: Target): Record<OptionName, Samples> {
  const integer: Samples = {
    valid: ['0', '3', '"7"', '1000', '5000', '-0', '" 2 "', '2.0'],
    invalid: [
      '-1',
      '1.5',
      '"1.5"',
      '""',
      '"ten"',
      '"1e3"',
      '"0x10"',
      '"-1"',
      'true',
      'null',
      '[]',
      '{}',
      '[1]',
      '1e400',
      '{"valueOf":5}',
    ],
  };
  const tags: Samples = {
    valid: ['"a,b"', '["featured"]', '[]', '""', '"__proto__"'],
    invalid: ['1', 'null', 'true', '{}', '[1]', '[null]', '[["a"]]'],
  };
  return {
    limit: integer,
    offset: integer,
    locale: {
      valid: ['"en_US"', '"de_DE"', '"de_CH"', '"all"'],
      invalid: [
        '"fr_FR"',
        '""',
        '"EN_US"',
        '"__proto__"',
        '"constructor"',
        '"toString"',
        '1',
        'null',
        'true',
        '["en_US"]',
        '{}',
      ],
    },
    includes: {
      valid: [
        '0',
        '1',
        '5',
        '"2"',
        `{"*.fields.${t.relation}":1}`,
        `{"*.fields.${t.relation}":{"*.fields.${t.relation}":"1"}}`,
        `{"*.fields.${t.relation}":true}`,
        '{"*.fields.__proto__":1}',
        '{"__proto__.fields.author":1}',
      ],
      invalid: [
        '6',
        '-1',
        '1.5',
        '"x"',
        '"1.5"',
        '1e400',
        'true',
        'null',
        '[]',
        '{}',
        '[1]',
        '{"__proto__":1}',
        '{"bad":1}',
        '{"*.meta.id":1}',
        `{"*.fields.${t.relation}":2}`,
        `{"*.fields.${t.relation}":"yes"}`,
        `{"*.fields.${t.relation}":{"__proto__":1}}`,
        `${`{"*.fields.${t.relation}":`.repeat(6)}1${'}'.repeat(6)}`,
      ],
    },
    embedAssets: {
      valid: ['true', 'false', '1', '0', '"true"', '"0"'],
      invalid: ['"yes"', '2', 'null', '[]', '{}', '"TRUE"', '""'],
    },
    filters: {
      valid: [
        '[]',
        `[{"*.fields.${t.text}":{"equal":"x"}}]`,
        `[{"*.fields.${t.text}":{"equal":5}}]`,
        `[{"*.fields.${t.number}":{"greaterThan":"2"}},{"or":{"*.meta.id":{"in":[1,"2"]}}}]`,
        `{"0":{"*.fields.${t.text}":{"like":"a%"}}}`,
        '[{"*.fields.__proto__":{"equal":1}}]',
        '[{"OR":{"*.meta.tags":{"empty":null}}}]',
        '[{"*.meta.revision":{"lessThan":3}}]',
      ],
      invalid: [
        '"x"',
        '1',
        'true',
        'null',
        '{}',
        '[1]',
        '[null]',
        '[[]]',
        '[{}]',
        `[{"*.fields.${t.text}":"x"}]`,
        '[{"bad":{"equal":1}}]',
        `[{"*.fields.${t.text}":{"nope":1}}]`,
        `[{"*.fields.${t.relation}":{"equal":"1"}}]`,
        `[{"*.fields.${t.assetField}":{"empty":1}}]`,
        `[{"*.fields.${t.number}":{"equal":"abc"}}]`,
        `[{"*.fields.${t.number}":{"greaterThan":1e400}}]`,
        `[{"*.fields.${t.date}":{"lessThan":"yesterday"}}]`,
        '[{"and":1}]',
        '[{"*.meta.id":{"equal":1.5}}]',
        '[{"*.meta.revision":{"equal":1.5}}]',
        '[{"*.meta.__proto__":{"equal":1}}]',
        `[{"*.fields.${t.text}":{"__proto__":1}}]`,
        '[{"__proto__":{"equal":1}}]',
        `[{"*.fields.${t.text}":{"in":[]}}]`,
        `[{"*.fields.${t.text}":{"in":[{}]}}]`,
        `[{"*.fields.${t.text}":{"like":{}}}]`,
        `[{"*.fields.${t.text}":{"equal":{"toJSON":1}}}]`,
        '{"__proto__":{"*.fields.title":{"equal":"x"}}}',
      ],
    },
    includeTags: tags,
    excludeTags: tags,
    sorting: {
      valid: [
        '{"meta.id":"asc"}',
        '{}',
        `{"fields.${t.text}":-1}`,
        '{"fields.nothing":"DESC"}',
        `{"fields.${t.number}":"1","meta.createdAt":"desc"}`,
        '{"fields.__proto__":"asc"}',
      ],
      invalid: [
        '"x"',
        '1',
        'null',
        '[]',
        'true',
        '{"meta.id":"up"}',
        `{"fields.${t.relation}":"asc"}`,
        `{"fields.${t.assetField}":"asc"}`,
        '{"fields.extra":"asc"}',
        '{"meta.tags":"asc"}',
        '{"x":"asc"}',
        '{"__proto__":"asc"}',
        '{"meta.__proto__":"asc"}',
        '{"meta.constructor":"asc"}',
        '{"meta.id":null}',
        '{"meta.id":{}}',
        '{"meta.id":["asc"]}',
        '{"meta.id":2}',
        '{"fields.a.b":"asc"}',
      ],
    },
    fields: {
      valid: [
        '"fields(title)"',
        '"meta"',
        '"*"',
        '"fields/title,meta/id"',
        '"meta(id,tags)"',
        '"__proto__"',
        '"constructor(prototype)"',
        '"includes"',
      ],
      invalid: [
        '""',
        '"("',
        '"a("',
        '"a)"',
        '"a,,b"',
        '"a//b"',
        '"fields(title"',
        '1',
        'null',
        '[]',
        '{}',
        'true',
        '{"toString":"meta"}',
      ],
    },
    search: { valid: ['"apple"', '""', '5', '"  "', '"__proto__"'], invalid: ['null', '[]', '{}', 'true', '["a"]'] },
  };
}

/** Bracketed query-string fragments (already URL-safe). */
export function bracketSamples(t: Target): Record<OptionName, Samples> {
  const integer = (name: string): Samples => ({
    valid: [`${name}=0`, `${name}=7`, `${name}=%207%20`, `${name}=5000`, `${name}=+3`],
    invalid: [
      `${name}=-1`,
      `${name}=1.5`,
      `${name}=`,
      `${name}=ten`,
      `${name}=1e3`,
      `${name}[]=1`,
      `${name}[a]=1`,
      `${name}=0x10`,
      `${name}=2.0`,
    ],
  });
  const tags = (name: string): Samples => ({
    valid: [`${name}=a,b`, `${name}[]=a&${name}[]=b`, `${name}=`, `${name}[]=1`],
    invalid: [`${name}[a]=b`, `${name}[][x]=1`],
  });
  const rel = `*.fields.${t.relation}`;
  return {
    limit: integer('limit'),
    offset: integer('offset'),
    locale: {
      valid: ['locale=de_CH', 'locale=all'],
      invalid: ['locale=xx', 'locale=', 'locale[]=en_US', 'locale[a]=b', 'locale=__proto__'],
    },
    includes: {
      valid: ['includes=2', 'includes=0', `includes[${rel}]=1`, `includes[${rel}][${rel}]=1`, `includes[${rel}]=true`],
      invalid: [
        'includes=6',
        'includes=-1',
        'includes=1.5',
        'includes=',
        'includes=x',
        `includes[${rel}]=2`,
        'includes[__proto__]=1',
        'includes[]=1',
        `includes${`[${rel}]`.repeat(6)}=1`,
      ],
    },
    embedAssets: {
      valid: ['embedAssets=1', 'embedAssets=false'],
      invalid: ['embedAssets=yes', 'embedAssets=', 'embedAssets[]=1'],
    },
    filters: {
      valid: [
        `filters[0][*.fields.${t.text}][equal]=x`,
        `filters[0][*.fields.${t.number}][lessThan]=3&filters[1][or][*.meta.id][in]=1,2`,
        `filters[][*.fields.${t.text}][like]=%25a%25`,
        `filters[*.fields.${t.text}][notEmpty]=`,
      ],
      invalid: [
        'filters=x',
        'filters[0]=x',
        `filters[0][*.fields.${t.text}]=x`,
        'filters[0][bad][equal]=1',
        `filters[0][*.fields.${t.text}][nope]=1`,
        `filters[0][*.fields.${t.relation}][equal]=1`,
        `filters[0][*.fields.${t.number}][equal]=abc`,
        `filters[0][*.fields.${t.date}][lessThan]=yesterday`,
        'filters[0][*.meta.id][equal]=1.5',
        'filters[0][__proto__][equal]=1',
        'filters[__proto__][x]=1',
        `filters[0][*.fields.${t.text}][__proto__]=1`,
        'filters[0][and]=1',
      ],
    },
    includeTags: tags('includeTags'),
    excludeTags: tags('excludeTags'),
    sorting: {
      valid: [
        'sorting[meta.id]=asc',
        `sorting[fields.${t.text}]=-1`,
        'sorting[meta.createdAt]=DESC&sorting[meta.id]=1',
      ],
      invalid: [
        'sorting=x',
        'sorting[meta.id]=up',
        'sorting[meta.tags]=asc',
        `sorting[fields.${t.relation}]=asc`,
        'sorting[fields.extra]=asc',
        'sorting[__proto__]=asc',
        'sorting[meta.__proto__]=asc',
        'sorting[meta.id][]=asc',
        'sorting[meta.id][x]=1',
        'sorting[]=meta.id',
      ],
    },
    fields: {
      valid: ['fields=fields(title)', 'fields=meta/id', 'fields=*'],
      invalid: ['fields=', 'fields=(', 'fields=a)', 'fields[]=meta', 'fields[a]=b'],
    },
    search: { valid: ['search=apple', 'search=', 'search=a+b'], invalid: ['search[]=a', 'search[a]=b'] },
  };
}

export const jsonObject = (entries: [string, string][]): string =>
  `{${entries.map(([name, value]) => `${JSON.stringify(name)}:${value}`).join(',')}}`;
export const auth = (t: Target) => ({ authorization: t.key });

/** A GET of the raw target `path` with the target's key; an `error` must be a 400 unless `more` says otherwise. */
export const getCase = (t: Target, path: string, expected: Case['expect'], more: Partial<Case> = {}): Case => ({
  label: `GET ${path}`,
  path,
  headers: auth(t),
  expect: expected,
  ...(expected === 'error' ? { status: 400 } : {}),
  ...more,
});

/** A POST of `body` to `path` with the target's key, judged as `getCase` judges. */
export const postCase = (t: Target, path: string, body: string, expected: Case['expect'], more: Partial<Case> = {}) =>
  getCase(t, path, expected, { label: `POST ${path} ${body}`, method: 'POST', body, ...more });

// ---------------------------------------------------------------------------------------------
// Sending and judging.

let server: ReadApiServer;
let pool: Pool;
let sent = 0;

export async function send(c: Case, to: Pool = pool): Promise<Answer> {
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
export function problems(c: Case, answer: Answer): string[] {
  const out: string[] = [];
  const { status } = answer;
  if (status >= 500) return [`answered ${status}: ${answer.text.slice(0, 200)}`];
  if (c.expect === 'ok' && status !== 200) out.push(`expected 200, got ${status}: ${answer.text.slice(0, 200)}`);
  if (c.expect === 'error' && (status < 400 || status > 499)) out.push(`expected a 4xx, got ${status}`);
  if (c.status !== undefined && status !== c.status)
    out.push(`expected ${c.status}, got ${status}: ${answer.text.slice(0, 200)}`);
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
  if (!String(answer.headers['content-type']).startsWith('application/json'))
    out.push('an error that is not application/json');
  return out;
}

/** Sends the cases, eight at a time (to the in-process server unless told), and returns the failures, each with its label. */
export async function run(cases: Case[], to: Pool = pool): Promise<string[]> {
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
export function rawExchange(bytes: string | Buffer): Promise<{ status: number; headers: string; body: string }> {
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
export function normalRequests(t: Target): string[] {
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
export const baseline = new Map<string, string>();

/** The number of requests sent by this test file. */
export const sentCount = (): number => sent;

/** Starts the test file's server before its tests and stops it after them. */
export function useFuzzServer(): void {
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
}

export function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The server answers as before the fuzzing, having taken at least `minimum` requests. */
export function stillServesAsBefore(minimum: number): void {
  describe('after all of that, the server still serves correctly (§9)', () => {
    it(`sent at least ${minimum.toLocaleString('en')} requests`, () => {
      expect(sentCount()).toBeGreaterThanOrEqual(minimum);
    });

    it('answers every normal request exactly as before', async () => {
      for (const t of targets) {
        for (const path of normalRequests(t)) {
          const answer = await send({ label: path, path, headers: auth(t), expect: 'ok' });
          expect(answer.status, path).toBe(200);
          expect(answer.text, path).toBe(baseline.get(`${t.repo} ${path}`));
        }
      }
      const home = JSON.parse(
        (await send({ label: '', path: '/v1/tiny/alias/home?locale=de_DE', headers: auth(tiny), expect: 'ok' })).text,
      );
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
}
