import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ComfortableLiveLoaderOptions, comfortableLiveLoader } from '../src/astro/index.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { demoKey, demoSnapshot } from './helpers/server.ts';

/**
 * The options of `comfortableLiveLoader()`: the repository comes from `CMFT_REPOSITORY` when the
 * option is not given. Against the local Read API on the demo repository.
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
