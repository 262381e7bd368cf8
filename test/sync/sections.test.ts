import { beforeEach, describe, expect, it } from 'vitest';
import type { ReadApiServer } from '../../src/server/index.ts';
import { sync, type SyncResult } from '../../src/sync/engine.ts';
import { type Entry, entriesOf } from '../../src/entries/entries.ts';
import { cacheKeys } from '../../src/entries/page-keys.ts';
import { virtualModule } from '../../src/vite/plugin.ts';
import { normalizeRecord, type Model } from '../../src/model/records.ts';
import { recorder, recordsOf, serve, startProxy, tempDir } from '../helpers/magazine.ts';
import { lessonsConfig, lessonsSnapshot, sectionLevelLocales } from '../helpers/sections.ts';
import { tinyKey } from '../helpers/server.ts';

/**
 * Sections through the sync, against the local server serving the `lessons` fixture: a section's
 * localized fields split per locale with fallbacks named by path, references and embedded assets
 * found inside sections, includes and page keys following them; and the other shape of
 * `locale=all` (a map of locales at the section), from a proxy that rewrites the server's
 * answers, read into the same entries.
 */

const all = ['101', '102', '103', '201', '202'];
let server: ReadApiServer;
let result: SyncResult;
let files: string;

// The helpers close servers and remove folders after each test: each starts its own.
beforeEach(async () => {
  ({ server } = await serve(lessonsSnapshot() as never));
  files = `${server.origin}/files/lessons/images`;
  result = await sync(lessonsConfig(server.url, await tempDir()), recorder());
});

const entriesAfter = (of: SyncResult) => entriesOf(of.cache, all, of.cache.head.locales);
const entry = (entries: Entry[], id: string, locale: string) =>
  entries.find((e) => e.id === id && e.locale === locale)!;

describe('records keep a section’s fields as the section holds them', () => {
  it('keeps each localized field inside a section by locale, its path in `localized`', () => {
    const lesson = recordsOf(result).get('101')!;
    expect(lesson.fields.info).toEqual({
      title: { en_GB: 'Knots', fr_FR: 'Nœuds', de: 'Knoten' },
      description: {
        en_GB: { html: '<p>Tie them fast</p>', plain: 'Tie them fast' },
        fr_FR: { html: '<p>Les nouer vite</p>', plain: 'Les nouer vite' },
      },
      level: 'beginner',
    });
    expect(lesson.localized).toEqual(['info.title', 'info.description', 'content.introduction']);
  });

  it('reduces references inside sections, splits the assets embedded there into records of their own, and names each reference by path', () => {
    const records = recordsOf(result);
    expect(records.get('101')!.fields.content).toMatchObject({
      video: [{ id: '301', contentType: '_asset' }],
      teacher: { id: '201', contentType: 'teacher' },
    });
    expect(records.get('301')).toMatchObject({
      contentType: '_asset',
      fields: { title: { en_GB: 'Apples', fr_FR: 'Pommes' } },
    });
    expect(result.cache.references('101')).toEqual([
      { field: 'content.video', id: '301', asset: true },
      { field: 'content.teacher', id: '201', asset: false },
      { field: 'content.related', id: '102', asset: false },
    ]);
    expect(result.cache.dangling().map((d) => `${d.from} ${d.field} ${d.id}`)).toEqual([
      '102 content.related 199',
      '102 content.video 399',
    ]);
  });

  it('models a section as the fields in it', () => {
    const { lesson, teacher } = result.cache.head.model;
    expect(lesson!.info).toEqual({
      kind: 'section',
      localized: false,
      fields: {
        title: { kind: 'text', localized: true },
        description: { kind: 'richtext', localized: true },
        level: { kind: 'text', localized: false },
      },
    });
    expect(lesson!.content!.fields).toMatchObject({
      video: { kind: 'asset' },
      teacher: { kind: 'relation' },
      related: { kind: 'relation', multiple: true },
    });
    expect(lesson!.quiz!.fields).toMatchObject({
      questions: { kind: 'select', multiple: true },
      passMark: { kind: 'number' },
    });
    expect(teacher!.profile!.fields).toMatchObject({
      photo: { kind: 'asset' },
      bio: { kind: 'text', localized: true },
      mentor: { kind: 'relation' },
    });
  });
});

