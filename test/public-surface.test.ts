import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as root from '../src/index.ts';

const docs = ['README.md', 'docs/astro.md', 'docs/client.md', 'docs/sync.md', 'docs/live.md', 'docs/vite.md']
  .map((file) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8'))
  .join('\n');

describe('the package root', () => {
  const names = Object.keys(root).filter((name) => name !== 'default');

  it('exports at most 25 runtime names', () => {
    expect(names.length + 1).toBeLessThanOrEqual(25);
  });

  it('exports only what the docs show', () => {
    expect(names.filter((name) => !new RegExp(`\\b${name}\\b`).test(docs))).toEqual([]);
  });

  it('exports the integration as its default, for `astro add`', () => {
    expect(typeof root.default).toBe('function');
    expect(root.default({}).name).toBe('comfortable-loader');
  });
});

describe('the optional peers', () => {
  it('imports vite for its types only: an optional peer, which a strict installer may not give it', () => {
    const dir = new URL('../src/', import.meta.url);
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
    const runtime = files.filter((file) =>
      /^import (?!type\b)[^;]*from 'vite'/m.test(readFileSync(new URL(file, dir), 'utf8')),
    );
    expect(files.length).toBeGreaterThan(50);
    expect(runtime).toEqual([]);
  });
});
