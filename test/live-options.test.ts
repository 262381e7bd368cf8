import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import type { Filter, FilterEntry, IncludeMap, Includes, Sorting, SortingMap } from '../src/api/query.ts';
import type { RetryPolicy } from '../src/api/retry.ts';
import type { Timeouts } from '../src/api/transport.ts';
import {
  type ComfortableLiveLoaderOptions,
  comfortableLiveLoader,
  type LiveCollectionFilter,
  type LiveEntryFilter,
} from '../src/astro/index.ts';
import { optionsProblem } from '../src/astro/live-problem.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';

/**
 * The options of `comfortableLiveLoader()`: a wrong one is never thrown where `src/live.config.ts`
 * loads (that would fail every page with a 500) but returned by every request, and found by the
 * integration's check (test/live-check.test.ts runs it in a site); the repository comes from
 * `CMFT_REPOSITORY` when the option is not given. Against the local Read API on the demo
 * repository.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let server: ReadApiServer;
const requests: string[] = [];

beforeAll(async () => {
  server = await startServer({ paths: [demoSnapshot], watch: false, log: (line) => requests.push(line) });
});
afterAll(async () => {
  await server?.close();
});

const make = (options: Json) => comfortableLiveLoader({ repository: 'demo', apiKey: 'a-test-key-3f9c', ...options });
/** What a list and a lookup of the loader return, for the collection "posts". */
async function answers(options: Json): Promise<Json[]> {
  const loader = make(options);
  return [
    await loader.loadCollection({ filter: undefined, collection: 'posts' }),
    await loader.loadEntry({ filter: { id: 'en_US/1' }, collection: 'posts' }),
  ];
}

describe('a wrong option', () => {
  it('makes a loader rather than throwing, and every request returns the error naming it (code config)', async () => {
    const wrong: [Json, string][] = [
      [
        { contentType: 'post', colection: 'x' },
        'Unknown option colection of comfortableLiveLoader() in src/live.config.ts: did you mean collection?',
      ],
      [
        {},
        'Invalid options of comfortableLiveLoader() in src/live.config.ts: give exactly one of collection, contentType or aliases',
      ],
      [
        { collection: 'a', contentType: 'b' },
        'Invalid options of comfortableLiveLoader() in src/live.config.ts: give exactly one of collection, contentType or aliases',
      ],
      [
        { contentType: 'post', includes: 9 },
        'Invalid option includes of comfortableLiveLoader() in src/live.config.ts: ',
      ],
      [{ contentType: 'post', render: true }, 'Invalid option render of comfortableLiveLoader()'],
      [
        { contentType: 'post', concurrency: 65 },
        'Invalid option concurrency of comfortableLiveLoader() in src/live.config.ts: Too big: expected number to be <=64',
      ],
      [
        { contentType: 'post', baseUrl: 'ftp://x' },
        'Invalid option baseUrl of comfortableLiveLoader() in src/live.config.ts: expected an http(s) URL',
      ],
      [
        { contentType: 'post', fields: { title: 'string' } },
        'Invalid option fields of comfortableLiveLoader() in src/live.config.ts: expected a zod schema of the fields',
      ],
    ];
    for (const [options, message] of wrong) {
      for (const { error } of await answers(options)) {
        expect([error.name, error.code, error.status]).toEqual(['ComfortableLiveError', 'config', undefined]);
        expect(error.message).toContain(`Live collection "posts": ${message}`);
      }
    }
  });

  it('never holds the key, in the error or what the check is told', async () => {
    for (const options of [
      { apiKey: 12345678, contentType: 'post' },
      { apiKey: 'secret-key-6d1e', contentType: 'post', colection: 'x' },
    ]) {
      const [{ error }] = await answers(options);
      expect(error.message).not.toMatch(/12345678|secret-key-6d1e/);
      expect(optionsProblem(make(options), 'posts', 'src/live.config.ts')!.message).not.toMatch(
        /12345678|secret-key-6d1e/,
      );
    }
  });

  it('is what the check finds of the loader, named for its collection and file; a right one has none', () => {
    expect(optionsProblem(make({ contenType: 'post' }), 'posts', 'src/live.config.mjs')?.message).toBe(
      'Unknown option contenType of comfortableLiveLoader() for the live collection "posts" in src/live.config.mjs: did you mean contentType?',
    );
    expect(optionsProblem(make({ contentType: 'post' }), 'posts', 'src/live.config.ts')).toBeUndefined();
    expect(optionsProblem({ loadEntry() {}, loadCollection() {} }, 'posts', 'src/live.config.ts')).toBeUndefined();
  });
});