describe('entries resolve the fields inside sections per locale', () => {
  // Computed by hand from test/fixtures/sections.json (fr_FR and de fall back to en_GB).
  const apples = {
    kind: 'image',
    id: '301',
    width: 100,
    height: 80,
    alt: 'Red apples',
    mimeType: 'image/svg+xml',
    fileName: 'apples.svg',
  };
  const ropes = {
    kind: 'image',
    id: '302',
    width: 120,
    height: 60,
    alt: 'Ropes',
    mimeType: 'image/svg+xml',
    fileName: 'ropes.svg',
  };

  it('gives a French lesson French strings, the English ones where it has none, named by path in fallbacks', () => {
    const fr = entry(entriesAfter(result), '101', 'fr_FR');
    expect(fr.fields).toEqual({
      slug: 'knots',
      info: {
        title: 'Nœuds',
        description: { html: '<p>Les nouer vite</p>', plain: 'Les nouer vite' },
        level: 'beginner',
      },
      content: {
        introduction: 'A knot a day',
        video: [{ ...apples, src: `${files}/apples.svg` }],
        teacher: { id: '201', contentType: 'teacher' },
        related: [{ id: '102', contentType: 'lesson' }],
      },
      quiz: { questions: ['Which knot holds?', 'Why wet rope?'], passMark: 2 },
      publishedAt: '2024-03-01T09:00:00.000Z',
    });
    expect(fr.fallbacks).toEqual({ 'content.introduction': 'en_GB' });
  });

  it('marks null where no locale of the chain has a value, and the localized fields of a section the document lacks', () => {
    const entries = entriesAfter(result);
    const de = entry(entries, '102', 'de');
    expect(de.fields).toEqual({
      slug: 'sails',
      info: { title: 'Sails', level: 'advanced' },
      content: {
        introduction: null,
        video: [
          { ...ropes, src: `${files}/ropes.svg` },
          { kind: 'unresolved', id: '399', contentType: '_asset' },
        ],
        teacher: { id: '202', contentType: 'teacher' },
        related: [
          { id: '101', contentType: 'lesson' },
          { id: '199', contentType: 'lesson' },
        ],
      },
      quiz: { passMark: 5 },
      publishedAt: '2024-01-15T08:30:00.000Z',
    });
    expect(de.fallbacks).toEqual({ 'info.title': 'en_GB', 'info.description': null, 'content.introduction': null });
    const rope = entry(entries, '103', 'fr_FR');
    expect(rope.fields).toEqual({ slug: 'rope', info: { title: 'Rope' }, publishedAt: '2023-11-02T12:00:00.000Z' });
    expect(rope.fallbacks).toEqual({ 'info.title': 'en_GB', 'info.description': null, 'content.introduction': null });
    expect(entry(entries, '202', 'fr_FR')).toMatchObject({
      fields: { name: 'Grace', profile: { bio: null } },
      fallbacks: { 'profile.bio': null },
    });
    expect(entry(entries, '202', 'de')).toMatchObject({
      fields: { name: 'Grace', profile: { bio: 'Seglerin' } },
      fallbacks: {},
    });
  });

  it('leaves the stored record as it was (entries are new objects)', () => {
    const records = recordsOf(result);
    const before = JSON.stringify(records.get('101'));
    entriesOf(result.cache, ['101'], result.cache.head.locales);
    expect(JSON.stringify(recordsOf(result).get('101'))).toBe(before);
  });
});

describe('the Vite plugin’s modules', () => {
  it('carry the entries with their sections resolved in the module’s locale', async () => {
    const code = await virtualModule(result, 'virtual:comfortable/collections/lessons/fr_FR');
    const module = await import(`data:text/javascript,${encodeURIComponent(code)}`);
    expect(module.getEntry('101')).toMatchObject({
      fields: { info: { title: 'Nœuds' }, content: { introduction: 'A knot a day' } },
      fallbacks: { 'content.introduction': 'en_GB' },
    });
  });
});

describe('includes and page keys follow the references inside sections', () => {
  it('includes what relations inside sections reach, by level and by a field map naming the field’s own API id', async () => {
    expect([...result.cache.included('collection:lessons')].sort()).toEqual(['201', '202', '301', '302']);
    const mapped = await sync(
      lessonsConfig(server.url, await tempDir(), {
        collections: { lessons: { includes: { '*.fields.teacher': { '*.fields.mentor': 1 } } } },
        aliases: [],
        queries: {},
      }),
      recorder(),
    );
    expect([...mapped.cache.included('collection:lessons')].sort()).toEqual(['201', '202', '301', '302']);
    const none = await sync(
      lessonsConfig(server.url, await tempDir(), {
        collections: { lessons: { includes: { '*.fields.mentor': 1 } } },
        aliases: [],
        queries: {},
      }),
      recorder(),
    );
    expect([...none.cache.included('collection:lessons')].sort()).toEqual(['301', '302']);
  });

  it('changes a lesson’s page key when the teacher a section names changes, and leaves the others', async () => {
    const snapshot = lessonsSnapshot();
    const { server: own } = await serve(snapshot as never);
    const dir = await tempDir();
    const first = await sync(lessonsConfig(own.url, dir), recorder());
    const before = cacheKeys(first.cache, all);
    const teacher = snapshot.documents.find((d) => d.meta.id === '202')!;
    teacher.fields.profile.bio.de = 'Segelmeisterin';
    teacher.meta.updatedAt = '2024-06-01T00:00:00.000Z';
    teacher.meta.revision += 1;
    await own.replaceSnapshot(structuredClone(snapshot) as never);
    const second = await sync(lessonsConfig(own.url, dir), recorder());
    expect(second.changeset.records.updated).toEqual(['202']);
    const after = cacheKeys(second.cache, all);
    // 102 names 202 in content.teacher, 201 in profile.mentor; 101 relates to 102; 103 names none.
    expect(all.filter((id) => before.get(id) !== after.get(id))).toEqual(['101', '102', '201', '202']);
    expect(entry(entriesAfter(second), '202', 'de').fields.profile).toEqual({ bio: 'Segelmeisterin' });
  });
});

