import {
  apiIdPattern,
  type ContentTypeDefinition,
  type FieldDefinition,
  type FieldType,
  isUtcDate,
  localizableTypes,
} from '../wire/snapshot-format.ts';
import { isSection } from '../model/sections.ts';
import { type FieldKind, isEmptyObject, isLocaleMap, kindOfValue, mergeKinds } from '../model/shapes.ts';

/**
 * Content types inferred from the documents of a pull, since the Read API does not describe
 * them. The rule (stated in docs/pull.md):
 * - a field's type is what its values show: a number is a `number`, `true`/`false` a `boolean`,
 *   an ISO 8601 UTC date or timestamp a `date`, `#rrggbb` a `color`, any other string `text`
 *   (Markdown too: no value tells it), an array of strings a multiple `select`, `{ html, plain }` `richtext`, `{ lat, lng }` a
 *   `location`, references to assets `asset`, references to documents `relation`, anything else
 *   `json`; `null`, `[]` and `{}` show nothing;
 * - strings of several kinds make `text`; values that disagree otherwise (a number here, a
 *   string there) make `json`, with a warning naming the field;
 * - a field is localized when its values are objects keyed by the repository's locales (the
 *   `locale=all` shape) and its type may be localized (text, richtext, number, select, asset);
 * - a field is a section when every value it has is an object of fields whose keys are API ids
 *   no other field or section of the content type has, and some value holds a localized field,
 *   a relation or an asset (which a JSON value does not), or the server confirms that one of its
 *   keys is a field (`confirmed`, see sections.ts); its fields are inferred by the same rules;
 * - fields stand in the order they first appear in the documents, taken by id; a section's
 *   fields where the section first appears.
 */

interface Sighting {
  kind: FieldKind | undefined;
  /** Seen as a locale map / as a plain value with something in it. */
  localized: boolean;
  plain: boolean;
  /** Two values of kinds that do not merge, for the warning. */
  clash?: [FieldKind, FieldKind];
  /**
   * Values that are objects of fields (a section, or a JSON object), and the fields seen in them; values that are not.
   */
  objects: number;
  others: number;
  inner: Map<string, Sighting>;
  /** An object of it held a localized field, a relation or an asset: a section, not a JSON value. */
  evidence: boolean;
}

const newSighting = (): Sighting => ({
  kind: undefined,
  localized: false,
  plain: false,
  objects: 0,
  others: 0,
  inner: new Map(),
  evidence: false,
});

function kindOf(value: unknown): FieldKind | undefined {
  const kind = kindOfValue(value);
  if (kind === 'date' && !isUtcDate(value as string)) return 'text';
  return kind;
}

function see(field: Sighting, value: unknown): void {
  const kind = kindOf(value);
  const merged = mergeKinds(field.kind, kind);
  if (merged === 'json' && field.kind && kind && field.kind !== 'json' && kind !== 'json')
    field.clash ??= [field.kind, kind];
  field.kind = merged;
}

/** A value of a field (at the top, or inside an object that may be a section when `depth` is 0). */
function seeValue(field: Sighting, value: unknown, locales: ReadonlySet<string>, depth: number): void {
  if (isLocaleMap(value, locales)) {
    field.localized = true;
    for (const v of Object.values(value)) see(field, v);
  } else if (value !== null && !isEmptyObject(value) && !(Array.isArray(value) && value.length === 0)) {
    field.plain = true;
    see(field, value);
    // Sections do not nest: only a field at the top may be one.
    if (depth > 0) return;
    // An object that may be a section: not a reference, richtext, location or map of locales.
    if (!isSection(value, locales)) field.others++;
    else {
      field.objects++;
      for (const [name, inner] of Object.entries(value)) {
        let sighting = field.inner.get(name);
        if (!sighting) field.inner.set(name, (sighting = newSighting()));
        seeValue(sighting, inner, locales, 1);
        if (sighting.localized || sighting.kind === 'relation' || sighting.kind === 'asset') field.evidence = true;
      }
    }
  }
}

/** What the documents show of each content type's fields: one pass over them. */
export interface Sightings {
  types: Map<string, Map<string, Sighting>>;
  /** Fields that may be sections but show nothing a JSON value could not hold: the server may confirm them. */
  unconfirmed: { contentType: string; field: string; keys: { name: string; kind: FieldType | undefined }[] }[];
}

