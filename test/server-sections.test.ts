import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseSnapshot, SnapshotError } from '../src/wire/snapshot.ts';
import { startServer } from '../src/server/index.ts';
import { asks, idsOf, includedIds as groups } from './helpers/forms.ts';
import { fixture, getJson, servedForFile } from './helpers/server.ts';

/**
 * Sections (spec §1): a content type's fields grouped under a section's API id. Every rule of a
 * field holds inside a section, on every route and option; filters, sorting and includes name a
 * field inside a section by its own API id. Against the `lessons` fixture (test/fixtures/
 * sections.json): lessons with the sections info, content and quiz, teachers with profile, the
 * locales en_GB, fr_FR and the plain language code de (both falling back to en_GB).
 */

const server = servedForFile(() => startServer({ paths: [fixture('sections.json')], watch: false }));
const { ask, refused } = asks(server);
const lessons = () => JSON.parse(readFileSync(fixture('sections.json'), 'utf8'));

describe('answers nest a section’s fields under the section’s API id', () => {
  it('resolves a localized field inside a section in the request’s locale, along its fallback', async () => {
    const fr = await ask('/lessons/documents/101', { locale: 'fr_FR' });
    expect(fr.fields.info).toEqual({
      title: 'Nœuds',
      description: { html: '<p>Les nouer vite</p>', plain: 'Les nouer vite' },
      level: 'beginner',
    });
    // No French introduction: the English one, along fr_FR → en_GB.
    expect(fr.fields.content.introduction).toBe('A knot a day');
    expect(fr.fields.quiz).toEqual({ questions: ['Which knot holds?', 'Why wet rope?'], passMark: 2 });
    expect(Object.keys(fr.fields)).toEqual(['slug', 'info', 'content', 'quiz', 'publishedAt']);
  });

  it('takes a plain language code (de) as a locale key', async () => {
    const de = await ask('/lessons/documents/101', { locale: 'de' });
    expect(de.fields.info.title).toBe('Knoten');
    expect(de.fields.content.introduction).toBe('Ein Knoten am Tag');
    expect((await ask('/lessons', {})).meta.locales).toEqual([
      { key: 'en_GB' },
      { key: 'fr_FR', fallback: 'en_GB' },
      { key: 'de', fallback: 'en_GB' },
    ]);
  });

  it('answers the default locale without a locale, and null where no locale of the chain has a value', async () => {
    const plain = await ask('/lessons/documents/102', {});
    expect(plain.fields.info).toEqual({ title: 'Sails', level: 'advanced' });
    expect(plain.fields.content.introduction).toBeNull();
  });

  it('makes a localized field inside a section a locale map at the field under locale=all; plain fields stay plain', async () => {
    const all = await ask('/lessons/documents/101', { locale: 'all' });
    expect(all.fields.info.title).toEqual({ en_GB: 'Knots', fr_FR: 'Nœuds', de: 'Knoten' });
    expect(all.fields.info.level).toBe('beginner');
    expect(all.fields.content.introduction).toEqual({ en_GB: 'A knot a day', de: 'Ein Knoten am Tag' });
    expect(all.fields.content.teacher).toEqual({ meta: { id: '201', contentType: 'teacher' } });
  });

  it('leaves out a section the document has no value in', async () => {
    const rope = await ask('/lessons/documents/103', { locale: 'all' });
    expect(rope.fields).toEqual({
      slug: 'rope',
      info: { title: { en_GB: 'Rope' } },
      publishedAt: '2023-11-02T12:00:00.000Z',
    });
  });

  it('answers sections on the list, alias and collection routes alike', async () => {
    const list = await ask('/lessons/documents', { locale: 'fr_FR' });
    const one = await ask('/lessons/documents/101', { locale: 'fr_FR' });
    expect(list.data.find((d: any) => d.meta.id === '101')).toEqual(one);
    expect(await ask('/lessons/alias/first-lesson', { locale: 'fr_FR' })).toEqual(one);
    expect(
      (await ask('/lessons/collections/lessons', { locale: 'fr_FR' })).data.find((d: any) => d.meta.id === '101'),
    ).toEqual(one);
  });
});

