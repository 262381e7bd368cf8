import { readFileSync } from 'node:fs';
import type { SyncConfigInput } from '../../src/sync/config.ts';
import { fixture, tinyKey } from './server.ts';

/**
 * The `lessons` repository with sections (test/fixtures/sections.json), what the loader's tests
 * of sections share: the snapshot, a sync config of it, and the other shape of `locale=all` the
 * real service might answer for a section (a map of locales at the section), made from the local
 * server's answers by a proxy that rewrites them.
 */

export interface SnapshotField {
  apiId: string;
  type: string;
  localized?: boolean;
  section?: string;
}
export interface LessonsSnapshot {
  repository: { locales: { key: string }[]; [key: string]: unknown };
  contentTypes: { apiId: string; fields: SnapshotField[] }[];
  documents: {
    fields: Record<string, any>;
    meta: { id: string; contentType: string; updatedAt: string; revision: number };
  }[];
  [key: string]: unknown;
}

export const lessonsSnapshot = (): LessonsSnapshot => JSON.parse(readFileSync(fixture('sections.json'), 'utf8'));

/** Every lesson (its sections' references included) and every teacher, in every locale. */
export function lessonsConfig(
  baseUrl: string,
  cacheDir: string,
  extra: Partial<SyncConfigInput> = {},
): SyncConfigInput {
  return {
    baseUrl,
    repository: 'lessons',
    apiKey: tinyKey,
    cacheDir,
    onError: 'fail',
    collections: { lessons: {} },
    aliases: ['first-lesson'],
    queries: { teachers: { contentType: 'teacher' } },
    ...extra,
  };
}

/**
 * Rewrites an answer of the local server so that each section (with `locale=all`) is a map of
 * locales at the section: `fields.info.de.title` for `fields.info.title.de`. A field that is not
 * localized stands in every locale; a locale with nothing in the section is left out. Records
 * in `data`, in `includes`, and embedded ones are rewritten alike.
 */
export function sectionLevelLocales(snapshot: LessonsSnapshot): (path: string, body: any) => any {
  const locales = snapshot.repository.locales.map((l) => l.key);
  const types = new Map(snapshot.contentTypes.map((type) => [type.apiId, type.fields]));
  const rewriteRecord = (record: any): void => {
    if (!record || typeof record !== 'object' || !record.fields || !record.meta) return;
    const fields = types.get(record.meta.contentType) ?? [];
    for (const [name, value] of Object.entries(record.fields as Record<string, unknown>)) {
      const inSection = fields.filter((field) => field.section === name);
      if (inSection.length === 0 || !value || typeof value !== 'object') {
        visit(value);
        continue;
      }
      const byLocale: Record<string, Record<string, unknown>> = {};
      for (const locale of locales) {
        const own: Record<string, unknown> = {};
        for (const [inner, held] of Object.entries(value as Record<string, unknown>)) {
          const field = inSection.find((f) => f.apiId === inner);
          if (!field?.localized) own[inner] = held;
          else if (held && typeof held === 'object' && (held as Record<string, unknown>)[locale] !== undefined)
            own[inner] = (held as Record<string, unknown>)[locale];
        }
        if (Object.keys(own).length > 0) byLocale[locale] = own;
        Object.values(own).forEach(visit);
      }
      record.fields[name] = byLocale;
    }
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === 'object' && 'meta' in value && 'fields' in value) rewriteRecord(value);
  };
  // A sync asks every answer with locale=all.
  return (_path, body) => {
    if (Array.isArray(body.data)) body.data.forEach(rewriteRecord);
    else rewriteRecord(body);
    for (const group of Object.values(body.includes ?? {})) (group as unknown[]).forEach(rewriteRecord);
    return body;
  };
}