/** Reads every field of `documents` (taken in id order), given the repository's locale keys. */
export function sightFields(
  documents: readonly { fields: Record<string, unknown>; meta: { contentType: string } }[],
  locales: ReadonlySet<string>,
): Sightings {
  const types = new Map<string, Map<string, Sighting>>();
  for (const { fields, meta } of documents) {
    let type = types.get(meta.contentType);
    if (!type) types.set(meta.contentType, (type = new Map()));
    for (const [name, value] of Object.entries(fields)) {
      let field = type.get(name);
      if (!field) type.set(name, (field = newSighting()));
      seeValue(field, value, locales, 0);
    }
  }
  // What could be a section but shows nothing a JSON value could not hold; keys that are other
  // fields of the type make it none (filters would read those fields).
  const unconfirmed: Sightings['unconfirmed'] = [];
  for (const [contentType, fields] of types) {
    for (const [name, field] of fields) {
      if (
        !isSectionShaped(field) ||
        field.evidence ||
        [...field.inner.keys()].some((key) => fields.has(key) || !apiIdPattern.test(key))
      )
        continue;
      unconfirmed.push({
        contentType,
        field: name,
        keys: [...field.inner].map(([key, inner]) => ({ name: key, kind: inner.kind })),
      });
    }
  }
  return { types, unconfirmed };
}

/** Every value an object of fields (`{}` and `null` show nothing). */
const isSectionShaped = (field: Sighting): boolean =>
  field.objects > 0 && field.others === 0 && !field.localized && field.inner.size > 0;

interface InferredTypes {
  contentTypes: ContentTypeDefinition[];
  warnings: string[];
}

/**
 * The content types the sightings show; `confirmed` names (`<contentType>.<field>`) the fields
 * the server confirmed as sections.
 */
export function contentTypesOf(sightings: Sightings, confirmed: ReadonlySet<string> = new Set()): InferredTypes {
  const warnings: string[] = [];
  const definition = (name: string, field: Sighting, where: string, section?: string): FieldDefinition => {
    let type: FieldType = field.kind ?? 'json';
    let localized = field.localized && !field.plain && localizableTypes.has(type);
    if (field.clash)
      warnings.push(`Field ${where} holds values of different types (${field.clash.join(' and ')}): it is typed json`);
    if (field.localized && field.plain) {
      warnings.push(`Field ${where} is localized in some documents and not in others: it is typed json`);
      type = 'json';
      localized = false;
    } else if (field.localized && !localized) {
      type = 'json'; // a locale-keyed object of values that cannot be localized: a json value
    }
    return { apiId: name, type, ...(localized ? { localized: true } : {}), ...(section ? { section } : {}) };
  };
  const contentTypes = [...sightings.types.keys()].sort().map((apiId): ContentTypeDefinition => {
    const fields = sightings.types.get(apiId)!;
    const sections = new Set(
      [...fields]
        .filter(([name, field]) => isSectionShaped(field) && (field.evidence || confirmed.has(`${apiId}.${name}`)))
        .map(([name]) => name),
    );
    // A section's fields are named by their own API ids in filters: unique in the content type, and no section's.
    const owners = new Map<string, number>();
    for (const [name] of fields) owners.set(name, (owners.get(name) ?? 0) + 1);
    for (const name of sections)
      for (const key of fields.get(name)!.inner.keys()) owners.set(key, (owners.get(key) ?? 0) + 1);
    for (const name of [...sections]) {
      const keys = [...fields.get(name)!.inner.keys()];
      if (!apiIdPattern.test(name) || keys.some((key) => !apiIdPattern.test(key) || owners.get(key)! > 1)) {
        sections.delete(name);
        warnings.push(
          `Field ${apiId}.${name} holds objects of fields whose names are no API ids, ` +
            `or are another field's of ${apiId}: it is typed json, not as a section`,
        );
      }
    }
    return {
      apiId,
      fields: [...fields].flatMap(([name, field]) =>
        sections.has(name)
          ? [...field.inner].map(([key, inner]) => definition(key, inner, `${apiId}.${name}.${key}`, name))
          : [definition(name, field, `${apiId}.${name}`)],
      ),
    };
  });
  return { contentTypes, warnings };
}

/** Infers the content types of `documents` (taken in id order), given the repository's locale keys. */
export function inferContentTypes(
  documents: readonly { fields: Record<string, unknown>; meta: { contentType: string } }[],
  locales: ReadonlySet<string>,
  confirmed?: ReadonlySet<string>,
): InferredTypes {
  return contentTypesOf(sightFields(documents, locales), confirmed);
}