describe('filters name a field inside a section by its own API id', () => {
  const ids = async (filters: unknown, more: object = {}) =>
    idsOf((await ask('/lessons/documents', { filters, sorting: { 'meta.id': 'ASC' }, ...more })).data);

  it('tests a localized field inside a section on its value in the request’s locale, after fallback', async () => {
    expect(await ids([{ '*.fields.title': { equal: 'Voiles' } }], { locale: 'fr_FR' })).toEqual(['102']);
    expect(await ids([{ '*.fields.title': { equal: 'Rope' } }], { locale: 'fr_FR' })).toEqual(['103']);
    expect(await ids([{ '*.fields.title': { like: 'kno%' } }], { locale: 'de' })).toEqual(['101']);
    // locale=all: the default locale's value.
    expect(await ids([{ '*.fields.title': { equal: 'Knots' } }], { locale: 'all' })).toEqual(['101']);
  });

  it('reads values as the field’s type, with or without a content type', async () => {
    expect(await ids([{ '*.fields.passMark': { greaterThan: '3' } }])).toEqual(['102']);
    expect(await ids([{ 'lesson.fields.questions': { equal: 'Why wet rope?' } }])).toEqual(['101']);
    expect(await ids([{ 'teacher.fields.bio': { equal: 'Marin' } }], { locale: 'fr_FR' })).toEqual(['201']);
  });

  it('applies the missing-field rules to a section the document lacks', async () => {
    expect(await ids([{ 'lesson.fields.passMark': { empty: true } }])).toEqual(['103']);
    expect(await ids([{ 'lesson.fields.passMark': { notEmpty: true } }])).toEqual(['101', '102']);
    expect(await ids([{ 'lesson.fields.level': { notEqual: 'beginner' } }])).toEqual(['102', '103']);
  });

  it('refuses a path with the section key, naming the field without it', async () => {
    expect(await refused('/lessons/documents', { filters: [{ '*.fields.info.title': { equal: 'Knots' } }] })).toMatch(
      /without the section, such as \*\.fields\.title/,
    );
  });

  it('refuses a filter on a relation or asset inside a section', async () => {
    expect(await refused('/lessons/documents', { filters: [{ '*.fields.teacher': { equal: '201' } }] })).toMatch(
      /relation fields/,
    );
    expect(await refused('/lessons/documents', { filters: [{ '*.fields.video': { notEmpty: true } }] })).toMatch(
      /asset fields/,
    );
  });

  it('matches nothing on a section’s own API id, which names no field', async () => {
    expect(await ids([{ '*.fields.info': { notEmpty: true } }])).toEqual([]);
  });

  it('applies a collection’s stored filter on a field inside a section', async () => {
    expect(idsOf((await ask('/lessons/collections/quizzes', { sorting: { 'meta.id': 'ASC' } })).data)).toEqual([
      '101',
      '102',
    ]);
  });
});

describe('sorting names a field inside a section by its own API id', () => {
  const order = async (sorting: object, locale?: string) =>
    idsOf((await ask('/lessons/documents', { sorting, fields: 'meta(id)', ...(locale ? { locale } : {}) })).data);

  it('sorts by a localized text inside a section in the request’s locale; missing values last', async () => {
    expect(await order({ 'fields.title': 'ASC' })).toEqual(['101', '103', '102', '201', '202']);
    expect(await order({ 'fields.title': 'DESC' }, 'fr_FR')).toEqual(['102', '103', '101', '201', '202']);
    expect(await order({ 'fields.passMark': 'DESC' })).toEqual(['102', '101', '103', '201', '202']);
  });

  it('sorts a collection by its stored sorting on a field inside a section', async () => {
    expect(idsOf((await ask('/lessons/collections/lessons', { locale: 'de' })).data)).toEqual(['101', '103', '102']);
  });

  it('refuses a key with the section, and a sort on a relation inside a section', async () => {
    expect(await refused('/lessons/documents', { sorting: { 'fields.info.title': 'ASC' } })).toMatch(
      /without the section, such as fields\.title/,
    );
    expect(await refused('/lessons/documents', { sorting: { 'fields.teacher': 'ASC' } })).toMatch(/not sortable/);
  });

  it('orders nothing by a section’s own API id (the tie-break’s order)', async () => {
    expect(await order({ 'fields.info': 'DESC' })).toEqual(['101', '102', '103', '201', '202']);
  });
});

