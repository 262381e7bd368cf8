import { describe, expect, it } from 'vitest';
import { sync } from '../../src/sync/engine.ts';
import { entryOf, entriesOf } from '../../src/entries/entries.ts';
import { configFor, docOf, magazine, recorder, recordsOf, serve, tempDir } from '../helpers/magazine.ts';

/**
 * `fallbacks` of an entry: each localized field whose value is not the locale's own names the
 * locale it came from, or is `null` when no locale of the document has one, whether the field
 * is absent from the document, `null` or without any locale's value.
 */

describe('fallbacks of a localized field that no locale of a document has', () => {
  it('mark the field null, like a field whose value came from no locale', async () => {
    // Article 1003 has neither `body` nor `gallery`, both localized fields of articles.
    const { server } = await serve();
    const { cache } = await sync(configFor(server.url, await tempDir()), recorder());
    const [en, de, ch] = entriesOf(cache, ['1003'], cache.head.locales, ['en_US', 'de_DE', 'de_CH']);
    expect(en!.fallbacks).toEqual({ body: null, gallery: null });
    expect(de!.fallbacks).toEqual({ body: null, gallery: null });
    expect(ch!.fallbacks).toEqual({ title: 'de_DE', body: null, gallery: null });
    expect(ch!.fields.title).toBe('Kirschenzeit');
  });

  it('mark the field null when the server answers it null or with no locale', async () => {
    const snapshot = magazine();
    docOf(snapshot, '1003').fields.body = null;
    docOf(snapshot, '1002').fields.gallery = {};
    docOf(snapshot, '1002').fields.title = { de_CH: 'Bananeschiff' };
    const { server } = await serve(snapshot);
    const { cache } = await sync(configFor(server.url, await tempDir()), recorder());
    const entries = entriesOf(cache, ['1002', '1003'], cache.head.locales, ['de_DE']);
    expect(entries.map((entry) => entry.fallbacks)).toEqual([
      { title: null, body: 'en_US', gallery: null }, // de_CH's own title is not on de_DE's chain
      { body: null, gallery: null },
    ]);
    expect(entries.map((entry) => [entry.fields.title, entry.fields.body, entry.fields.gallery])).toEqual([
      [null, { html: '<p>Boats</p>', plain: 'Boats' }, null],
      ['Kirschenzeit', null, undefined],
    ]);
  });

  it('name only the fields the record holds when entryOf is given no model', async () => {
    const { server } = await serve();
    const result = await sync(configFor(server.url, await tempDir()), recorder());
    const records = recordsOf(result);
    const { locales, model } = result.cache.head;
    expect(entryOf(records.get('1003')!, 'de_CH', locales, (id) => records.get(id)).fallbacks).toEqual({
      title: 'de_DE',
    });
    expect(entryOf(records.get('1003')!, 'de_CH', locales, (id) => records.get(id), model).fallbacks).toEqual({
      title: 'de_DE',
      body: null,
      gallery: null,
    });
  });
});
