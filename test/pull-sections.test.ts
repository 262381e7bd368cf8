import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { inferContentTypes } from '../src/pull/infer.ts';
import { pull } from '../src/pull/pull.ts';
import { startServer } from '../src/server/index.ts';
import { startProxy, tempDir } from './helpers/magazine.ts';
import { lessonsSnapshot, sectionLevelLocales } from './helpers/sections.ts';
import { fixture, tinyKey } from './helpers/server.ts';

/**
 * `pull` of a repository with sections (test/fixtures/sections.json): the content types come
 * back with their sections, from the documents, and from the server where the documents cannot
 * tell a section from a JSON value; the documents come back as the snapshot holds them, from
 * either shape of `locale=all` (test/pull-round-trip.test.ts serves the copy back byte for byte).
 */

const locales = new Set(['en_US', 'de_DE']);
const doc = (fields: Record<string, unknown>, contentType = 'page') => ({ fields, meta: { contentType } });
const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });

describe('sections inferred from the documents', () => {
  it('makes an object of fields a section when it holds a localized field, a relation or an asset, its fields typed and in order', () => {
    const { contentTypes, warnings } = inferContentTypes(
      [
        doc({
          slug: 'a',
          seo: { title: { en_US: 'A', de_DE: 'Ä' }, image: [ref('9', '_asset')] },
          links: { author: ref('2', 'author'), note: 'x' },
        }),
        doc({ slug: 'b', seo: { keywords: ['k'], title: {} }, links: null }),
      ],
      locales,
    );
    expect(warnings).toEqual([]);
    expect(contentTypes[0]!.fields).toEqual([
      { apiId: 'slug', type: 'text' },
      { apiId: 'title', type: 'text', localized: true, section: 'seo' },
      { apiId: 'image', type: 'asset', section: 'seo' },
      { apiId: 'keywords', type: 'select', section: 'seo' },
      { apiId: 'author', type: 'relation', section: 'links' },
      { apiId: 'note', type: 'text', section: 'links' },
    ]);
  });

  it('keeps an object of plain values json unless the server confirms it a section', () => {
    const documents = [
      doc({ quiz: { questions: ['Why?'], passMark: 2 } }),
      doc({ quiz: { passMark: 3, nested: { deep: true } } }),
    ];
    expect(inferContentTypes(documents, locales).contentTypes[0]!.fields).toEqual([{ apiId: 'quiz', type: 'json' }]);
    expect(inferContentTypes(documents, locales, new Set(['page.quiz'])).contentTypes[0]!.fields).toEqual([
      { apiId: 'questions', type: 'select', section: 'quiz' },
      { apiId: 'passMark', type: 'number', section: 'quiz' },
      // Sections do not nest: an object inside one is a json field.
      { apiId: 'nested', type: 'json', section: 'quiz' },
    ]);
  });

  it('keeps json a field that holds anything but objects of fields', () => {
    const { contentTypes } = inferContentTypes(
      [doc({ extra: { title: { en_US: 'x' } } }), doc({ extra: ['a', 'b'] })],
      locales,
      new Set(['page.extra']),
    );
    expect(contentTypes[0]!.fields).toEqual([{ apiId: 'extra', type: 'json' }]);
  });

  it('keeps json, with a warning, objects whose keys are other fields of the content type or no API ids', () => {
    const { contentTypes, warnings } = inferContentTypes(
      [
        doc({
          title: 'T',
          seo: { title: { en_US: 'x' } },
          odd: { 'a b': { en_US: 'y' } },
          one: { author: ref('1', 'a') },
          two: { author: ref('2', 'a') },
        }),
      ],
      locales,
    );
    expect(contentTypes[0]!.fields.map((f) => [f.apiId, f.type, f.section])).toEqual([
      ['title', 'text', undefined],
      ['seo', 'json', undefined],
      ['odd', 'json', undefined],
      ['one', 'json', undefined],
      ['two', 'json', undefined],
    ]);
    expect(warnings).toEqual(
      ['seo', 'odd', 'one', 'two'].map(
        (name) =>
          `Field page.${name} holds objects of fields whose names are no API ids, or are another field's of page: it is typed json, not as a section`,
      ),
    );
  });
});

describe('pull of a repository with sections', () => {
  const pullFrom = async (baseUrl: string) => {
    const out = await tempDir();
    const result = await pull({
      config: {
        baseUrl,
        repository: 'lessons',
        apiKey: tinyKey,
        collections: { lessons: {}, quizzes: {} },
        aliases: ['first-lesson'],
        concurrency: 4,
        pageSize: 2,
      },
      out,
    });
    expect(result.warnings).toEqual([]);
    return JSON.parse(await readFile(result.file, 'utf8'));
  };

  it('copies the content types with their sections (the quiz, of plain fields, as the server confirms) and the documents as the snapshot holds them', async () => {
    const server = await startServer({ paths: [fixture('sections.json')], watch: false });
    try {
      const copy = await pullFrom(server.url);
      const original = lessonsSnapshot();
      // A single-choice select is a string on the wire: the copy has it as text (docs/pull.md), which the server answers alike.
      original.contentTypes[0]!.fields.find((f) => f.apiId === 'level')!.type = 'text';
      expect(copy.contentTypes).toEqual(original.contentTypes);
      expect(copy.documents).toEqual(original.documents.sort((a, b) => Number(a.meta.id) - Number(b.meta.id)));
    } finally {
      await server.close();
    }
  });

  it('copies the same from a server that answers a section as a map of locales', async () => {
    const server = await startServer({ paths: [fixture('sections.json')], watch: false });
    try {
      const direct = await pullFrom(server.url);
      const proxy = await startProxy(server, sectionLevelLocales(lessonsSnapshot()));
      const rewritten = await pullFrom(proxy.url);
      expect(rewritten.contentTypes).toEqual(direct.contentTypes);
      expect(rewritten.documents).toEqual(direct.documents);
      expect(rewritten.assets).toEqual(direct.assets);
    } finally {
      await server.close();
    }
  });
});