describe('includes follow the references inside sections', () => {
  it('includes at level 1 what relation and asset fields inside sections reference, grouped by the field’s own API id', async () => {
    expect(groups(await ask('/lessons/documents/101', { includes: 1 }))).toEqual({
      video: ['301'],
      teacher: ['201'],
      related: ['102'],
    });
  });

  it('goes on through the sections of the included records', async () => {
    expect(groups(await ask('/lessons/documents/101', { includes: 2 }))).toEqual({
      video: ['301', '302'],
      teacher: ['201', '202'],
      related: ['102', '101'],
      photo: ['301'],
      mentor: ['202'],
    });
  });

  it('follows a field map that names fields inside sections by their own API ids', async () => {
    const body = await ask('/lessons/documents/101', {
      includes: { '*.fields.teacher': { 'teacher.fields.mentor': 1 } },
    });
    expect(groups(body)).toEqual({ teacher: ['201'], mentor: ['202'] });
    expect(body.includes.mentor[0].fields.profile).toEqual({ bio: null });
  });

  it('refuses an includes path with the section key', async () => {
    expect(await refused('/lessons/documents/101', { includes: { '*.fields.content.teacher': 1 } })).toMatch(
      /without the section, such as \*\.fields\.teacher/,
    );
  });

  it('skips dangling references inside sections', async () => {
    expect(
      groups(await ask('/lessons/documents/102', { includes: { '*.fields.related': 1, '*.fields.video': 1 } })),
    ).toEqual({ related: ['101'], video: ['302'] });
  });
});

describe('embedAssets embeds the assets inside sections', () => {
  it('replaces each asset reference inside a section by the asset record, in the answered and the included records', async () => {
    const body = await ask('/lessons/documents/101', {
      embedAssets: true,
      includes: { '*.fields.teacher': 1 },
      locale: 'fr_FR',
    });
    expect(body.fields.content.video[0].fields.title).toBe('Pommes');
    expect(body.fields.content.video[0].fields.file.url).toMatch(/\/files\/lessons\/images\/apples\.svg$/);
    expect(body.includes.teacher[0].fields.profile.photo[0].meta).toMatchObject({ id: '301', contentType: '_asset' });
    expect(body.includes.video).toBeUndefined();
  });

  it('keeps a dangling asset reference inside a section as a reference', async () => {
    const body = await ask('/lessons/documents/102', { embedAssets: true });
    expect(body.fields.content.video.map((v: any) => [v.meta.id, 'fields' in v])).toEqual([
      ['302', true],
      ['399', false],
    ]);
  });

  it('embeds a localized asset field inside a section in each locale of its map under locale=all', async () => {
    const snapshot = lessons();
    snapshot.contentTypes[1].fields.find((f: any) => f.apiId === 'photo').localized = true;
    snapshot.documents.find((d: any) => d.meta.id === '201').fields.profile.photo = {
      en_GB: [{ meta: { id: '301', contentType: '_asset' } }],
      de: [{ meta: { id: '302', contentType: '_asset' } }],
    };
    const own = await startServer({ snapshots: [snapshot], watch: false });
    try {
      const { status, body } = await getJson(own, '/lessons/documents/201?locale=all&embedAssets=true');
      expect(status).toBe(200);
      expect(Object.keys(body.fields.profile.photo)).toEqual(['en_GB', 'de']);
      expect(body.fields.profile.photo.de[0].fields.title).toEqual({ en_GB: 'Ropes' });
      const fr = await getJson(own, '/lessons/documents/201?locale=fr_FR&includes[*.fields.photo]=1');
      expect(fr.body.fields.profile.photo).toEqual([{ meta: { id: '301', contentType: '_asset' } }]); // fr_FR → en_GB
      expect(idsOf(fr.body.includes.photo)).toEqual(['301']);
      expect(idsOf((await getJson(own, '/lessons/documents/201?locale=all&includes=1')).body.includes.photo)).toEqual([
        '301',
        '302',
      ]);
    } finally {
      await own.close();
    }
  });

  it('leaves the record without embedAssets as it was (the view is shared by every answer)', async () => {
    await ask('/lessons/documents/101', { embedAssets: true });
    expect((await ask('/lessons/documents/101', {})).fields.content.video).toEqual([
      { meta: { id: '301', contentType: '_asset' } },
    ]);
  });
});

