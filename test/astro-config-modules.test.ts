import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { contentConfigDigest } from '../src/astro/config-modules.ts';

/**
 * The digest of the content config's modules, which the loader keeps in its fingerprint: it
 * changes with an edit to any module of the project the content config imports, however the
 * import is written, and with nothing else.
 */

let root: string;
afterEach(() => rm(root, { recursive: true, force: true }));

async function project(
  files: Record<string, string>,
): Promise<{ digest(): string; write(path: string, text: string): Promise<void> }> {
  root = await mkdtemp(join(tmpdir(), 'config-modules-'));
  const write = async (path: string, text: string) => {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  };
  for (const [path, text] of Object.entries(files)) await write(path, text);
  return { digest: () => contentConfigDigest(pathToFileURL(`${root}/`), pathToFileURL(`${root}/src/`)), write };
}

describe('contentConfigDigest', () => {
  it('follows every form of import to the modules of the project, and nothing else', async () => {
    const files: Record<string, string> = {
      'tsconfig.json':
        '{\n  // comments, as tsconfig.json allows\n  "compilerOptions": { "baseUrl": ".", "paths": { "~/*": ["src/*"], "@exact": ["src/exact.ts"], }, },\n}\n',
      'src/content.config.ts': [
        "import { defineCollection } from 'astro:content';",
        "import {\n  post,\n  type Post,\n} from './schemas/post.js';",
        "export * from '~/schemas/author';",
        "import '@exact';",
        "const lazy = () => import('./lazy.mjs');",
        "import { z } from 'zod';",
      ].join('\n'),
      'src/schemas/post.ts': "import { tags } from '../shared/tags';\nexport const post = 1;",
      'src/shared/tags/index.ts': 'export const tags = 1;',
      'src/schemas/author.ts': 'export const author = 1;',
      'src/exact.ts': 'export {};',
      'src/lazy.mjs': 'export default 1;',
      'src/pages/index.astro': '<h1>not imported</h1>',
      'node_modules/zod/index.js': 'export const z = 1;',
    };
    const site = await project(files);
    const first = site.digest();
    expect(first).toMatch(/^[\w-]{20}$/);
    for (const file of [
      'src/schemas/post.ts',
      'src/shared/tags/index.ts',
      'src/schemas/author.ts',
      'src/exact.ts',
      'src/lazy.mjs',
    ]) {
      const before = site.digest();
      await site.write(file, `// edited\n${files[file]}`);
      expect(site.digest(), file).not.toBe(before);
    }
    const imported = site.digest();
    await site.write('src/pages/index.astro', '<h1>edited</h1>');
    await site.write('node_modules/zod/index.js', 'export const z = 2;');
    expect(site.digest()).toBe(imported);
  });

  it('is empty without a content config, and survives an import of a file that does not exist', async () => {
    expect((await project({ 'src/pages/index.astro': '' })).digest()).toBe('');
    const site = await project({ 'src/content.config.mjs': "import './missing.js';\nexport const collections = {};" });
    expect(site.digest()).toMatch(/^[\w-]{20}$/);
  });

  it('follows the paths of a base config the tsconfig extends, and is the same in another checkout', async () => {
    const files = {
      'tsconfig.json': '{ "extends": ["astro/tsconfigs/strict", "./config/tsconfig.base"] }',
      'config/tsconfig.base.json': '{ "compilerOptions": { "paths": { "@schemas/*": ["../src/schemas/*"] } } }',
      'src/content.config.ts': "import { post } from '@schemas/post';",
      'src/schemas/post.ts': 'export const post = 1;',
    };
    const site = await project(files);
    const first = site.digest();
    const elsewhere = root;
    const copy = await project(files); // the same project in another folder
    expect(copy.digest()).toBe(first);
    await copy.write('src/schemas/post.ts', 'export const post = 2;');
    expect(copy.digest()).not.toBe(first);
    await rm(elsewhere, { recursive: true, force: true });
  });
});
