import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LiveCollectionError, LiveEntryNotFoundError } from 'astro/content/runtime';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { createClient } from '../src/api/client.ts';
import { Filter, Includes, Sorting } from '../src/api/query.ts';
import { sharedLimit } from '../src/api/transport.ts';
import {
  type ComfortableLiveLoader,
  type ComfortableLiveLoaderOptions,
  comfortableLiveLoader,
} from '../src/astro/index.ts';
import { andFilters } from '../src/api/query.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { entryOf, mapRelations } from '../src/entries/entries.ts';
import { sync } from '../src/sync/engine.ts';
import { closeFaultyServers, errorBody, fastRetry, json, startFaulty } from './helpers/client-faults.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';
import { startServer } from '../src/server/index.ts';

/**
 * The live loader called as Astro's runtime calls it (`loadEntry`, `loadCollection`), against the
 * local Read API on the demo repository: what it asks for, how it shapes entries, what it returns
 * when something is wrong. test/live.test.ts runs it inside a site.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const quiet = { info: () => {}, warn: () => {} };
let server: ReadApiServer;
const requests: string[] = [];

beforeAll(async () => {
  server = await startServer({ paths: [demoSnapshot], watch: false, log: (line) => requests.push(line) });
});
afterAll(async () => {
  await server?.close();
});

const loader = (options: Partial<ComfortableLiveLoaderOptions> = {}) =>
  comfortableLiveLoader({
    baseUrl: server.url,
    repository: 'demo',
    apiKey: demoKey,
    contentType: 'post',
    ...options,
  } as ComfortableLiveLoaderOptions);
const entry = (options: Partial<ComfortableLiveLoaderOptions>, filter: Json): Promise<Json> =>
  loader(options).loadEntry({ filter, collection: 'posts' });
const collection = (options: Partial<ComfortableLiveLoaderOptions>, filter?: Json): Promise<Json> =>
  loader(options).loadCollection({ filter, collection: 'posts' });

describe('entries are shaped as the build-time loader shapes them', () => {
  it('has the fields, fallbacks and meta of the synced entry, in every locale of every post', async () => {
    const cacheDir = await mkdtemp(join(tmpdir(), 'live-compare-'));
    try {
      const { cache } = await sync(
        {
          baseUrl: server.url,
          repository: 'demo',
          apiKey: demoKey,
          cacheDir,
          queries: { posts: { contentType: 'post' } },
        },
        quiet,
      );
      const { entries } = await collection({});
      expect(entries.length).toBe(cache.members('query:posts').length * 3);
      for (const live of entries) {
        const built = entryOf(
          cache.record(live.data.id)!,
          live.data.locale,
          cache.head.locales,
          (id) => cache.record(id),
          cache.head.model,
        );
        expect(live.id).toBe(`${built.locale}/${built.id}`);
        // Without contentTypes no collection holds a target: every relation is unresolved, as a build-time entry has it.
        const fields = mapRelations(built.fields, cache.head.model[built.contentType], (ref) => ({
          collection: null,
          ...ref,
        }));
        expect({ fields: live.data.fields, fallbacks: live.data.fallbacks, meta: live.data.meta }).toEqual({
          fields,
          fallbacks: built.fallbacks,
          meta: built.meta,
        });
      }
    } finally {
      await rm(cacheDir, { recursive: true, force: true });
    }
  });

  it('turns relations to mapped content types into references to live entries, in the entry locale', async () => {
    const found = await entry(
      { contentTypes: { post: 'posts', author: 'authors' } },
      { id: 'de_CH/100000000000000102' },
    );
    expect(found.data.fields.author).toEqual({ collection: 'authors', id: 'de_CH/100000000000000303' });
    expect(found.data.fields.relatedPosts[0]).toEqual({ collection: 'posts', id: 'de_CH/100000000000000103' });
    expect(found.data.fields.category).toEqual({ collection: null, id: '100000000000000201', contentType: 'category' });
    // What the includes reached comes along, by the id its reference carries.
    expect(found.data.included['de_CH/100000000000000303'].fields.name).toBe('Lena Vogt');
    expect(found.data.included['100000000000000201'].contentType).toBe('category');
  });

  it('renders the first richtext field with heading ids, and another or none on request', async () => {
    const found = await entry({}, { id: 'en_US/100000000000000102' });
    expect(found.rendered.html).toContain('<h2 id="what-has-changed">What has changed</h2>');
    expect(found.rendered.metadata.headings).toEqual([
      { depth: 2, slug: 'what-has-changed', text: 'What has changed' },
    ]);
    expect((await entry({ render: false }, { id: 'en_US/100000000000000102' })).rendered).toBeUndefined();
    expect((await entry({ render: 'excerpt' }, { id: 'en_US/100000000000000102' })).rendered).toBeUndefined(); // not richtext
  });

  it('gives cache tags of the document and of every record the answer brought with it, and the newest updatedAt', async () => {
    const found = await entry({}, { id: 'en_US/100000000000000102' });
    const client = createClient({ baseUrl: server.url, repository: 'demo', apiKey: demoKey });
    const answer = await client.document('100000000000000102', { locale: 'all', includes: 1, embedAssets: true });
    // Every record of the answer: the document, what it included, and the assets embedded in both.
    const stamps = new Map<string, string>();
    const walk = (value: Json): void => {
      if (Array.isArray(value)) value.forEach(walk);
      else if (value && typeof value === 'object') {
        if (value.meta?.updatedAt) stamps.set(value.meta.id, value.meta.updatedAt);
        Object.values(value).forEach(walk);
      }
    };
    walk(answer);
    expect(stamps.size).toBeGreaterThan(5);
    expect(new Set(found.cacheHint.tags)).toEqual(
      new Set(['comfortable:demo', ...[...stamps.keys()].map((id) => `comfortable:demo:${id}`)]),
    );
    expect(found.cacheHint.lastModified.toISOString()).toBe([...stamps.values()].sort().at(-1));
  });
});

describe('loadEntry', () => {
  it('finds a document by entry id, by id and locale, by a field value in a locale, and by alias', async () => {
    expect((await entry({}, { id: 'de_DE/100000000000000101' })).id).toBe('de_DE/100000000000000101');
    expect((await entry({}, { id: '100000000000000101', locale: 'de_CH' })).id).toBe('de_CH/100000000000000101');
    expect((await entry({}, { id: '100000000000000101' })).id).toBe('en_US/100000000000000101'); // the default locale
    expect((await entry({}, { field: 'slug', value: 'night-trains-are-back', locale: 'de_DE' })).id).toBe(
      'de_DE/100000000000000102',
    );
    // The field as a filter names it, and an entry id with the locale it is in.
    expect((await entry({}, { field: 'fields.slug', value: 'night-trains-are-back', locale: 'de_DE' })).id).toBe(
      'de_DE/100000000000000102',
    );
    expect((await entry({}, { id: 'de_DE/100000000000000101', locale: 'de_DE' })).id).toBe('de_DE/100000000000000101');
    const pages = { contentType: undefined, aliases: ['home', 'about'] };
    expect((await entry(pages, { alias: 'about', locale: 'de_DE' })).id).toBe('de_DE/100000000000000402');
    expect((await entry(pages, { id: 'en_US/100000000000000401' })).data.fields.slug).toBe('home');
    expect((await entry(pages, { field: 'slug', value: 'about' })).id).toBe('en_US/100000000000000402');
  });

  it('reads a field value in the locale asked for (the Read API applies the filter there)', async () => {
    const german = (await entry({}, { id: 'de_DE/100000000000000104' })).data.fields.title;
    expect((await entry({}, { field: 'title', value: german, locale: 'de_DE' })).id).toBe('de_DE/100000000000000104');
    expect((await entry({}, { field: 'title', value: german, locale: 'en_US' })).error).toBeInstanceOf(
      LiveEntryNotFoundError,
    );
  });

  it("answers Astro's not-found error, saying what was looked for where, for a document outside the source", async () => {
    const author = await entry({}, { id: 'en_US/100000000000000301' }); // an author, not a post
    expect(author.error).toBeInstanceOf(LiveEntryNotFoundError);
    expect(author.error.message).toBe(
      'Entry posts → document 100000000000000301 in en_US (among the documents of content type "post" of the repository "demo") was not found.',
    );
    expect((await entry({}, { alias: 'nope' })).error).toBeInstanceOf(LiveEntryNotFoundError);
    expect(
      (await entry({ contentType: undefined, collection: 'featuredPosts' }, { id: 'en_US/100000000000000103' })).error,
    ).toBeInstanceOf(LiveEntryNotFoundError);
    expect(
      (await entry({ contentType: undefined, collection: 'featuredPosts' }, { id: 'en_US/100000000000000102' })).id,
    ).toBe('en_US/100000000000000102');
    expect((await entry({ locales: ['en_US'] }, { id: 'de_DE/100000000000000102' })).error).toBeInstanceOf(
      LiveEntryNotFoundError,
    );
  });

  it('finds a document by id or alias only when the source holds it: its content type, and its list', async () => {
    const featured = { contentType: undefined, collection: 'featuredPosts' };
    const found: [Partial<ComfortableLiveLoaderOptions>, Json, boolean][] = [
      [{}, { alias: 'featuredPost' }, true], // a post
      [{}, { alias: 'home' }, false], // a page
      [{ filters: new Filter().where('featured', 'equal', false) }, { alias: 'featuredPost' }, false],
      [featured, { alias: 'featuredPost' }, true],
      [{ ...featured, includeTags: ['news'] }, { alias: 'featuredPost' }, false],
      [featured, { id: '100000000000000101' }, true],
      [{ ...featured, excludeTags: ['long-read'] }, { id: '100000000000000101' }, false],
      [{}, { id: '100000000000000101' }, true],
    ];
    for (const [options, filter, holds] of found) {
      const { id, error } = await entry(options, filter);
      expect([filter, holds ? id : error?.name]).toEqual([
        filter,
        holds ? expect.stringMatching(/^en_US\/10{14}1\d\d$/) : 'LiveEntryNotFoundError',
      ]);
    }
  });

  it('asks the repository endpoint for the locales once, not on every request', async () => {
    const live = loader({});
    requests.length = 0;
    for (let i = 0; i < 3; i++)
      await live.loadEntry({ filter: { id: 'en_US/100000000000000101' }, collection: 'posts' });
    expect(requests.filter((line) => line.startsWith('GET /v1/demo '))).toHaveLength(1);
    expect(requests.filter((line) => line.startsWith('GET /v1/demo/documents/100000000000000101'))).toHaveLength(3);
    // The requests went through the limit that every client of the server shares: another loader, with a concurrency
    // of its own, takes the same one, the first client's.
    const limit = sharedLimit(server.url);
    await loader({ concurrency: 2 }).loadEntry({ filter: { id: 'en_US/100000000000000101' }, collection: 'posts' });
    expect(limit?.concurrency).toBe(8);
    expect(sharedLimit(server.url)).toBe(limit);
  });
});

describe('loadCollection', () => {
  it('filters and sorts in the locale asked for, with Filter and Sorting builders or their JSON, as the client does', async () => {
    const filters = new Filter().where('readingMinutes', 'greaterThanEqual', 10).or('featured', 'equal', true);
    const sorting = new Sorting().asc('title');
    const { entries } = await collection({}, { locale: 'de_DE', filters, sorting, limit: 6 });
    const client = createClient({ baseUrl: server.url, repository: 'demo', apiKey: demoKey });
    const expected = await client.documents({
      locale: 'de_DE',
      filters: andFilters([{ '*.meta.contentType': { equal: 'post' } }], filters.toJSON()),
      sorting,
      limit: 6,
    });
    expect(entries.map((e: Json) => e.id)).toEqual(expected.data.map((d) => `de_DE/${d.meta.id}`));
    expect(entries.map((e: Json) => e.data.fields.title)).toEqual(expected.data.map((d) => d.fields.title));
    const json = await collection(
      {},
      { locale: 'de_DE', filters: filters.toJSON(), sorting: sorting.toJSON(), limit: 6 },
    );
    expect(json.entries.map((e: Json) => e.id)).toEqual(entries.map((e: Json) => e.id));
    // An Includes builder too, as the loader's option or the filter's, or its JSON: the author alone.
    const included = async (options: Partial<ComfortableLiveLoaderOptions>, filter: Json) =>
      Object.values((await collection(options, { locale: 'de_DE', limit: 1, ...filter })).entries[0].data.included);
    const ways: [Partial<ComfortableLiveLoaderOptions>, Json][] = [
      [{ includes: new Includes().add('author') }, {}],
      [{}, { includes: new Includes().add('author') }],
      [{}, { includes: { '*.fields.author': 1 } }],
    ];
    for (const [options, filter] of ways)
      expect((await included(options, filter)).map((record: Json) => record.contentType)).toEqual(['author']);
  });

  it("restricts a repository collection by the loader's filters and tags, and pages it", async () => {
    const options = {
      contentType: undefined,
      collection: 'posts',
      filters: new Filter().where('featured', 'equal', true),
      excludeTags: ['archive'],
    };
    const all = (await collection(options, { locale: 'en_US' })).entries.map((e: Json) => e.id);
    const client = createClient({ baseUrl: server.url, repository: 'demo', apiKey: demoKey });
    const expected = await client.collection('posts', {
      locale: 'en_US',
      filters: [{ '*.fields.featured': { equal: true } }],
      excludeTags: ['archive'],
      limit: 100,
    });
    expect(all).toEqual(expected.data.map((d) => `en_US/${d.meta.id}`));
    const second = (await collection(options, { locale: 'en_US', limit: 2, page: 2 })).entries.map((e: Json) => e.id);
    expect(second).toEqual(all.slice(2, 4));
  });

  it("tags a list with its source's tags, and a missing entry names the source, for each kind of source", async () => {
    const sources: [Partial<ComfortableLiveLoaderOptions>, string[], string][] = [
      [{}, ['contentType:post'], 'content type "post"'],
      [
        { contentType: undefined, collection: 'featuredPosts' },
        ['collection:featuredPosts'],
        'the collection "featuredPosts"',
      ],
      [
        { contentType: undefined, aliases: ['home', 'about'] },
        ['alias:home', 'alias:about'],
        'the aliases "home", "about"',
      ],
    ];
    for (const [options, tags, among] of sources) {
      const { cacheHint } = await collection(options, { limit: 1 });
      expect(cacheHint.tags).toEqual(['comfortable:demo', ...tags.map((tag) => `comfortable:demo:${tag}`)]);
      expect((await entry(options, { id: 'en_US/100000000000000999' })).error.message).toBe(
        `Entry posts → document 100000000000000999 in en_US (among the documents of ${among} of the repository "demo") was not found.`,
      );
    }
  });

  it("gives every locale of the loader without a locale, with the source's cache tag on the list", async () => {
    const result = await collection({ locales: ['en_US', 'de_CH'] }, { limit: 2 });
    expect(result.entries.map((e: Json) => e.data.locale)).toEqual(['en_US', 'de_CH', 'en_US', 'de_CH']);
    expect(result.cacheHint.tags).toEqual(['comfortable:demo', 'comfortable:demo:contentType:post']);
  });
});

describe('failures are returned as live-collection errors that say what to check, without the key', () => {
  const secret = 'not-the-key-5f2b9c1e8a7d';
  const failure = async (
    options: Partial<ComfortableLiveLoaderOptions>,
    filter?: Json,
    by: 'entry' | 'collection' = 'collection',
  ) => {
    const result = by === 'entry' ? await entry(options, filter) : await collection(options, filter);
    expect(result.error).toBeInstanceOf(LiveCollectionError);
    expect(`${result.error.message}\n${result.error.stack}\n${JSON.stringify(result.error)}`).not.toContain(secret);
    return result.error;
  };

  it('names the option to check', async () => {
    const refused = await failure({ apiKey: secret });
    expect([refused.name, refused.code, refused.status]).toEqual(['ComfortableLiveError', 'authentication', 401]);
    expect(refused.message).toMatch(
      /answered 401: Invalid authentication credentials\. Check the apiKey option of comfortableLiveLoader\(\)/,
    );
    expect((await failure({ apiKey: undefined })).message).toMatch(
      /the apiKey option of comfortableLiveLoader\(\) is not set/,
    );
    expect((await failure({ repository: 'nope' })).message).toMatch(
      /Check the repository option of comfortableLiveLoader\(\) in src\/live.config.ts \("nope"\)/,
    );
    expect((await failure({ contentType: undefined, collection: 'nope' })).message).toMatch(
      /has no collection "nope": check the collection option/,
    );
    expect((await failure({ contentType: undefined, aliases: ['home', 'nope'] })).message).toMatch(
      /has no alias "nope": check the aliases option/,
    );
    const down = await failure({ baseUrl: 'http://127.0.0.1:1/v1', retry: { attempts: 1 } });
    expect([down.code, down.message]).toEqual([
      'network',
      expect.stringMatching(/Check the baseUrl option .*\(http:\/\/127.0.0.1:1\/v1\)/),
    ]);
    expect(down.message).not.toContain('CMFT_SNAPSHOT');
    const failing = await startFaulty((_, response) => json(response, 503, errorBody(503, 'Service Unavailable')));
    try {
      const refused = await failure({ baseUrl: failing.url, retry: fastRetry });
      expect([refused.code, refused.message]).toEqual([
        'server',
        expect.stringMatching(
          /kept failing through every retry \(the retry option of comfortableLiveLoader\(\) in src\/live.config.ts\)/,
        ),
      ]);
    } finally {
      await closeFaultyServers();
    }
  });

  it('tells a user on a copy (CMFT_SNAPSHOT) that live collections ask the CMS, not the copy', async () => {
    process.env.CMFT_SNAPSHOT = 'content/demo.json';
    try {
      const down = await failure({ baseUrl: 'http://127.0.0.1:1/v1', retry: { attempts: 1 } });
      expect(down.message).toContain(
        'CMFT_SNAPSHOT is set, but live collections do not serve a copy: they ask the baseUrl they are given. To use the copy, serve it with npx comfortable-loader serve content/demo.json and point baseUrl and apiKey at it',
      );
    } finally {
      delete process.env.CMFT_SNAPSHOT;
    }
  });

  it('names the member of a filter that is wrong', async () => {
    expect((await failure({}, { limit: 5000 })).message).toMatch(
      /^Live collection "posts": Invalid filter of getLiveCollection\(\): limit: /,
    );
    expect((await failure({}, { page: 2 })).message).toMatch(/page needs a limit/);
    expect((await failure({}, { slug: 'x' }, 'entry')).message).toMatch(/Invalid filter of getLiveEntry\(\)/);
    expect((await failure({}, { id: 'de_DE/100000000000000101', locale: 'en_US' }, 'entry')).message).toBe(
      'Live collection "posts": Invalid filter of getLiveEntry(): the id "de_DE/100000000000000101" is in de_DE, the ' +
        'locale option says en_US; give one of them',
    );
    expect((await failure({ locales: ['fr_FR'] })).message).toMatch(
      /the locales option of comfortableLiveLoader\(\) names "fr_FR"/,
    );
  });
});

describe('a locale the repository or the loader lacks is a page that does not exist', () => {
  const notFound = async (result: Promise<Json>) => {
    const { error } = await result;
    expect(error).toBeInstanceOf(LiveEntryNotFoundError);
    return error.message as string;
  };

  it("answers Astro's not-found error for an entry, naming the locale and what the repository has", async () => {
    const message = await notFound(entry({}, { field: 'slug', value: 'night-trains-are-back', locale: 'fr_FR' }));
    expect(message).toBe(
      'Entry posts → slug "night-trains-are-back" in fr_FR (the repository "demo" has no locale "fr_FR", only en_US, de_DE, de_CH: check the locale given to getLiveEntry()) was not found.',
    );
    await notFound(entry({}, { id: 'fr_FR/100000000000000101' }));
    expect(await notFound(entry({ locales: ['en_US'] }, { id: 'de_DE/100000000000000101' }))).toMatch(
      /de_DE is not one of the locales option of comfortableLiveLoader\(\) in src\/live.config.ts: en_US\)/,
    );
  });

  it('answers the same error for a list, rather than an empty list a page could not tell from no posts', async () => {
    expect(await notFound(collection({}, { locale: 'fr_FR' }))).toMatch(
      /^Entry posts → entries in fr_FR \(the repository "demo" has no locale "fr_FR", only en_US, de_DE, de_CH: check the locale given to getLiveCollection\(\)\)/,
    );
    expect(await notFound(collection({ locales: ['en_US'] }, { locale: 'de_DE', limit: 1 }))).toMatch(
      /the locales option of comfortableLiveLoader\(\)/,
    );
    // A locale option that names a locale the repository lacks is still a broken config.
    expect((await collection({ locales: ['fr_FR'] }, { locale: 'en_US' })).error.code).toBe('config');
  });
});

describe('the fields option', () => {
  const postFields = z.object({ title: z.string(), slug: z.string(), readingMinutes: z.coerce.string() });

  it('types the fields and gives them as the schema outputs them, the rest of the entry as it was', async () => {
    const typed = loader({ fields: postFields }) as unknown as ComfortableLiveLoader<z.output<typeof postFields>>;
    const found = await typed.loadEntry({ filter: { id: 'en_US/100000000000000102' }, collection: 'posts' });
    if (!found || 'error' in found) throw new Error('expected an entry');
    expectTypeOf(found.data.fields.title).toEqualTypeOf<string>();
    expect(found.data.fields).toEqual({
      title: 'Night Trains Are Back, and Better Than You Remember',
      slug: 'night-trains-are-back',
      readingMinutes: expect.any(String),
    });
    expect(Object.keys(found.data.included).length).toBeGreaterThan(0);
    expect(found.rendered?.html).toContain('<h2 id="what-has-changed">');
    expect(
      (await collection({ fields: postFields }, { locale: 'de_DE', limit: 2 })).entries.map((e: Json) =>
        Object.keys(e.data.fields),
      ),
    ).toEqual([
      ['title', 'slug', 'readingMinutes'],
      ['title', 'slug', 'readingMinutes'],
    ]);
  });

  it('infers the type of the fields from the schema', () => {
    const live = comfortableLiveLoader({ repository: 'demo', apiKey: 'k', contentType: 'post', fields: postFields });
    expectTypeOf(live).toEqualTypeOf<ComfortableLiveLoader<{ title: string; slug: string; readingMinutes: string }>>();
  });

  it('returns an error naming the option, the entry and the field for an entry that does not match', async () => {
    const wrong = z.object({ title: z.number(), slug: z.string() });
    const { error } = await entry({ fields: wrong }, { id: 'en_US/100000000000000102' });
    expect([error.name, error.code]).toEqual(['ComfortableLiveError', 'validation']);
    expect(error.message).toBe(
      'Live collection "posts": entry en_US/100000000000000102 does not match the fields option of comfortableLiveLoader() in src/live.config.ts: fields.title: Invalid input: expected number, received string. Change the schema to what the content type holds (a field that may be empty needs .nullish()).',
    );
    expect((await collection({ fields: wrong }, { limit: 1 })).error.code).toBe('validation');
  });
});

describe('andFilters', () => {
  const a = { '*.fields.a': { equal: 1 } };
  const b = { '*.fields.b': { equal: 2 } };
  const c = { '*.fields.c': { equal: 3 } };
  it('joins two lists with AND, distributing over their OR branches', () => {
    expect(andFilters([a], [b])).toEqual([a, { and: b }]);
    expect(andFilters([a, { or: b }], [c])).toEqual([a, { and: c }, { or: b }, { and: c }]);
    expect(andFilters(undefined, [], [a, { and: b }])).toEqual([a, { and: b }]);
  });
});