describe('a fields mask names the section in its path (json-mask)', () => {
  it('keeps a field inside a section by sub-selection or by path', async () => {
    const expected = { fields: { info: { title: 'Knots' } } };
    expect(await ask('/lessons/documents/101', { fields: 'fields(info(title))' })).toEqual(expected);
    expect(await ask('/lessons/documents/101', { fields: 'fields/info/title' })).toEqual(expected);
  });

  it('masks inside embedded assets in a section, and on the list route', async () => {
    const body = await ask('/lessons/documents', {
      embedAssets: true,
      fields: 'fields(content(video(fields(title)))),meta(id)',
      sorting: { 'meta.id': 'ASC' },
    });
    expect(body.data[0]).toEqual({
      fields: { content: { video: [{ fields: { title: 'Apples' } }] } },
      meta: { id: '101' },
    });
    expect(body.data[2]).toEqual({ fields: {}, meta: { id: '103' } });
  });

  it('keeps nothing of a field named without its section', async () => {
    expect(await ask('/lessons/documents/101', { fields: 'fields(title)' })).toEqual({ fields: {} });
  });
});

describe('search reads the fields inside sections', () => {
  it('finds a word of a text inside a section in the request’s locale', async () => {
    expect(idsOf((await ask('/lessons/documents', { search: 'marin', locale: 'fr_FR' })).data)).toEqual(['201']);
    expect(idsOf((await ask('/lessons/documents', { search: 'marin' })).data)).toEqual([]);
    expect(idsOf((await ask('/lessons/documents', { search: 'seglerin', locale: 'all' })).data)).toEqual(['202']);
  });
});

describe('a snapshot with sections is checked', () => {
  const refusedAt = (edit: (snapshot: any) => void): SnapshotError => {
    const snapshot = lessons();
    edit(snapshot);
    try {
      parseSnapshot(snapshot, 'lessons.json');
    } catch (error) {
      expect(error).toBeInstanceOf(SnapshotError);
      return error as SnapshotError;
    }
    throw new Error('the snapshot was accepted');
  };

  it('accepts the fixture', () => {
    expect(parseSnapshot(lessons(), 'lessons.json').contentTypes[0]!.fields[1]).toEqual({
      apiId: 'title',
      type: 'text',
      localized: true,
      section: 'info',
    });
  });

  it('refuses a field whose API id another section of the type holds too', () => {
    const error = refusedAt((s) => s.contentTypes[0].fields.push({ apiId: 'title', type: 'text', section: 'quiz' }));
    expect(error.message).toBe(
      'lessons.json: $.contentTypes[0].fields[11].apiId: duplicate field "title" (a field\'s API id is unique in its content type, across sections)',
    );
  });

  it('refuses a field named like a section of its type', () => {
    const error = refusedAt((s) => s.contentTypes[0].fields.push({ apiId: 'quiz', type: 'text' }));
    expect(error.message).toBe(
      'lessons.json: $.contentTypes[0].fields[11].apiId: "quiz" is the API id of a section of this content type too',
    );
  });

  it('names the JSON path inside a section of a value that breaks its field’s type', () => {
    expect(refusedAt((s) => (s.documents[0].fields.info.title.fr_FR = 3)).path).toBe(
      '$.documents[0].fields.info.title.fr_FR',
    );
    expect(refusedAt((s) => (s.documents[0].fields.quiz.passMark = 'two')).path).toBe(
      '$.documents[0].fields.quiz.passMark',
    );
    expect(
      refusedAt((s) => (s.documents[0].fields.content.teacher = { meta: { id: '202', contentType: 'lesson' } }))
        .message,
    ).toBe(
      'lessons.json: $.documents[0].fields.content.teacher.meta.contentType: reference to 202 says "lesson" but that record is a "teacher"',
    );
  });

  it('refuses a key of a section that no field of the section declares, a field outside its section, and a section that is no object', () => {
    expect(refusedAt((s) => (s.documents[0].fields.quiz.title = 'x')).message).toBe(
      'lessons.json: $.documents[0].fields.quiz: unknown key "title"',
    );
    expect(refusedAt((s) => (s.documents[0].fields.passMark = 3)).message).toBe(
      'lessons.json: $.documents[0].fields: unknown key "passMark"',
    );
    expect(refusedAt((s) => (s.documents[0].fields.quiz = ['x'])).path).toBe('$.documents[0].fields.quiz');
  });

  it('refuses a section API id that is no API id', () => {
    expect(refusedAt((s) => (s.contentTypes[0].fields[1].section = 'in fo')).path).toBe(
      '$.contentTypes[0].fields[1].section',
    );
  });
});
