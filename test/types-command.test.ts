import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { fixture, startTiny, tinyKey } from './helpers/server.ts';

/**
 * `comfortable-loader types`: zod schema files per content type, from the cache of a config,
 * in a project folder with the tiny snapshot behind the local Read API.
 */

const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const tsc = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url));

let server: ReadApiServer;
let project: string;
const requests: string[] = [];

function run(
  command: string,
  args: string[],
  cwd = project,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const { CI: _ci, ...env } = process.env;
    const child = spawn(process.execPath, [command, ...args], { cwd, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const schemas = (name = 'src/content/schemas') => join(project, name);

beforeAll(async () => {
  server = await startTiny({ log: (line) => (/^[A-Z]+ \//.test(line) ? requests.push(line) : undefined) });
  project = await mkdtemp(join(tmpdir(), 'comfortable-types-'));
  const config = {
    baseUrl: server.url,
    repository: 'tiny',
    apiKey: tinyKey,
    collections: { news: {} },
    queries: { authors: { contentType: 'author' } },
    cacheDir: 'cache',
  };
  await writeFile(join(project, 'comfortable.config.json'), JSON.stringify(config));
  // The generated files import zod (astro/zod by default), which a project has installed.
  await mkdir(join(project, 'node_modules'));
  for (const name of ['zod', 'astro'])
    await symlink(
      fileURLToPath(new URL(`../node_modules/${name}`, import.meta.url)),
      join(project, 'node_modules', name),
      'dir',
    );
});

afterAll(async () => {
  await server?.close();
  if (project) await rm(project, { recursive: true, force: true });
});

describe('the types command', () => {
  it('syncs when there is no cache, and writes one schema file per content type', async () => {
    const { code, stdout, stderr } = await run(cli, ['types']);
    expect(stderr).toBe(
      'warning: Dangling reference: document 100, field relatedNews points to 999, which the server does not have\n',
    );
    expect(code).toBe(0);
    expect(stdout).toContain(`No cache of tiny in ${join(project, 'cache')}: syncing first`);
    expect(stdout).toContain('Wrote 2 schema files: src/content/schemas/author.ts, src/content/schemas/news.ts');
    expect((await readdir(schemas())).sort()).toEqual(['author.ts', 'news.ts']); // no file for assets

    const news = await readFile(join(schemas(), 'news.ts'), 'utf8');
    expect(news).toContain("import { z } from 'astro/zod';");
    expect(news).not.toContain('astro:content'); // no contentTypes in the config: no reference()
    expect(news).toContain('export const newsFields = z.object({\n');
    expect(news).toContain('  title: z.string().nullable().optional(),\n');
    expect(news).toContain('  text: z.object({ html: z.string(), plain: z.string() }).nullable().optional(),\n');
    expect(news).toContain('  labels: z.array(z.string()).nullable().optional(),\n');
    expect(news).toContain('  author: relation.nullable().optional(),\n');
    expect(news).toContain('  relatedNews: z.array(relation).nullable().optional(),\n');
    expect(news).toContain('  images: z.array(asset).nullable().optional(),\n');
    expect(news).toContain(
      "const asset = z.discriminatedUnion('kind', [\n  z.object({ kind: z.literal('image'), id: z.string(), src: z.string(), width: z.number(), height: z.number(),",
    );
    expect(news).toContain(
      'const unresolved = z.object({\n  collection: z.null(),\n  id: z.string(),\n  contentType: z.string(),\n});',
    );
    expect(news).toContain('export type NewsFields = z.infer<typeof newsFields>;');
    expect(await readFile(join(schemas(), 'author.ts'), 'utf8')).toContain(
      'export const authorFields = z.object({\n  name: z.string().nullable().optional(),',
    );
  });

  it('reads the cache a sync left, without asking the API', async () => {
    expect((await run(cli, ['sync'])).code).toBe(0);
    const before = requests.length;
    const { code, stdout } = await run(cli, ['types', '--out', 'schemas', '--zod', 'zod']);
    expect(code).toBe(0);
    expect(stdout).toContain(`Reading the cache in ${join(project, 'cache')}`);
    expect(requests.length).toBe(before);
    expect(await readFile(join(schemas('schemas'), 'news.ts'), 'utf8')).toContain("import { z } from 'zod';");
  });

  it('writes files that typecheck, whose schemas accept an emptied field and refuse a wrong value', async () => {
    await writeFile(
      join(project, 'check.ts'),
      `import { authorFields, type AuthorFields } from './src/content/schemas/author';
import { newsFields, type NewsFields } from './src/content/schemas/news';

export const emptied: NewsFields = { title: null, images: null };
export const ada: AuthorFields = { name: 'Ada', favourite: { collection: 'news', id: 'en_US/100' }, avatar: [{ kind: 'image', id: '301', src: 'https://images.example.com/ada.png', width: 64, height: 64, alt: 'Ada' }] };
// Narrowed on kind, an image has its size; narrowed on collection, a relation is a reference.
const avatar = ada.avatar?.find((asset) => asset.kind === 'image');
export const width: number | undefined = avatar?.width;
export const favourite: string | undefined = ada.favourite?.collection ?? undefined;
// @ts-expect-error a title is text
export const wrong: NewsFields = { title: 5 };
export const parsed = [newsFields.parse({}), authorFields.parse(ada)];
`,
    );
    const tsconfig = {
      compilerOptions: {
        target: 'es2023',
        module: 'esnext',
        moduleResolution: 'bundler',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: [],
      },
      include: ['src', 'check.ts'],
    };
    await writeFile(join(project, 'tsconfig.json'), JSON.stringify(tsconfig));
    const { code, stdout, stderr } = await run(tsc, ['-p', join(project, 'tsconfig.json')]);
    expect(stdout + stderr).toBe('');
    expect(code).toBe(0);

    const { newsFields } = await import(pathToFileURL(join(schemas(), 'news.ts')).href);
    expect(newsFields.parse({})).toEqual({});
    expect(newsFields.parse({ title: null, rating: null })).toEqual({ title: null, rating: null });
    const apples = {
      title: 'Apple harvest',
      author: { collection: 'authors', id: 'en_US/200' },
      relatedNews: [{ collection: null, id: '999', contentType: 'news' }],
      place: { lat: 47.37, lng: 8.54 },
    };
    expect(newsFields.parse(apples)).toEqual(apples);
    expect(() => newsFields.parse({ rating: 'five' })).toThrow();
  }, 60_000);

  it('keeps files that exist, so edits survive, unless --force', async () => {
    const file = join(schemas(), 'news.ts');
    const edited = (await readFile(file, 'utf8')).replace('title: z.string()', 'title: z.string().min(1)');
    await writeFile(file, edited);
    await unlink(join(schemas(), 'author.ts'));

    const again = await run(cli, ['types']);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Wrote 1 schema files: src/content/schemas/author.ts');
    expect(again.stdout).toContain(
      'Kept 1 existing files (pass --force to overwrite them): src/content/schemas/news.ts',
    );
    expect(await readFile(file, 'utf8')).toBe(edited);

    const forced = await run(cli, ['types', '--force']);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('Wrote 2 schema files');
    expect(await readFile(file, 'utf8')).toContain('  title: z.string().nullable().optional(),\n');
  });

  it('exits 2 on a bad flag or a missing config', async () => {
    const flag = await run(cli, ['types', '--outdir', 'x']);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/outdir/);
    expect(flag.stderr).toContain('comfortable-loader types [--config <file>] [--out <dir>]');
    const missing = await run(cli, ['types', '--config', 'missing.json']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('Config file not found');
  });
});

describe('the types command on content types with sections', () => {
  let lessons: ReadApiServer;
  let folder: string;

  beforeAll(async () => {
    lessons = await startServer({ paths: [fixture('sections.json')], watch: false });
    folder = await mkdtemp(join(tmpdir(), 'comfortable-types-sections-'));
    const config = {
      baseUrl: lessons.url,
      repository: 'lessons',
      apiKey: tinyKey,
      collections: { lessons: {} },
      queries: { teachers: { contentType: 'teacher' } },
      cacheDir: 'cache',
      contentTypes: { lesson: 'lessons', teacher: 'teachers' },
    };
    await writeFile(join(folder, 'comfortable.config.json'), JSON.stringify(config));
  });

  afterAll(async () => {
    await lessons?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('types each field inside a section, one a line, a relation inside one as a reference to its collection', async () => {
    const { code, stderr } = await run(cli, ['types'], folder);
    expect(code, stderr).toBe(0);
    const lesson = await readFile(join(folder, 'src/content/schemas/lesson.ts'), 'utf8');
    expect(lesson).toContain(
      [
        'export const lessonFields = z.object({',
        '  slug: z.string().nullable().optional(),',
        '  info: z.object({',
        '    title: z.string().nullable().optional(),',
        '    description: z.object({ html: z.string(), plain: z.string() }).nullable().optional(),',
        '    level: z.string().nullable().optional(),',
        '  }).nullable().optional(),',
        '  content: z.object({',
        '    introduction: z.string().nullable().optional(),',
        '    video: z.array(asset).nullable().optional(),',
        "    teacher: z.union([reference('teachers'), unresolved]).nullable().optional(),",
        "    related: z.array(z.union([reference('lessons'), unresolved])).nullable().optional(),",
        '  }).nullable().optional(),',
        '  quiz: z.object({',
        '    questions: z.array(z.string()).nullable().optional(),',
        '    passMark: z.number().nullable().optional(),',
        '  }).nullable().optional(),',
        '  publishedAt: z.string().nullable().optional(),',
        '});',
      ].join('\n'),
    );
    expect(await readFile(join(folder, 'src/content/schemas/teacher.ts'), 'utf8')).toContain(
      "    mentor: z.union([reference('teachers'), unresolved]).nullable().optional(),\n",
    );
  });
});

describe('the types command on Markdown fields', () => {
  let journal: ReadApiServer;
  let folder: string;

  beforeAll(async () => {
    journal = await startServer({ paths: [fixture('markdown.json')], watch: false });
    folder = await mkdtemp(join(tmpdir(), 'comfortable-types-markdown-'));
    const config = {
      baseUrl: journal.url,
      repository: 'journal',
      apiKey: tinyKey,
      collections: { articles: {} },
      cacheDir: 'cache',
      // The Read API does not say which fields are Markdown: the config names them.
      markdown: { article: ['body', 'teaser.summary', 'cover'] },
    };
    await writeFile(join(folder, 'comfortable.config.json'), JSON.stringify(config));
  });

  afterAll(async () => {
    await journal?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('writes a Markdown field as z.string() with a comment naming render, and tells a named field that holds no string', async () => {
    const { code, stderr } = await run(cli, ['types'], folder);
    expect(code, stderr).toBe(0);
    const article = await readFile(join(folder, 'src/content/schemas/article.ts'), 'utf8');
    const note = (path: string) =>
      `/** Markdown source: comfortableLoader({ render: '${path}' }) renders it for render(entry), or markdown: ['${path}'] into data.markdown. */`;
    expect(article).toContain(`  ${note('body')}\n  body: z.string().nullable().optional(),\n`);
    expect(article).toContain(`    ${note('teaser.summary')}\n    summary: z.string().nullable().optional(),\n`);
    // A Markdown field the config does not name is a string like any text, with no comment.
    expect(article).toContain(
      `  slug: z.string().nullable().optional(),\n  intro: z.string().nullable().optional(),\n`,
    );
    expect(stderr).toContain(
      "warning: The markdown option of the config names article.cover, which no synced document of article holds as a string: write the path of a Markdown field (a section's field as 'section.field')",
    );
  });

  it('refuses a markdown member that is not content type → fields', async () => {
    await writeFile(join(folder, 'bad.config.json'), JSON.stringify({ repository: 'journal', markdown: ['body'] }));
    const { code, stderr } = await run(cli, ['types', '--config', 'bad.config.json'], folder);
    expect(code).toBe(2);
    expect(stderr).toMatch(
      /markdown.*expected content type → its Markdown fields, such as \{ article: \["body", "intro"\] \}/,
    );
  });
});
