import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ConfigError, parseSyncConfig } from '../../src/sync/config.ts';
import { sync } from '../../src/sync/engine.ts';
import { key, recorder, tempDir } from '../helpers/magazine.ts';

/**
 * The sync's config: a minimal one gets its defaults, and a wrong one fails before anything
 * touches the cache or the network, naming the option (by its path), the allowed values and
 * the wrong value, but never the API key.
 */

describe('config validation', () => {
  const valid = { baseUrl: 'http://127.0.0.1:1/v1', repository: 'mag', apiKey: key, collections: { articles: {} } };

  function problem(input: unknown): ConfigError {
    try {
      parseSyncConfig(input);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return error as ConfigError;
    }
    throw new Error('expected a ConfigError');
  }

  it('accepts a minimal config and fills in the defaults', () => {
    const config = parseSyncConfig({ ...valid, onError: 'fail' });
    expect(config).toMatchObject({
      mode: 'incremental',
      safetyMarginMs: 300_000,
      concurrency: 8,
      pageSize: 1000,
      aliases: [],
      queries: {},
      onError: 'fail',
    });
  });

  it('names the option and the allowed values when the mode is wrong', () => {
    const error = problem({ ...valid, mode: 'sometimes' });
    expect(error.option).toBe('mode');
    expect(error.message).toContain('mode');
    for (const allowed of ['incremental', 'fresh', 'offline']) expect(error.message).toContain(allowed);
    expect(error.message).toContain('sometimes');
  });

  it('names the option of onError and its allowed values', () => {
    const error = problem({ ...valid, onError: 'ignore' });
    expect(error.option).toBe('onError');
    expect(error.message).toMatch(/"fail".*"use-cache"/);
  });

  it('says what a sorting key and direction must be', () => {
    expect(problem({ ...valid, collections: { articles: { sorting: { title: 'ASC' } } } }).message).toBe(
      'Invalid option collections.articles.sorting.title: expected fields.<name> or meta.<name> (got "title")',
    );
    expect(problem({ ...valid, collections: { articles: { sorting: { 'fields.title': 'up' } } } }).message).toBe(
      'Invalid option collections.articles.sorting.fields.title: expected "ASC" or "DESC" (or "asc", "desc", 1, -1) ' +
        '(got "up")',
    );
  });

  it('names nested source options by their path', () => {
    expect(problem({ ...valid, collections: { articles: { includes: 9 } } }).option).toBe(
      'collections.articles.includes',
    );
    expect(problem({ ...valid, collections: { articles: { colour: 'red' } } }).message).toMatch(
      /^Unknown option collections\.articles\.colour: the options there are filters, sorting, includes/,
    );
    expect(problem({ ...valid, collections: { articles: { includeTag: ['a'] } } }).message).toBe(
      'Unknown option collections.articles.includeTag: did you mean collections.articles.includeTags?',
    );
    expect(problem({ ...valid, colections: {} }).message).toBe('Unknown option colections: did you mean collections?');
    expect(problem({ ...valid, queries: { people: { sorting: { name: 'ASC' } } } }).option).toMatch(
      /^queries\.people\.sorting/,
    );
  });

  it('asks for the repository and the key when they are missing', () => {
    expect(problem({ ...valid, repository: undefined }).option).toBe('repository');
    const error = problem({ ...valid, apiKey: undefined });
    expect(error.option).toBe('apiKey');
    expect(error.message).toMatch(/environment/);
  });

  it('refuses a config with nothing to sync', () => {
    const error = problem({ baseUrl: valid.baseUrl, repository: 'mag', apiKey: key });
    expect(error.option).toBe('collections');
    expect(error.message).toMatch(/nothing to sync/);
  });

  it('shows the wrong value, but never the API key', () => {
    expect(problem({ ...valid, pageSize: 5000 }).message).toContain('5000');
    const error = problem({ ...valid, apiKey: [key] });
    expect(error.option).toBe('apiKey');
    expect(error.message).not.toContain(key);
  });

  it('is checked before anything touches the cache or the network', async () => {
    const dir = await tempDir();
    await expect(sync({ ...valid, cacheDir: dir, mode: 'sometimes' } as never, recorder())).rejects.toBeInstanceOf(
      ConfigError,
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it('defaults onError to fail when CI is set, and to use-cache otherwise', () => {
    const before = process.env.CI;
    try {
      process.env.CI = 'true';
      expect(parseSyncConfig(valid).onError).toBe('fail');
      delete process.env.CI;
      expect(parseSyncConfig(valid).onError).toBe('use-cache');
    } finally {
      if (before === undefined) delete process.env.CI;
      else process.env.CI = before;
    }
  });
});
