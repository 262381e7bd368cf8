import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startServer } from '../src/server/index.ts';
import { asks, idsOf } from './helpers/forms.ts';
import { fixture, servedForFile } from './helpers/server.ts';

/**
 * Markdown fields (spec §1): the value is the Markdown source, answered as a string, localized or
 * not, inside a section too; filters (§4), sorting (§5) and search (§8) read it as text. Against
 * test/fixtures/markdown.json: articles with a localized `body`, a plain `intro` and a localized
 * `summary` in the section `teaser`; en_US, and de_DE falling back to it.
 */

const server = servedForFile(() => startServer({ paths: [fixture('markdown.json')], watch: false }));
const { ask } = asks(server);
const journal = () => JSON.parse(readFileSync(fixture('markdown.json'), 'utf8'));
const ids = async (options: object) =>
  idsOf((await ask('/journal/documents', { sorting: { 'meta.id': 'ASC' }, ...options })).data);

describe('a snapshot with Markdown fields is served', () => {
  it('answers the Markdown source as it is, in the locale or along its fallback', async () => {
    const source = journal().documents[0].fields;
    const de = await ask('/journal/documents/501', { locale: 'de_DE' });
    expect(de.fields.body).toBe(source.body.de_DE);
    expect(de.fields.intro).toBe(source.intro);
    expect(de.fields.teaser).toEqual({ summary: 'Kaffee, *langsam*' });
    // No German body: the English one, along de_DE → en_US.
    expect((await ask('/journal/documents/502', { locale: 'de_DE' })).fields.body).toMatch(/^## Burrs/);
  });

  it('makes a localized Markdown field a locale map under locale=all, inside a section too', async () => {
    const all = await ask('/journal/documents/501', { locale: 'all' });
    expect(Object.keys(all.fields.body)).toEqual(['en_US', 'de_DE']);
    expect(all.fields.teaser.summary).toEqual({ en_US: 'Coffee, *slowly*', de_DE: 'Kaffee, *langsam*' });
    expect(typeof all.fields.intro).toBe('string');
  });
});

describe('filters, sorting and search read Markdown as text', () => {
  it('matches like, equal and empty on the source, in the request’s locale', async () => {
    expect(await ids({ filters: [{ '*.fields.body': { like: '%## Method%' } }] })).toEqual(['501']);
    expect(await ids({ filters: [{ '*.fields.body': { like: '%## Burrs%' } }], locale: 'de_DE' })).toEqual(['502']);
    expect(await ids({ filters: [{ 'article.fields.intro': { equal: 'Burrs, not blades.' } }] })).toEqual(['502']);
    expect(await ids({ filters: [{ '*.fields.body': { empty: true } }] })).toEqual(['503']);
    expect(await ids({ filters: [{ '*.fields.summary': { like: '%langsam%' } }], locale: 'de_DE' })).toEqual(['501']);
  });

  it('sorts on the source with the locale’s collation, documents without a value last', async () => {
    // "## Burrs…" < "Brewing starts…" < none; German: "## Burrs…" (fallback) < "Das Brühen…" < none.
    expect(await ids({ sorting: { 'fields.body': 'ASC' } })).toEqual(['502', '501', '503']);
    expect(await ids({ sorting: { 'fields.body': 'DESC' } })).toEqual(['501', '502', '503']);
    expect(await ids({ sorting: { 'fields.intro': 'DESC' } })).toEqual(['502', '501', '503']);
    expect(await ids({ sorting: { 'fields.summary': 'ASC' }, locale: 'de_DE' })).toEqual(['502', '501', '503']);
  });

  it('searches the source of every Markdown field, in the request’s locale', async () => {
    expect(await ids({ search: 'grind beans' })).toEqual(['501']);
    expect(await ids({ search: 'bohnen', locale: 'de_DE' })).toEqual(['501']);
    expect(await ids({ search: 'blades' })).toEqual(['502']); // the intro
    expect(await ids({ search: 'even grounds', locale: 'de_DE' })).toEqual(['502']); // a summary, by fallback
    expect(await ids({ search: '`js' })).toEqual(['501']); // the source, backticks and all
  });
});
