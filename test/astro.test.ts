import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as devalue from 'devalue';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeAllPools } from '../src/api/transport.ts';
import { comfortable } from '../src/astro/index.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { copyFixture, run, runAstro } from './helpers/astro.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

/**
 * The Astro integration and content loaders, built for real: `astro build` of the fixture site
 * in test/fixtures/astro-site against the local Read API on the tiny snapshot. The site's
 * `data.json` endpoint shows what pages see (every collection, and relations resolved with
 * `getEntry`); the loaders' log lines show what each build parsed.
 */

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

let server: ReadApiServer;
let requests: string[];
let site: { dir: string; remove(): Promise<void> };
const tiny = JSON.parse(await readFile(fixture('tiny.json'), 'utf8')) as Json;

beforeAll(async () => {
  requests = [];
  server = await startTiny({ log: (line) => (/^[A-Z]+ \//.test(line) ? requests.push(line) : undefined) });
  site = await copyFixture('astro-site', 'astro-test');
});

afterAll(async () => {
  await server?.close();
  await closeAllPools();
  await site?.remove();
});

const env = (extra: Record<string, string> = {}) => ({
  CMFT_BASE_URL: server.url,
  CMFT_API_KEY: tinyKey,
  FIXTURE_REPORT: join(site.dir, 'resolved-config.json'),
  ...extra,
});

/** `astro build`; fails the test with the output when the build fails. */
async function build(extra: Record<string, string> = {}): Promise<{ output: string; data: Json }> {
  const { code, output } = await runAstro(site.dir, ['build'], env(extra));
  expect(code, output).toBe(0);
  return { output, data: JSON.parse(await readFile(join(site.dir, 'dist/data.json'), 'utf8')) };
}

/** The counts a loader logged: "4 documents × 3 locales: 12 added, 0 updated, 0 removed, 0 unchanged". */
function report(output: string, loader: string) {
  const lines = [
    ...output.matchAll(
      new RegExp(
        `\\[${loader}\\] (\\d+) documents? × (\\d+) locales?: (\\d+) added, (\\d+) updated, (\\d+) removed, (\\d+) unchanged`,
        'g',
      ),
    ),
  ];
  expect(lines, `one report of ${loader} in:\n${output}`).toHaveLength(1);
  const [documents, locales, added, updated, removed, unchanged] = lines[0]!.slice(1).map(Number);
  return { documents, locales, added, updated, removed, unchanged };
}

const byId = (entries: Json[]) => Object.fromEntries(entries.map((e) => [e.id, e]));
const ids = (entries: Json[]) => entries.map((e) => e.id).sort();

describe('integration options are checked when the config loads', () => {
  it('a bad option fails the build, naming the option and what is allowed, before any request', async () => {
    const { code, output } = await runAstro(
      site.dir,
      ['build'],
      env({ FIXTURE_OPTIONS: JSON.stringify({ mode: 'sometimes' }) }),
    );
    expect(code).not.toBe(0);
    expect(output).toContain('Invalid option comfortable.mode: expected one of "incremental", "fresh", "offline"');
    expect(output).not.toContain(tinyKey);
    expect(requests).toEqual([]);
  });

  it('names nested and integration-only options too', () => {
    const base = { baseUrl: 'http://127.0.0.1:9/v1', repository: 'tiny', apiKey: tinyKey };
    expect(() => comfortable({ ...base, refreshSecret: 'short' })).toThrow(
      'Invalid option comfortable.refreshSecret: expected a secret of at least 16 characters',
    );
    expect(() => comfortable({ ...base, collections: { news: { includes: 9 } } })).toThrow(
      /^Invalid option comfortable\.collections\.news\.includes: /,
    );
    expect(() => comfortable({ ...base, contentTypes: { news: '' } })).toThrow(
      /^Invalid option comfortable\.contentTypes\.news: /,
    );
    expect(() => comfortable({ ...base, colections: {} } as never)).toThrow(
      'Unknown option comfortable.colections: did you mean comfortable.collections?',
    );
    expect(() => comfortable({ ...base, baseUrl: 'ftp://example.com' })).toThrow(
      'Invalid option comfortable.baseUrl: expected an http(s) URL',
    );
  });
});

describe('a build', () => {
  let output: string;
  let data: Json;
  let news: Record<string, Json>;

  beforeAll(async () => {
    requests.length = 0;
    ({ output, data } = await build());
    news = byId(data.news);
  }, 120_000);

  it('runs one sync that every loader of the Astro sync shares', () => {
    expect(output.match(/Synced tiny: /g)).toHaveLength(1);
    expect(requests.filter((line) => line.startsWith('GET /v1/tiny '))).toHaveLength(1);
    expect(report(output, 'comfortable:collection:news')).toMatchObject({
      documents: 4,
      locales: 3,
      added: 12,
      updated: 0,
    });
    expect(report(output, 'comfortable:query:type:author')).toMatchObject({
      documents: 2,
      locales: 3,
      added: 6,
      updated: 0,
    });
    expect(report(output, 'comfortable:alias:home')).toMatchObject({ documents: 1, locales: 3, added: 3, updated: 0 });
  });

  it('has an entry per document and locale, with the id <locale>/<document id>', () => {
    expect(ids(data.news)).toEqual([
      'de_CH/100',
      'de_CH/101',
      'de_CH/102',
      'de_CH/103',
      'de_DE/100',
      'de_DE/101',
      'de_DE/102',
      'de_DE/103',
      'en_US/100',
      'en_US/101',
      'en_US/102',
      'en_US/103',
    ]);
    expect(news['de_DE/101'].data).toMatchObject({ id: '101', locale: 'de_DE', contentType: 'news' });
  });

  it('applies the locale fallback and marks which values are not the locale’s own', () => {
    expect(news['de_DE/100'].data.fields.title).toBe('Apfelernte');
    expect(news['de_DE/100'].data.fallbacks.title).toBeUndefined(); // its own value
    expect(news['de_CH/100'].data.fields.title).toBe('Apfelernte');
    expect(news['de_CH/100'].data.fallbacks).toMatchObject({ title: 'de_DE', text: 'en_US' });
    expect(news['de_CH/101'].data.fields.title).toBe('Bananenschiffe');
    expect(news['de_CH/101'].data.fallbacks.title).toBeUndefined();
    // News 102 has no text in any locale: it is marked null.
    expect(news['en_US/102'].data.fallbacks).toEqual({ text: null });
  });

  it('turns relations into references to the collection of the target content type, which getEntry resolves', () => {
    const apples = news['en_US/100'].data.fields;
    // authors use their own entryId (a slug of the name), and references to them follow it
    expect(apples.author).toEqual({ collection: 'authors', id: 'en_US/ada' });
    expect(apples.relatedNews[0]).toEqual({ collection: 'news', id: 'en_US/101' });
    expect(byId(data.authors)['de_DE/ada'].data.fields.favourite).toEqual({ collection: 'news', id: 'de_DE/100' });
    expect(data.authorNames).toMatchObject({ 'en_US/100': 'Ada', 'de_CH/101': 'Bob', 'de_DE/102': 'Ada' });
  });

  it('reports a reference to nothing once in a build (news 100 is in two collections) and keeps building', () => {
    expect(news['en_US/100'].data.fields.relatedNews[1]).toEqual({ collection: null, id: '999', contentType: 'news' });
    // The sync's warning says it; the loaders do not say it again.
    expect(output.split('] Dangling reference: document 100, field relatedNews points to 999')).toHaveLength(2);
    expect(output).not.toContain('Reference from document 100, field relatedNews');
  });

  it('turns assets into image objects and allows the asset host in image.remotePatterns', async () => {
    expect(news['de_DE/100'].data.fields.images).toEqual([
      {
        kind: 'image',
        id: '300',
        src: `${server.origin}/files/tiny/images/apples.svg`,
        width: 100,
        height: 80,
        alt: 'A basket',
        mimeType: 'image/svg+xml',
        fileName: 'apples.svg',
      },
    ]);
    const resolved = JSON.parse(await readFile(join(site.dir, 'resolved-config.json'), 'utf8'));
    expect(resolved.image.remotePatterns).toContainEqual({
      protocol: 'http',
      hostname: '127.0.0.1',
      port: String(server.port),
    });
  });

  it('creates a schema and an Entry type for each collection (createSchema)', async () => {
    const types = await readFile(join(site.dir, '.astro/loaders/news.ts'), 'utf8');
    expect(types).toContain('export type Entry = {');
    expect(types).toContain('"contentType": "news";');
    for (const field of ['title', 'text', 'rating', 'author', 'relatedNews', 'images', 'place'])
      expect(types).toContain(`"${field}"?:`);
    expect(types).toContain('"cacheKey": string;');
    expect(types).not.toContain('dependencyDigest');
    expect(types).toMatch(
      /"author"\?: \(\{\s*"collection": "authors";\s*"id": string;\s*\}\) \| \(\{\s*"collection": null;\s*"id": string;\s*"contentType": string;\s*\}\) \| null;/,
    );
    expect(await readFile(join(site.dir, '.astro/loaders/authors.ts'), 'utf8')).toMatch(
      /"favourite"\?:[\s\S]*"avatar"\?:|"avatar"\?:[\s\S]*"favourite"\?:/,
    );
    expect(await readFile(join(site.dir, '.astro/content.d.ts'), 'utf8')).toContain(
      'import("./loaders/news.js").Entry',
    );
    // the schema ran: the entry's content type is the literal it allows
    expect(new Set(data.news.map((e: Json) => e.data.contentType))).toEqual(new Set(['news']));
  });

  it('gives pages types in which getEntry(reference) is an entry of the target collection (tsc)', async () => {
    // src/pages/data.json.ts reads `(await getEntry(entry.data.fields.author))?.data.fields.name`
    const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));
    const { code, output } = await run(process.execPath, [tsc, '--noEmit', '-p', join(site.dir, 'tsconfig.json')]);
    expect(output).toBe('');
    expect(code).toBe(0);
  }, 60_000);

  it('names the synced aliases that point to each document, so a page can route by them', () => {
    for (const entry of data.home) expect(entry.data.aliases).toEqual(['home']);
    // The alias home points to news 100, which the news collection holds too.
    for (const entry of data.news) expect(entry.data.aliases).toEqual(entry.data.id === '100' ? ['home'] : []);
    for (const entry of data.authors) expect(entry.data.aliases).toEqual([]);
  });

  it('gives every entry the cacheKey of a page that shows it, the same in every locale of a document', () => {
    const keys = new Map<string, Set<string>>();
    for (const entry of [...data.news, ...data.authors])
      keys.set(entry.data.id, (keys.get(entry.data.id) ?? new Set()).add(entry.data.cacheKey));
    for (const [, set] of keys) expect([...set]).toEqual([expect.stringMatching(/^[\w-]{22}$/)]);
    expect(new Set([...keys.values()].map((set) => [...set][0])).size).toBe(keys.size);
  });

  it('lets a user schema replace the created one', async () => {
    const home = byId(data.home);
    expect(ids(data.home)).toEqual(['de_CH/100', 'de_DE/100', 'en_US/100']);
    expect(home['en_US/100'].data.fields).toEqual({ title: 'APPLE HARVEST' }); // transformed, other fields stripped
    expect(home['de_DE/100'].data.fields).toEqual({ title: 'APFELERNTE' });
    const content = await readFile(join(site.dir, '.astro/content.d.ts'), 'utf8');
    expect(content).toContain('InferEntrySchema<"home">');
    expect(content).not.toContain('loaders/home.js');
  });
});

describe('the next builds', () => {
  let first: Json;

  beforeAll(async () => {
    first = JSON.parse(await readFile(join(site.dir, 'dist/data.json'), 'utf8'));
  });

  it('parse nothing when nothing changed', async () => {
    const { output, data } = await build();
    expect(output).toMatch(/Synced tiny: 8 records \(0 added, 0 updated, 0 removed\)/);
    expect(report(output, 'comfortable:collection:news')).toEqual({
      documents: 4,
      locales: 3,
      added: 0,
      updated: 0,
      removed: 0,
      unchanged: 12,
    });
    expect(report(output, 'comfortable:query:type:author')).toMatchObject({ updated: 0, removed: 0, unchanged: 6 });
    expect(report(output, 'comfortable:alias:home')).toMatchObject({ updated: 0, removed: 0, unchanged: 3 });
    expect(data).toEqual(first);
  }, 120_000);

  it('drop deleted documents, and a changed author changes the cacheKey of the news that show it, not their digest', async () => {
    const edited = structuredClone(tiny);
    edited.documents = edited.documents.filter((d: Json) => d.meta.id !== '103');
    const ada = edited.documents.find((d: Json) => d.meta.id === '200');
    ada.fields.name = 'Ada Lovelace';
    ada.meta.updatedAt = '2025-01-01T00:00:00.000Z';
    await server.replaceSnapshot(edited);

    const { output, data } = await build();
    const before = byId(first.news);
    const after = byId(data.news);
    expect(ids(data.news)).toEqual(ids(first.news).filter((id) => !id.endsWith('/103')));
    expect(report(output, 'comfortable:collection:news')).toMatchObject({ documents: 3, removed: 3 });

    // news 100 shows Ada: same document, new dependency
    expect(after['en_US/100'].data.digest).toBe(before['en_US/100'].data.digest);
    expect(after['en_US/100'].data.cacheKey).not.toBe(before['en_US/100'].data.cacheKey);
    // Bob's news: its page shows its related news 102, by Ada: a new key, the same document
    expect(after['en_US/101'].data.cacheKey).not.toBe(before['en_US/101'].data.cacheKey);
    expect(after['en_US/101'].data.digest).toBe(before['en_US/101'].data.digest);
    expect(after['en_US/100'].data.fields.author).toEqual({ collection: 'authors', id: 'en_US/ada-lovelace' });
    expect(data.authorNames['en_US/100']).toBe('Ada Lovelace');
    expect(ids(data.authors)).toEqual([
      'de_CH/ada-lovelace',
      'de_CH/bob',
      'de_DE/ada-lovelace',
      'de_DE/bob',
      'en_US/ada-lovelace',
      'en_US/bob',
    ]);
  }, 120_000);

  // Every loader starts clean, not only the one whose option changed (a behaviour changed on
  // purpose): references take their target collection's ids and locales, so an option of one
  // loader changes the entries of the others (here the authors' references into news in de_CH).
  it('start clean in every collection when a loader option changes', async () => {
    const { output, data } = await build({ FIXTURE_LOCALES: 'en_US,de_DE' });
    expect(report(output, 'comfortable:collection:news')).toEqual({
      documents: 3,
      locales: 2,
      added: 0,
      updated: 6,
      removed: 0,
      unchanged: 0,
    });
    expect(report(output, 'comfortable:query:type:author')).toMatchObject({ updated: 6, unchanged: 0 });
    expect(ids(data.news)).toEqual(['de_DE/100', 'de_DE/101', 'de_DE/102', 'en_US/100', 'en_US/101', 'en_US/102']);
    const authors = byId(data.authors);
    expect(authors['de_DE/ada-lovelace'].data.fields.favourite).toEqual({ collection: 'news', id: 'de_DE/100' });
    expect(authors['de_CH/ada-lovelace'].data.fields.favourite).toEqual({
      collection: null,
      id: '100',
      contentType: 'news',
    });
    expect(output).toMatch(
      /the collection "news", to which contentTypes maps "news", has no entries in de_CH \(the locales option of its comfortableLoader\(\)\)/,
    );
  }, 120_000);

  it('start clean when the store was written by another version of the package', async () => {
    // What an upgrade leaves behind: the authors' fingerprint in the data store is not this version's.
    const storeFile = join(site.dir, 'node_modules/.astro/data-store.json');
    const store = devalue.parse(await readFile(storeFile, 'utf8')) as Map<string, Map<string, unknown>>;
    store.get('meta:authors')!.set('fingerprint', 'written-by-comfortable-loader-0.0.1');
    await writeFile(storeFile, devalue.stringify(store));

    const { output } = await build({ FIXTURE_LOCALES: 'en_US,de_DE' });
    expect(report(output, 'comfortable:query:type:author')).toEqual({
      documents: 2,
      locales: 3,
      added: 0,
      updated: 6,
      removed: 0,
      unchanged: 0,
    });
    expect(report(output, 'comfortable:collection:news')).toMatchObject({ updated: 0, unchanged: 6 });
  }, 120_000);
});

describe('an edited schema module', () => {
  const titleModule = () => join(site.dir, 'src/schemas/title.ts');

  it('makes the next build validate every entry again, through a relative import and a tsconfig alias', async () => {
    const original = await readFile(titleModule(), 'utf8');
    try {
      // src/content.config.ts imports ./schemas/home.ts, which imports @schemas/title: Astro hashes neither.
      await writeFile(titleModule(), original.replace('toUpperCase', 'toLowerCase'));
      const lower = await build();
      expect(report(lower.output, 'comfortable:alias:home')).toMatchObject({ updated: 3, unchanged: 0 });
      expect(byId(lower.data.home)['en_US/100'].data.fields).toEqual({ title: 'apple harvest' });

      await writeFile(titleModule(), "import { z } from 'astro/zod';\n\nexport const title = z.number();\n");
      const { code, output } = await runAstro(site.dir, ['build'], env());
      expect(code).not.toBe(0);
      expect(output).toMatch(
        /home → en_US\/100 data does not match collection schema|\*\*title\*\*: Invalid input: expected number/,
      );
    } finally {
      await writeFile(titleModule(), original);
    }
    const restored = await build();
    expect(byId(restored.data.home)['en_US/100'].data.fields).toEqual({ title: 'APPLE HARVEST' });
    // Once the schemas are as they were, nothing is validated again.
    expect(report((await build()).output, 'comfortable:alias:home')).toMatchObject({ updated: 0, unchanged: 3 });
  }, 180_000);
});

describe('contentTypes mapping a type to a collection that holds only some of its documents', () => {
  it('warns once with what to do, and keeps references to the others out of Astro (no invalid reference)', async () => {
    const { output, data } = await build({
      FIXTURE_OPTIONS: JSON.stringify({ contentTypes: { news: 'home', author: 'authors' } }),
    });
    // The alias home holds news 100 alone.
    expect(output).toMatch(
      /contentTypes maps "news" to the collection "home", which holds 1 of the \d+ synced "news" documents: references to the other \d+ stay \{ collection: null, id, contentType \}/,
    );
    expect(output).toContain("map it to a collection loaded with comfortableLoader({ contentType: 'news' })");
    expect(output).not.toContain('Invalid content reference');
    const related = data.news.flatMap((entry: Json) => entry.data.fields.relatedNews ?? []);
    const into = related.filter((ref: Json) => ref.collection !== null);
    const kept = related.filter((ref: Json) => ref.collection === null);
    expect(into.length).toBeGreaterThan(0);
    expect(kept.length).toBeGreaterThan(0);
    for (const ref of into) expect(ref).toEqual({ collection: 'home', id: expect.stringMatching(/\/100$/) });
    for (const ref of kept)
      expect(ref).toEqual({ collection: null, id: expect.not.stringMatching(/^100$/), contentType: 'news' });
    // One line for the cause, in each collection whose entries hold such references, with the number of places.
    const lines = output
      .split('\n')
      .filter((line) =>
        line.includes('the collection "home", to which contentTypes maps "news", does not hold their documents'),
      );
    expect(lines.length).toBeGreaterThan(0);
    expect(new Set(lines.map((line) => /\[([^\]]+)\] \d+ reference/.exec(line)?.[1])).size).toBe(lines.length);
    for (const line of lines)
      expect(line).toMatch(
        /\] \d+ references? stays? \{ collection: null, id, contentType \}: .*\(document \d+, field \w+ → \d+/,
      );
  }, 120_000);

  it('counts each type mapped to the collection apart, whatever their order in contentTypes', async () => {
    // home holds news 100 and no author; author is mapped first, so it is counted first. (How many news
    // are synced depends on the tests before.)
    const { output } = await build({
      FIXTURE_OPTIONS: JSON.stringify({ contentTypes: { author: 'home', news: 'home' } }),
    });
    expect(output).toMatch(
      /contentTypes maps "author" to the collection "home", which holds 0 of the \d+ synced "author"/,
    );
    expect(output).toMatch(/contentTypes maps "news" to the collection "home", which holds 1 of the \d+ synced "news"/);
  }, 120_000);

  it('tells the references into a content type no collection holds in one line per collection, with their number', async () => {
    const { output, data } = await build({ FIXTURE_OPTIONS: JSON.stringify({ contentTypes: { news: 'news' } }) });
    const lines = output.split('\n').filter((line) => line.includes('no collection holds the content type "author"'));
    // In news, 100 and 102 name author 200 and 101 names 201: three places, each counted once whatever the locales;
    // the alias home holds 100 too.
    expect(lines, output).toHaveLength(2);
    const news = lines.find((line) => line.includes('[comfortable:collection:news]'))!;
    expect(news).toContain('[comfortable:collection:news] 3 references stay { collection: null, id, contentType }');
    expect(news).toContain("map it with the integration's contentTypes option");
    expect(news).toMatch(
      /\(document 10\d, field author → 20\d, document 10\d, field author → 20\d, document 10\d, field author → 20\d\)$/,
    );
    expect(lines.find((line) => line.includes('[comfortable:alias:home]'))).toMatch(
      /\] 1 reference stays .*\(document 100, field author → 200\)$/,
    );
    expect(byId(data.news)['en_US/100'].data.fields.author).toEqual({
      collection: null,
      id: '200',
      contentType: 'author',
    });
  }, 120_000);
});
