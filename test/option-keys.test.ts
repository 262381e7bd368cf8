import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sourceOptionsSchema, syncConfigSchema } from '../src/sync/config.ts';
import { allowedKeys, nearestKey } from '../src/sync/option-keys.ts';

/** The "did you mean" of a misspelt option: the keys a schema allows where it was written, and the nearest. */
describe('the nearest allowed key', () => {
  const top = allowedKeys(syncConfigSchema, []);

  it('is found for a letter missing, added, changed or swapped, and for a prefix', () => {
    expect(nearestKey('colections', top)).toBe('collections');
    expect(nearestKey('repositorys', top)).toBe('repository');
    expect(nearestKey('apiKye', top)).toBe('apiKey');
    expect(nearestKey('baseURL', top)).toBe('baseUrl');
    expect(nearestKey('concurency', top)).toBe('concurrency');
    expect(nearestKey('safetyMargin', top)).toBe('safetyMarginMs');
    expect(nearestKey('include', allowedKeys(sourceOptionsSchema, []))).toBe('includes');
  });

  it('is none for a key far from all', () => {
    expect(nearestKey('colour', top)).toBeUndefined();
    expect(nearestKey('x', top)).toBeUndefined();
  });

  it('is looked up where the key was written: under records, unions, lazy and optional schemas', () => {
    expect(allowedKeys(syncConfigSchema, ['collections', 'posts'])).toContain('includeTags');
    expect(allowedKeys(syncConfigSchema, ['aliases', 'home'])).toContain('embedAssets');
    expect(allowedKeys(syncConfigSchema, ['queries', 'authors'])).toContain('contentType');
    expect(allowedKeys(z.object({ a: z.lazy(() => z.object({ b: z.string() }).optional()) }), ['a'])).toEqual(['b']);
    expect(allowedKeys(syncConfigSchema, ['mode'])).toEqual([]);
  });
});

describe('the dev options read the same in the Astro integration and the Vite plugin', () => {
  const base = { baseUrl: 'http://127.0.0.1:9/v1', repository: 'tiny', apiKey: 'k'.repeat(32) };
  const cases: [Record<string, unknown>, string | undefined][] = [
    [{ refreshSecret: 'short' }, 'refreshSecret: expected a secret of at least 16 characters'],
    [{ refreshPath: 'refresh' }, 'refreshPath: expected a path such as /_comfortable/refresh'],
    [{ pollInterval: 100 }, 'pollInterval: expected milliseconds between two asks of the CMS (at least 500)'],
    [{ pollInterval: 'often' }, 'pollInterval: expected milliseconds between two asks of the CMS (at least 500)'],
    [{ refreshSecret: 's'.repeat(16), refreshPath: '/hook', pollInterval: false }, undefined],
    [{ pollInterval: 500 }, undefined],
    [{ pollInterval: 2.5e3 + 0.5 }, 'pollInterval: expected milliseconds between two asks of the CMS (at least 500)'],
  ];
  it.each(cases)('%o', async (options, message) => {
    const { comfortable: astro } = await import('../src/astro/integration.ts');
    const { comfortable: vite } = await import('../src/vite/index.ts');
    for (const door of [astro, vite]) {
      const made = () => door({ ...base, ...options } as never);
      if (message) expect(made).toThrow(`Invalid option comfortable.${message}`);
      else expect(made).not.toThrow();
    }
  });
});
