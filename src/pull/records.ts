import { type ApiRecord, isApiReference, isObject } from '../wire/schemas.ts';
import { fileSchema, type SnapshotRecord, timestampPattern } from '../wire/snapshot-format.ts';
import { isSection, sectionByField } from '../model/sections.ts';
import { isLocaleMap } from '../model/shapes.ts';

/**
 * Wire records as a snapshot holds them: references reduced to `{ meta: { id, contentType } }`
 * (assets embedded by `embedAssets` handed out and replaced by their references), meta in the
 * snapshot's order without the repository (the server fills it in), timestamps in UTC.
 */

/** A timestamp as the snapshot format has it: kept when it is one, else read and written in UTC. */
function timestamp(value: string | undefined, fallback: string): string {
  if (value && timestampPattern.test(value)) return value;
  const parsed = value ? Date.parse(value) : Number.NaN;
  return Number.isNaN(parsed) ? fallback : new Date(parsed).toISOString();
}

function snapshotMeta(meta: ApiRecord['meta']): SnapshotRecord['meta'] {
  const createdAt = timestamp(meta.createdAt, new Date(0).toISOString());
  return {
    id: meta.id,
    contentType: meta.contentType,
    revision: meta.revision ?? 0,
    tags: meta.tags ?? [],
    createdAt,
    updatedAt: timestamp(meta.updatedAt, createdAt),
  };
}

/**
 * A document as answered with `locale=all` and `embedAssets`, made a snapshot record in place
 * (the answer is the pull's own): each reference to an asset goes to `asset`, with the record
 * when it came embedded, and is reduced to its reference, inside sections too; a section that
 * came as a map of locales is turned into the snapshot's shape (maps of locales at its fields).
 */
export function snapshotDocument(
  record: ApiRecord,
  locales: ReadonlySet<string>,
  asset: (id: string, embedded: ApiRecord | undefined) => void,
): SnapshotRecord {
  const reduce = (value: unknown): unknown => {
    if (isApiReference(value)) {
      const { id, contentType } = value.meta;
      if (contentType === '_asset') asset(id, value.fields ? (value as ApiRecord) : undefined);
      return value.fields || Object.keys(value).length > 1 || Object.keys(value.meta).length > 2
        ? { meta: { id, contentType } }
        : value;
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) if (isApiReference(value[i])) value[i] = reduce(value[i]);
    }
    return value;
  };
  const reduceFields = (fields: Record<string, unknown>, top: boolean): void => {
    for (const name in fields) {
      const value = fields[name];
      // A section in either shape of locale=all (see sync/sections.ts) becomes the snapshot's: locale maps at its
      // fields.
      const section = top
        ? (sectionByField(value, locales) ?? (isSection(value, locales) ? value : undefined))
        : undefined;
      if (section) reduceFields((fields[name] = section) as Record<string, unknown>, false);
      else if (isLocaleMap(value, locales)) for (const locale in value) value[locale] = reduce(value[locale]);
      else fields[name] = reduce(value);
    }
  };
  reduceFields(record.fields, true);
  return { fields: record.fields, meta: snapshotMeta(record.meta) };
}

/**
 * An asset as a snapshot holds it: `title` and `description` by locale (a plain value is the
 * default locale's), `file` with the keys the format knows. Other fields cannot be kept; their
 * names go to `dropped`.
 */
export function snapshotAsset(
  record: ApiRecord,
  locales: ReadonlySet<string>,
  defaultLocale: string,
  dropped: (name: string) => void,
): SnapshotRecord {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(record.fields)) {
    if (name === 'title' || name === 'description') {
      if (value === null || value === undefined || isObject(value)) fields[name] = value ?? null;
      else if (typeof value === 'string') fields[name] = { [defaultLocale]: value };
      else dropped(name);
      if (isObject(value) && Object.keys(value).length > 0 && !isLocaleMap(value, locales)) dropped(name);
    } else if (name === 'file' && isObject(value)) {
      const file: Record<string, unknown> = {};
      for (const key of Object.keys(fileSchema.shape))
        if (value[key] !== undefined && value[key] !== null) file[key] = value[key];
      fields.file = file;
    } else {
      dropped(name);
    }
  }
  return { fields, meta: snapshotMeta(record.meta) };
}

/** Ids compared as the numbers they are (up to 20 digits). */
export const byId = (a: { meta: { id: string } }, b: { meta: { id: string } }): number =>
  a.meta.id.length - b.meta.id.length || (a.meta.id < b.meta.id ? -1 : a.meta.id > b.meta.id ? 1 : 0);
