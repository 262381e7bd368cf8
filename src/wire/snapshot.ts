import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { fastFieldsTest } from './fast-check.ts';
import { isObject } from './schemas.ts';
import {
  assetContentType,
  recordFieldsSchema,
  localizableTypes,
  slotsOf,
  snapshotSchema,
  type ContentTypeDefinition,
  type Snapshot,
  type SnapshotRecord,
  valueIn,
} from './snapshot-format.ts';

/**
 * Reading a repository snapshot (`spec/read-api.md` §1): its structure checked by the schemas
 * of snapshot-format.ts, then the cross-references (ids, locales, aliases) that no schema sees.
 */

/** A snapshot that breaks the format; the message names the file and the JSON path of the first problem. */
export class SnapshotError extends Error {
  readonly file: string;
  readonly path: string;
  constructor(file: string, path: string, problem: string) {
    super(`${file}: ${path}: ${problem}`);
    this.name = 'SnapshotError';
    this.file = file;
    this.path = path;
  }
}

/** `['documents', 3, 'fields', 'title']` → `$.documents[3].fields.title` */
function jsonPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(String(key))) out += `.${String(key)}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function check<T>(schema: z.ZodType<T>, value: unknown, file: string, base: PropertyKey[]): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  let message = issue.message;
  if (issue.code === 'unrecognized_keys')
    message = `unknown key ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`;
  throw new SnapshotError(file, jsonPath([...base, ...issue.path]), message);
}

/** Parses and validates a snapshot; `file` only labels error messages. */
export function parseSnapshot(raw: unknown, file: string): Snapshot {
  const snapshot = check(snapshotSchema, raw, file, []);
  const { repository } = snapshot;
  const fail = (path: PropertyKey[], problem: string): never => {
    throw new SnapshotError(file, jsonPath(path), problem);
  };

  const localeKeys = repository.locales.map((l) => l.key);
  const seenLocales = new Set<string>();
  repository.locales.forEach((locale, i) => {
    if (seenLocales.has(locale.key))
      fail(['repository', 'locales', i, 'key'], `duplicate locale ${JSON.stringify(locale.key)}`);
    seenLocales.add(locale.key);
  });
  if (!seenLocales.has(repository.defaultLocale)) {
    fail(
      ['repository', 'defaultLocale'],
      `${JSON.stringify(repository.defaultLocale)} is not one of the locales (${localeKeys.join(', ')})`,
    );
  }
  repository.locales.forEach((locale, i) => {
    const path = ['repository', 'locales', i, 'fallback'];
    if (locale.key === repository.defaultLocale) {
      if (locale.fallback) fail(path, 'the default locale cannot have a fallback');
      return;
    }
    const visited = new Set([locale.key]);
    let next = locale.fallback;
    while (next !== undefined && next !== repository.defaultLocale) {
      if (!seenLocales.has(next)) fail(path, `fallback ${JSON.stringify(next)} is not one of the locales`);
      if (visited.has(next)) fail(path, `fallback chain of ${JSON.stringify(locale.key)} has a cycle`);
      visited.add(next);
      next = repository.locales.find((l) => l.key === next)?.fallback;
    }
    if (locale.fallback !== undefined && next === undefined) {
      fail(
        path,
        `fallback chain of ${JSON.stringify(locale.key)} must end at the default locale ${repository.defaultLocale}`,
      );
    }
  });

  const types = new Map<string, ContentTypeDefinition>();
  snapshot.contentTypes.forEach((type, i) => {
    if (type.apiId === '_asset') fail(['contentTypes', i, 'apiId'], '"_asset" is reserved for assets');
    if (types.has(type.apiId))
      fail(['contentTypes', i, 'apiId'], `duplicate content type ${JSON.stringify(type.apiId)}`);
    types.set(type.apiId, type);
    // Filters, sorting and includes name a field inside a section by its own API id: unique across the type's sections.
    const names = new Set<string>();
    const sections = new Set(type.fields.flatMap((field) => field.section ?? []));
    type.fields.forEach((field, j) => {
      if (names.has(field.apiId))
        fail(
          ['contentTypes', i, 'fields', j, 'apiId'],
          `duplicate field ${JSON.stringify(field.apiId)} ` +
            "(a field's API id is unique in its content type, across sections)",
        );
      names.add(field.apiId);
      if (sections.has(field.apiId))
        fail(
          ['contentTypes', i, 'fields', j, 'apiId'],
          `${JSON.stringify(field.apiId)} is the API id of a section of this content type too`,
        );
      if (field.localized && !localizableTypes.has(field.type)) {
        fail(
          ['contentTypes', i, 'fields', j, 'localized'],
          `a ${field.type} field cannot be localized (only text, richtext, markdown, number, select and asset)`,
        );
      }
    });
  });

  // Per content type, one check of a record's fields: the fast test, and the zod schema (built
  // when first needed) where it refuses, for the verdict and the message.
  const fieldChecks = new Map<string, (fields: Record<string, unknown>, path: PropertyKey[]) => void>();
  const checkFields = (type: ContentTypeDefinition, fields: Record<string, unknown>, path: PropertyKey[]) => {
    let checkOf = fieldChecks.get(type.apiId);
    if (!checkOf) {
      const fast = fastFieldsTest(type, localeKeys);
      let schema: z.ZodType | undefined;
      // A field named like a member of every object (constructor, toString…) that a record lacks
      // would be checked as that member: such records (and sections) lose their prototype, so the
      // check reads only what they hold (the server's own reads take own properties only).
      const slots = slotsOf(type);
      const inherited = (names: string[]) => names.filter((name) => name in Object.prototype);
      const top = inherited(slots.map((slot) => slot.section ?? slot.field.apiId));
      const inSections = slots
        .flatMap((slot) =>
          slot.section === undefined
            ? []
            : [{ section: slot.section, names: inherited(slot.fields.map((f) => f.apiId)) }],
        )
        .filter((s) => s.names.length > 0);
      const ownOnly = (value: Record<string, unknown>, names: string[]) => {
        if (names.some((name) => !Object.hasOwn(value, name))) Object.setPrototypeOf(value, null);
      };
      checkOf = (value, at) => {
        ownOnly(value, top);
        for (const { section, names } of inSections) {
          const held = Object.hasOwn(value, section) ? value[section] : undefined;
          if (isObject(held)) ownOnly(held, names);
        }
        if (!fast(value)) check((schema ??= recordFieldsSchema(type, localeKeys)), value, file, [...at, 'fields']);
      };
      fieldChecks.set(type.apiId, checkOf);
    }
    checkOf(fields, path);
  };
  const ids = new Map<string, PropertyKey[]>();
  const records = [
    ...snapshot.documents.map((record, i) => ({ record, path: ['documents', i] as PropertyKey[] })),
    ...snapshot.assets.map((record, i) => ({ record, path: ['assets', i] as PropertyKey[] })),
  ];
  for (const { record, path } of records) {
    const isAsset = path[0] === 'assets';
    const type = isAsset ? assetContentType : types.get(record.meta.contentType);
    if (isAsset && record.meta.contentType !== '_asset')
      fail([...path, 'meta', 'contentType'], 'an asset must have contentType "_asset"');
    if (!type)
      fail([...path, 'meta', 'contentType'], `unknown content type ${JSON.stringify(record.meta.contentType)}`);
    if (ids.has(record.meta.id))
      fail([...path, 'meta', 'id'], `duplicate id ${record.meta.id} (also at ${jsonPath(ids.get(record.meta.id)!)})`);
    ids.set(record.meta.id, path);
    if (Date.parse(record.meta.updatedAt) < Date.parse(record.meta.createdAt))
      fail([...path, 'meta', 'updatedAt'], 'is before createdAt');
    checkFields(type!, record.fields, path);
  }

  // A reference whose target exists must name the target's real content type; dangling ones are allowed.
  const contentTypeOf = new Map<string, string>();
  for (const { record } of records) contentTypeOf.set(record.meta.id, record.meta.contentType);
  const referenceFields = new Map(
    [...types].map(([apiId, type]) => [
      apiId,
      type.fields.filter((field) => field.type === 'relation' || field.type === 'asset'),
    ]),
  );
  snapshot.documents.forEach((record, i) => {
    for (const field of referenceFields.get(record.meta.contentType)!) {
      const raw = valueIn(record.fields, field);
      if (!raw) continue;
      const byLocale = field.localized && typeof raw === 'object' && !Array.isArray(raw);
      for (const locale of byLocale ? Object.keys(raw) : ['']) {
        const value = byLocale ? (raw as Record<string, unknown>)[locale] : raw;
        const refs = (Array.isArray(value) ? value : value ? [value] : []) as {
          meta: { id: string; contentType: string };
        }[];
        for (let k = 0; k < refs.length; k++) {
          const ref = refs[k]!;
          const actual = contentTypeOf.get(ref.meta.id);
          if (actual !== undefined && actual !== ref.meta.contentType) {
            const at = [
              'documents',
              i,
              'fields',
              ...(field.section === undefined ? [] : [field.section]),
              field.apiId,
              ...(locale ? [locale] : []),
              ...(Array.isArray(value) ? [k] : []),
              'meta',
              'contentType',
            ];
            fail(
              at,
              `reference to ${ref.meta.id} says ${JSON.stringify(ref.meta.contentType)} ` +
                `but that record is a ${JSON.stringify(actual)}`,
            );
          }
        }
      }
    }
  });

  const collections = new Set<string>();
  snapshot.collections.forEach((collection, i) => {
    if (collections.has(collection.apiId))
      fail(['collections', i, 'apiId'], `duplicate collection ${JSON.stringify(collection.apiId)}`);
    collections.add(collection.apiId);
    if (collection.contentType && !types.has(collection.contentType)) {
      fail(['collections', i, 'contentType'], `unknown content type ${JSON.stringify(collection.contentType)}`);
    }
    // A listed id that is no document (deleted since, or an asset) is simply no member; a repeated one is a mistake.
    const listed = new Map<string, number>();
    collection.members?.forEach((id, j) => {
      const first = listed.get(id);
      if (first !== undefined)
        fail(
          ['collections', i, 'members', j],
          `duplicate member ${id} (also at ${jsonPath(['collections', i, 'members', first])})`,
        );
      listed.set(id, j);
    });
  });
  const aliases = new Set<string>();
  snapshot.aliases.forEach((alias, i) => {
    if (aliases.has(alias.apiId)) fail(['aliases', i, 'apiId'], `duplicate alias ${JSON.stringify(alias.apiId)}`);
    aliases.add(alias.apiId);
    if (contentTypeOf.get(alias.document) === undefined || contentTypeOf.get(alias.document) === '_asset') {
      fail(['aliases', i, 'document'], `no document with id ${alias.document}`);
    }
  });
  return snapshot;
}

/** The path under the snapshot's folder of a relative asset URL; undefined for an absolute URL. */
export function localFilePath(url: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//')) return undefined;
  return url.replace(/^\.?\//, '');
}

/** The path under the snapshot's folder of an asset's file; undefined when its URL is absolute, or it has none. */
export function assetFilePath(asset: SnapshotRecord): string | undefined {
  const url = (asset.fields?.file as { url?: unknown } | null | undefined)?.url;
  return typeof url === 'string' ? localFilePath(url) : undefined;
}

/** Richtext HTML with the `src` of each `<img>` replaced where `map` gives a new one. */
export function mapImageSources(html: string, map: (src: string) => string | undefined): string {
  return html.replace(/(<img\b[^>]*?\ssrc=")([^"]*)(")/gi, (tag, start: string, src: string, end: string) => {
    const next = map(src);
    return next === undefined ? tag : `${start}${next}${end}`;
  });
}

/** Reads, parses and validates one snapshot file. */
export async function readSnapshotFile(file: string): Promise<Snapshot> {
  const text = await readFile(file, 'utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new SnapshotError(file, '$', `not valid JSON (${(error as Error).message})`);
  }
  return parseSnapshot(raw, file);
}
