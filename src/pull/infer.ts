import type { ContentTypeDefinition, FieldType } from '../server/snapshot.ts';
import { type FieldKind, isLocaleMap, kindOfValue, mergeKinds } from '../sync/records.ts';

/**
 * Content types inferred from the documents of a pull, since the Read API does not describe
 * them. The rule (stated in docs/pull.md):
 * - a field's type is what its values show: a number is a `number`, `true`/`false` a `boolean`,
 *   an ISO 8601 UTC date or timestamp a `date`, `#rrggbb` a `color`, any other string `text`,
 *   an array of strings a multiple `select`, `{ html, plain }` `richtext`, `{ lat, lng }` a
 *   `location`, references to assets `asset`, references to documents `relation`, anything else
 *   `json`; `null`, `[]` and `{}` show nothing;
 * - strings of several kinds make `text`; values that disagree otherwise (a number here, a
 *   string there) make `json`, with a warning naming the field;
 * - a field is localized when its values are objects keyed by the repository's locales (the
 *   `locale=all` shape) and its type may be localized (text, richtext, number, select, asset);
 * - fields stand in the order they first appear in the documents, taken by id.
 */

/** A date field's value as the snapshot format takes it (UTC, no offset). */
const snapshotDate = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?Z)?$/;
const localizable = new Set<FieldKind>(['text', 'richtext', 'number', 'select', 'asset']);

interface Sighting {
  kind: FieldKind | undefined;
  /** Seen as a locale map / as a plain value with something in it. */
  localized: boolean;
  plain: boolean;
  /** Two values of kinds that do not merge, for the warning. */
  clash?: [FieldKind, FieldKind];
}

function kindOf(value: unknown): FieldKind | undefined {
  const kind = kindOfValue(value);
  if (kind === 'date' && !snapshotDate.test(value as string)) return 'text';
  return kind;
}

function see(field: Sighting, value: unknown): void {
  const kind = kindOf(value);
  const merged = mergeKinds(field.kind, kind);
  if (merged === 'json' && field.kind && kind && field.kind !== 'json' && kind !== 'json') field.clash ??= [field.kind, kind];
  field.kind = merged;
}

const isEmptyObject = (value: unknown): boolean =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;

export interface InferredTypes {
  contentTypes: ContentTypeDefinition[];
  warnings: string[];
}

/** Infers the content types of `documents` (taken in id order), given the repository's locale keys. */
export function inferContentTypes(documents: readonly { fields: Record<string, unknown>; meta: { contentType: string } }[], locales: ReadonlySet<string>): InferredTypes {
  const types = new Map<string, Map<string, Sighting>>();
  for (const { fields, meta } of documents) {
    let type = types.get(meta.contentType);
    if (!type) types.set(meta.contentType, (type = new Map()));
    for (const [name, value] of Object.entries(fields)) {
      let field = type.get(name);
      if (!field) type.set(name, (field = { kind: undefined, localized: false, plain: false }));
      if (isLocaleMap(value, locales)) {
        field.localized = true;
        for (const v of Object.values(value)) see(field, v);
      } else if (value !== null && !isEmptyObject(value) && !(Array.isArray(value) && value.length === 0)) {
        field.plain = true;
        see(field, value);
      }
    }
  }
  const warnings: string[] = [];
  const contentTypes = [...types.keys()].sort().map((apiId): ContentTypeDefinition => ({
    apiId,
    fields: [...types.get(apiId)!].map(([name, field]) => {
      let type: FieldType = field.kind ?? 'json';
      let localized = field.localized && !field.plain && localizable.has(type);
      if (field.clash) warnings.push(`Field ${apiId}.${name} holds values of different types (${field.clash.join(' and ')}): it is typed json`);
      if (field.localized && field.plain) {
        warnings.push(`Field ${apiId}.${name} is localized in some documents and not in others: it is typed json`);
        type = 'json';
        localized = false;
      } else if (field.localized && !localized) {
        type = 'json'; // a locale-keyed object of values that cannot be localized: a json value
      }
      return localized ? { apiId: name, type, localized: true } : { apiId: name, type };
    }),
  }));
  return { contentTypes, warnings };
}
