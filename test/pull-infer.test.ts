import { describe, expect, it } from 'vitest';
import { inferContentTypes } from '../src/pull/infer.ts';

/** The rule docs/pull.md states, value by value. */

const locales = new Set(['en_US', 'de_DE']);
const doc = (fields: Record<string, unknown>, contentType = 'thing') => ({ fields, meta: { contentType } });
const ref = (id: string, contentType: string) => ({ meta: { id, contentType } });
const typesOf = (...documents: ReturnType<typeof doc>[]) => inferContentTypes(documents, locales);

describe('content types inferred from values', () => {
  it('types each field by what its values show, in the order fields first appear', () => {
    const { contentTypes, warnings } = typesOf(
      doc({
        count: 3,
        done: false,
        day: '2024-05-01',
        at: '2024-05-01T10:00:00.000Z',
        accent: '#1a2b3c',
        title: 'Hello',
        tags: ['a', 'b'],
        body: { html: '<p>x</p>', plain: 'x' },
        where: { lat: 47.3, lng: 8.5 },
        cover: [ref('9', '_asset')],
        author: ref('2', 'author'),
        related: [ref('3', 'post')],
        extra: { any: ['thing'] },
      }),
      doc({ nothing: null, empty: [], blank: {} }),
    );
    expect(warnings).toEqual([]);
    expect(contentTypes).toEqual([
      {
        apiId: 'thing',
        fields: [
          { apiId: 'count', type: 'number' },
          { apiId: 'done', type: 'boolean' },
          { apiId: 'day', type: 'date' },
          { apiId: 'at', type: 'date' },
          { apiId: 'accent', type: 'color' },
          { apiId: 'title', type: 'text' },
          { apiId: 'tags', type: 'select' },
          { apiId: 'body', type: 'richtext' },
          { apiId: 'where', type: 'location' },
          { apiId: 'cover', type: 'asset' },
          { apiId: 'author', type: 'relation' },
          { apiId: 'related', type: 'relation' },
          { apiId: 'extra', type: 'json' },
          // null, [] and {} show nothing.
          { apiId: 'nothing', type: 'json' },
          { apiId: 'empty', type: 'json' },
          { apiId: 'blank', type: 'json' },
        ],
      },
    ]);
  });

  it('makes strings of several kinds text, and a date with an offset text (the snapshot takes UTC only)', () => {
    const { contentTypes, warnings } = typesOf(
      doc({ a: '2024-05-01', b: '2024-05-01T10:00:00+02:00' }),
      doc({ a: 'soon' }),
    );
    expect(warnings).toEqual([]);
    expect(contentTypes[0]!.fields).toEqual([
      { apiId: 'a', type: 'text' },
      { apiId: 'b', type: 'text' },
    ]);
  });

  it('makes values that disagree json, with a warning naming the field', () => {
    const { contentTypes, warnings } = typesOf(doc({ size: 3 }, 'post'), doc({ size: 'large' }, 'post'));
    expect(contentTypes[0]!.fields).toEqual([{ apiId: 'size', type: 'json' }]);
    expect(warnings).toEqual(['Field post.size holds values of different types (number and text): it is typed json']);
  });

  it('marks a field localized from the locale=all shape, when its type may be', () => {
    const { contentTypes, warnings } = typesOf(
      doc({
        title: { en_US: 'Hi', de_DE: 'Hallo' },
        price: { en_US: 3 },
        flags: { en_US: true },
        images: { de_DE: [ref('9', '_asset')] },
      }),
      doc({ title: {}, price: null }),
    );
    expect(warnings).toEqual([]);
    expect(contentTypes[0]!.fields).toEqual([
      { apiId: 'title', type: 'text', localized: true },
      { apiId: 'price', type: 'number', localized: true },
      // A boolean cannot be localized: an object keyed by locales of booleans is json.
      { apiId: 'flags', type: 'json' },
      { apiId: 'images', type: 'asset', localized: true },
    ]);
  });

  it('warns about a field localized in some documents and not in others', () => {
    const { contentTypes, warnings } = typesOf(doc({ title: { en_US: 'Hi' } }), doc({ title: 'Plain' }));
    expect(contentTypes[0]!.fields).toEqual([{ apiId: 'title', type: 'json' }]);
    expect(warnings).toEqual(['Field thing.title is localized in some documents and not in others: it is typed json']);
  });

  it('keeps content types apart, sorted by API id', () => {
    const { contentTypes } = typesOf(doc({ a: 1 }, 'zebra'), doc({ b: 'x' }, 'apple'));
    expect(contentTypes.map((t) => t.apiId)).toEqual(['apple', 'zebra']);
  });
});