describe("the options' types, made from their schemas", () => {
  it('take a builder or its JSON, want the key written, and refuse a misspelt name', () => {
    type Options = ComfortableLiveLoaderOptions;
    expectTypeOf<Options['filters']>().toEqualTypeOf<Filter | FilterEntry[] | undefined>();
    expectTypeOf<Options['sorting']>().toEqualTypeOf<Sorting | SortingMap | undefined>();
    expectTypeOf<Options['includes']>().toEqualTypeOf<number | IncludeMap | Includes | undefined>();
    expectTypeOf<LiveCollectionFilter['filters']>().toEqualTypeOf<Options['filters']>();
    expectTypeOf<Options['timeouts']>().toEqualTypeOf<Partial<Timeouts> | undefined>();
    expectTypeOf<Options['retry']>().toEqualTypeOf<Partial<RetryPolicy> | undefined>();
    expectTypeOf<Options['apiKey']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<LiveEntryFilter>().toEqualTypeOf<
      | { id: string; locale?: string | undefined }
      | { field: string; value: string | number | boolean; locale?: string | undefined }
      | { alias: string; locale?: string | undefined }
    >();
    // @ts-expect-error the key is written even where it is unset: apiKey: getSecret('CMFT_API_KEY')
    comfortableLiveLoader({ contentType: 'post' });
    // @ts-expect-error a misspelt name, which astro check finds in a site without the integration
    comfortableLiveLoader({ apiKey: undefined, contenType: 'post' });
  });
});

describe('the repository', () => {
  const loader = (options: Partial<ComfortableLiveLoaderOptions>) =>
    comfortableLiveLoader({ baseUrl: server.url, apiKey: demoKey, contentType: 'post', ...options });
  const saved = process.env.CMFT_REPOSITORY;
  afterEach(() => {
    if (saved === undefined) delete process.env.CMFT_REPOSITORY;
    else process.env.CMFT_REPOSITORY = saved;
  });

  it('is CMFT_REPOSITORY without the option, read when the first request comes, not when the loader is made', async () => {
    delete process.env.CMFT_REPOSITORY;
    const posts = loader({});
    process.env.CMFT_REPOSITORY = 'demo';
    const { entries, cacheHint } = (await posts.loadCollection({ filter: { limit: 1 }, collection: 'posts' })) as Json;
    expect(entries.length).toBeGreaterThan(0);
    expect(cacheHint.tags).toEqual(['comfortable:demo', 'comfortable:demo:contentType:post']);
    expect(requests.at(-1)).toMatch(/ \/v1\/demo\//);
  });

  it('unset in both: each request returns an error naming the option and the variable, asking nothing', async () => {
    delete process.env.CMFT_REPOSITORY;
    const asked = requests.length;
    const { error } = (await loader({}).loadCollection({ filter: undefined, collection: 'posts' })) as Json;
    expect([error.code, error.message]).toEqual([
      'config',
      'Live collection "posts": the repository option of comfortableLiveLoader() is not set, and CMFT_REPOSITORY ' +
        'is not set where the server runs. Set CMFT_REPOSITORY to the API id of the repository (in .env for astro ' +
        "dev, in the environment of the built server), or give the option: repository: 'demo'.",
    ]);
    expect(requests.length).toBe(asked);
  });

  it('is the option when given, whatever CMFT_REPOSITORY says', async () => {
    process.env.CMFT_REPOSITORY = 'nonexistent';
    const { entries } = (await loader({ repository: 'demo' }).loadCollection({
      filter: { limit: 1 },
      collection: 'posts',
    })) as Json;
    expect(entries.length).toBe(3); // the first post, in each of the three locales of the repository "demo"
  });
});