describe('a warm sync checks the assets embedded inside sections', () => {
  it('finds an asset edited alone through the listing of the documents that embed it in a section, and asks it alone', async () => {
    const snapshot = lessonsSnapshot();
    const served = await serve(snapshot as never);
    const config = lessonsConfig(served.server.url, await tempDir(), { aliases: [] });
    await sync(config, recorder());
    served.requests.length = 0;
    expect((await sync(config, recorder())).changeset.empty).toBe(true);
    // The stamps of 301 and 302 came with the listing through the sections' mask; 399 is dangling, looked for again.
    const assets = () => served.requests.filter((r) => r.includes('/assets/') && !r.includes('/399'));
    expect(
      served.requests.some((r) =>
        r.includes('fields(content(video(meta(id,updatedAt,revision))),profile(photo(meta(id,updatedAt,revision))))'),
      ),
    ).toBe(true);
    expect(assets()).toEqual([]);
    const asset = (snapshot as any).assets.find((a: any) => a.meta.id === '302');
    asset.fields.title = { en_GB: 'Coiled ropes' };
    asset.meta.updatedAt = '2024-06-01T00:00:00.000Z';
    await served.server.replaceSnapshot(structuredClone(snapshot) as never);
    served.requests.length = 0;
    const result = await sync(config, recorder());
    expect(result.changeset.records).toEqual({ added: [], updated: ['302'], removed: [] });
    expect(assets()).toEqual(['GET /v1/lessons/assets/302?locale=all 200']);
  });
});

describe('a map of locales at the section, as the real service might answer, is read just as well', () => {
  it('gives the same entries in every locale as the shape the local server answers', async () => {
    const proxy = await startProxy(server, sectionLevelLocales(lessonsSnapshot()));
    const viaProxy = await sync(lessonsConfig(proxy.url, await tempDir()), recorder());
    // What the sync read: each section as a map of locales.
    const answer = (await (
      await fetch(`${proxy.url}/lessons/documents/101?locale=all`, { headers: { authorization: tinyKey } })
    ).json()) as any;
    expect(answer.fields.info.fr_FR).toEqual({
      title: 'Nœuds',
      description: { html: '<p>Les nouer vite</p>', plain: 'Les nouer vite' },
      level: 'beginner',
    });
    expect(answer.fields.content.de).toMatchObject({
      introduction: 'Ein Knoten am Tag',
      teacher: { meta: { id: '201' } },
    });
    expect(entriesAfter(viaProxy)).toEqual(entriesAfter(result));
    expect(viaProxy.cache.references('101')).toEqual(result.cache.references('101'));
    expect([...viaProxy.cache.included('collection:lessons')].sort()).toEqual(['201', '202', '301', '302']);
  });

  it('turns such a section into localized fields, and a field the same in every locale of the map into a plain one', () => {
    const model: Model = {};
    const embedded: unknown[] = [];
    const record = normalizeRecord(
      {
        fields: {
          info: {
            en_GB: { title: 'Sails', level: 'advanced' },
            fr_FR: { title: 'Voiles', level: 'advanced' },
            de: null,
          },
          content: { fr_FR: { introduction: 'Hisser' }, en_GB: {} },
        },
        meta: { id: '102', contentType: 'lesson' },
      },
      new Set(['en_GB', 'fr_FR', 'de']),
      model,
      (child) => embedded.push(child),
    );
    // level, the same in every locale of the map: a field that is not localized.
    expect(record.fields).toEqual({
      info: { title: { en_GB: 'Sails', fr_FR: 'Voiles' }, level: 'advanced' },
      content: { introduction: { fr_FR: 'Hisser' } },
    });
    expect(record.localized).toEqual(['info.title', 'content.introduction']);
    expect(model.lesson!.info).toMatchObject({ kind: 'section', fields: { title: { kind: 'text', localized: true } } });
  });

  it('keeps a localized richtext with more keys than html and plain a localized field, not a section', () => {
    const body = { en_GB: { html: '<p>a</p>', plain: 'a', words: 1 }, de: { html: '<p>b</p>', plain: 'b', words: 1 } };
    const record = normalizeRecord(
      { fields: { body }, meta: { id: '1', contentType: 'page' } },
      new Set(['en_GB', 'de']),
      {},
      () => {},
    );
    expect(record).toMatchObject({ fields: { body }, localized: ['body'] });
  });
});
