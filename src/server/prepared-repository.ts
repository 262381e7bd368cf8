import { createHash } from 'node:crypto';
import { fallbackChains, localeWithValue } from '../wire/locales.ts';
import { isApiReference } from '../wire/schemas.ts';
import { assetFilePath, localFilePath, mapImageSources } from '../wire/snapshot.ts';
import {
  assetContentType,
  type ContentTypeDefinition,
  type FieldDefinition,
  type Snapshot,
  type SnapshotRecord,
  valueIn,
} from '../wire/snapshot-format.ts';
import type { Normalized, ValueSource } from './values.ts';

/**
 * A snapshot prepared for serving: records by id, aliases, fallback chains, and per-locale
 * views, search text and sort ranks computed once (eagerly or on first use) and then shared
 * by every request. A prepared repository never changes; a reload builds a new one.
 */

export type LocaleView = string; // a locale key, or 'all'

interface TypeInfo {
  definition: ContentTypeDefinition;
  /** Every field by its own API id, those inside sections included (filters, sorting and includes name them so). */
  fields: Map<string, FieldDefinition>;
  /** The API ids of the sections: the keys of `fields` in a document that hold fields of their own. */
  sections: Set<string>;
  /** Relation and asset fields, in content-type order. */
  referenceFields: FieldDefinition[];
}

/** A field's values in a view: its value, or for `all` each locale's value of a localized field. */
const valuesIn = (field: FieldDefinition, value: unknown, locale: LocaleView): unknown[] =>
  locale === 'all' && field.localized && value && typeof value === 'object' ? Object.values(value) : [value];

/** A value worked out for a field or meta name in a locale view, with what it was made from. */
export interface ForSource<T> {
  source: ValueSource;
  /** The locale view the value was made for (meta names have one value for every view). */
  view: LocaleView;
  value: T;
}

/**
 * What the server works out from one snapshot when a request first needs it, kept while the
 * snapshot is live: collections in their order, columns of values, sort ranks, `like` texts,
 * the id index and the asset files. Each is filled by the function that needs it (see
 * `collectionMembers`, `column`, `ranks`, `likeTexts`, `idIndex`, `sortedDocuments`); `warmFrom`
 * in `warm.ts` does on a reloaded snapshot what the one it replaces had worked out (but the
 * orders, quick to make again from the ranks).
 */
export class SnapshotIndexes {
  /** The members of a collection in its order, by `<apiId>:<view>`. */
  readonly collections = new Map<string, { apiId: string; view: LocaleView; members: PreparedRecord[] }>();
  /** Each document's normalised value, by record index; by `<scope>.<name>:<view>`. */
  readonly columns = new Map<string, ForSource<Normalized[]>>();
  /** Each document's rank for a sort key (-1 when it has no value), by record index; keyed as `columns`. */
  readonly sortRanks = new Map<string, ForSource<Int32Array>>();
  /** Each document's texts a `like` filter matches, case-folded, by record index; keyed as `columns`. */
  readonly likeTexts = new Map<string, ForSource<(string[] | undefined)[]>>();
  /** The documents of each `meta.id`, as the id column reads it. */
  ids: Map<bigint, PreparedRecord[]> | undefined;
  /** The relative paths of the asset files, the only files `/files/<repo>/` serves. */
  localFiles: Set<string> | undefined;
  /** Every document in the order of a sorting, for the last few sortings and locales asked (see `sortedDocuments`). */
  readonly orders = new Map<string, PreparedRecord[]>();
}

export class PreparedRecord {
  readonly index: number;
  readonly id: string;
  readonly idBig: bigint;
  readonly contentType: string;
  readonly type: TypeInfo;
  readonly raw: SnapshotRecord;
  readonly meta: SnapshotRecord['meta'] & { repository: string };
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly #repository: PreparedRepository;
  readonly #views = new Map<LocaleView, Record<string, unknown>>();
  readonly #json = new Map<string, Buffer>();
  readonly #search = new Map<LocaleView, string>();

  constructor(repository: PreparedRepository, raw: SnapshotRecord, index: number, type: TypeInfo) {
    this.#repository = repository;
    this.index = index;
    this.raw = raw;
    const { id, contentType, revision, tags, createdAt, updatedAt } = raw.meta;
    this.id = id;
    this.idBig = BigInt(id);
    this.contentType = contentType;
    this.type = type;
    this.meta = { id, contentType, repository: repository.info.id, revision, tags, createdAt, updatedAt };
    this.createdAt = Date.parse(createdAt);
    this.updatedAt = Date.parse(updatedAt);
  }

  /**
   * The record's fields as answered for a locale: localized values resolved along the fallback
   * chain (`null` when no locale of the chain has one), or every locale's own value for `all`.
   */
  fields(locale: LocaleView): Record<string, unknown> {
    let view = this.#views.get(locale);
    if (view) return view;
    const chain = locale === 'all' ? undefined : this.#repository.chains.get(locale)!;
    const { sections } = this.type;
    view = {};
    for (const [name, stored] of Object.entries(this.raw.fields)) {
      if (!sections.has(name)) {
        view[name] = this.#resolveField(name, stored, chain);
        continue;
      }
      // Every rule of a field holds inside a section: its fields are resolved as the top's are.
      if (stored === null || typeof stored !== 'object') {
        view[name] = stored ?? null;
        continue;
      }
      const section: Record<string, unknown> = {};
      for (const [inner, value] of Object.entries(stored)) section[inner] = this.#resolveField(inner, value, chain);
      view[name] = section;
    }
    this.#views.set(locale, view);
    return view;
  }

  /** A field's value in a locale: along the chain for a localized one, every locale's own for `all` (no chain). */
  #resolveField(name: string, stored: unknown, chain: string[] | undefined): unknown {
    const field = this.type.fields.get(name)!;
    let value: unknown = stored ?? null;
    if (field.localized && value !== null) {
      const byLocale = value as Record<string, unknown>;
      if (chain) {
        const from = localeWithValue(byLocale, chain);
        value = from === undefined ? null : byLocale[from];
      } else {
        value = Object.fromEntries(Object.entries(byLocale).filter(([, v]) => v !== undefined && v !== null));
      }
    }
    return this.#repository.absolutize(this, name, value);
  }

  /** The value a filter, sort or search reads: the locale's value after fallback, the default locale's for `all`. */
  value(name: string, locale: LocaleView): unknown {
    const field = this.type.fields.get(name);
    return field && valueIn(this.fields(locale === 'all' ? this.#repository.defaultLocale : locale), field);
  }

  /** Ids this record references through a field, in order (every locale's for `all`). */
  references(field: FieldDefinition, locale: LocaleView): string[] {
    const value = valueIn(this.fields(locale), field);
    const ids: string[] = [];
    for (const v of valuesIn(field, value, locale)) {
      for (const ref of Array.isArray(v) ? v : [v])
        if (isApiReference(ref) && !ids.includes(ref.meta.id)) ids.push(ref.meta.id);
    }
    return ids;
  }

  /** Lower-cased text of every text, markdown, richtext and select value, for `search`. */
  searchText(locale: LocaleView): string {
    let text = this.#search.get(locale);
    if (text !== undefined) return text;
    const parts: string[] = [];
    const view = this.fields(locale);
    for (const field of this.type.definition.fields) {
      for (const value of valuesIn(field, valueIn(view, field), locale)) {
        if (value === null || value === undefined) continue;
        if (field.type === 'text' || field.type === 'markdown') parts.push(String(value));
        else if (field.type === 'richtext') parts.push(String((value as { plain: string }).plain));
        else if (field.type === 'select') parts.push(...(Array.isArray(value) ? value.map(String) : [String(value)]));
      }
    }
    text = parts.join('\u0000').toLowerCase();
    this.#search.set(locale, text);
    return text;
  }

  /** `{ fields, meta }` as an object; with `embedAssets`, its asset references replaced by the assets. */
  toObject(locale: LocaleView, embedAssets = false): { fields: Record<string, unknown>; meta: PreparedRecord['meta'] } {
    return embedAssets ? this.#repository.embedAssets(this, locale) : { fields: this.fields(locale), meta: this.meta };
  }

  /** `{ fields, meta }` as UTF-8 JSON, serialised once per locale and reused by every answer. */
  toJson(locale: LocaleView, embedAssets: boolean): Buffer {
    const key = embedAssets ? `${locale}+embed` : locale;
    let json = this.#json.get(key);
    if (json === undefined) {
      json = Buffer.from(JSON.stringify(this.toObject(locale, embedAssets)));
      this.#json.set(key, json);
    }
    return json;
  }
}

export class PreparedRepository {
  readonly snapshot: Snapshot;
  readonly apiId: string;
  readonly info: {
    id: string;
    apiId: string;
    name: string;
    defaultLocale: string;
    locales: { key: string; fallback?: string }[];
  };
  readonly apiKeys: Set<string>;
  readonly defaultLocale: string;
  /** Locale key → the keys to try in order: the locale, its fallback, …, the default locale. */
  readonly chains: Map<string, string[]>;
  readonly types = new Map<string, TypeInfo>();
  /** Field name → content type → definition, for filters and sorting on `*`. */
  readonly fieldsByName = new Map<string, Map<string, FieldDefinition>>();
  /** Documents (not assets) in snapshot order. */
  readonly documents: PreparedRecord[];
  readonly byId = new Map<string, PreparedRecord>();
  readonly aliases = new Map<string, string>();
  /** Documents by `meta.createdAt` descending, ties on `meta.id` descending: the default list order. */
  readonly defaultOrder: PreparedRecord[];
  /** A fingerprint of the snapshot's content, for ETags. */
  readonly version: string;
  /** What requests worked out from this snapshot and may use again (collections, columns, sort ranks, …). */
  readonly indexes = new SnapshotIndexes();
  readonly #filesOrigin: string;
  readonly #collators = new Map<string, Intl.Collator>();

  constructor(snapshot: Snapshot, filesOrigin: string) {
    this.snapshot = snapshot;
    const { id, apiId, name, defaultLocale, locales, apiKeys } = snapshot.repository;
    this.apiId = apiId;
    this.info = { id, apiId, name, defaultLocale, locales };
    this.apiKeys = new Set(apiKeys);
    this.chains = fallbackChains(snapshot.repository);
    this.defaultLocale = defaultLocale;
    this.#filesOrigin = filesOrigin.replace(/\/$/, '');
    this.version = createHash('sha1')
      .update(JSON.stringify(snapshot))
      .update(this.#filesOrigin)
      .digest('base64url')
      .slice(0, 16);

    for (const definition of [...snapshot.contentTypes, assetContentType]) {
      const fields = new Map(definition.fields.map((f) => [f.apiId, f]));
      const referenceFields = definition.fields.filter((f) => f.type === 'relation' || f.type === 'asset');
      const sections = new Set(definition.fields.flatMap((f) => f.section ?? []));
      this.types.set(definition.apiId, { definition, fields, sections, referenceFields });
      if (definition.apiId === '_asset') continue;
      for (const field of definition.fields) {
        let byType = this.fieldsByName.get(field.apiId);
        if (!byType) this.fieldsByName.set(field.apiId, (byType = new Map()));
        byType.set(definition.apiId, field);
      }
    }
    this.documents = snapshot.documents.map(
      (raw, i) => new PreparedRecord(this, raw, i, this.types.get(raw.meta.contentType)!),
    );
    const assets = snapshot.assets.map(
      (raw, i) => new PreparedRecord(this, raw, this.documents.length + i, this.types.get('_asset')!),
    );
    for (const record of [...this.documents, ...assets]) this.byId.set(record.id, record);
    for (const alias of snapshot.aliases) this.aliases.set(alias.apiId, alias.document);
    this.defaultOrder = [...this.documents].sort(
      (a, b) => b.createdAt - a.createdAt || (a.idBig < b.idBig ? 1 : a.idBig > b.idBig ? -1 : 0),
    );
  }

  /** The collator for comparing text in a locale (`de_DE` → `de-DE`; the default locale for `all`). */
  collator(locale: LocaleView): Intl.Collator {
    const key = locale === 'all' ? this.defaultLocale : locale;
    let collator = this.#collators.get(key);
    if (!collator) {
      try {
        collator = new Intl.Collator(key.replace('_', '-'));
      } catch {
        collator = new Intl.Collator('en');
      }
      this.#collators.set(key, collator);
    }
    return collator;
  }

  /**
   * Rewrites a relative `file.url` of an asset to an absolute URL under `/files/<repo>/`, and so
   * the `src` of an image in richtext that points to an asset's file.
   */
  absolutize(record: PreparedRecord, field: string, value: unknown): unknown {
    if (!value || typeof value !== 'object') return value;
    if (record.type.fields.get(field)?.type === 'richtext') return this.#absolutizeRichtext(value);
    if (record.contentType !== '_asset' || field !== 'file') return value;
    const file = value as { url: string };
    const url = this.#fileUrl(file.url);
    return url === undefined ? value : { ...file, url };
  }

  /** The absolute URL of a relative file path, or undefined when it is none. */
  #fileUrl(relative: string): string | undefined {
    const local = localFilePath(relative);
    if (local === undefined) return undefined;
    const path = local.split('/').map(encodeURIComponent).join('/');
    return `${this.#filesOrigin}/files/${encodeURIComponent(this.apiId)}/${path}`;
  }

  /**
   * A richtext value (or, for `locale=all`, its values by locale) with the images that show an asset's file made
   * absolute.
   */
  #absolutizeRichtext(value: object): unknown {
    const rewrite = (text: { html: string; plain: string }) => {
      const html = mapImageSources(text.html, (src) => {
        const local = localFilePath(src);
        return local !== undefined && this.localFiles().has(local) ? this.#fileUrl(src) : undefined;
      });
      return html === text.html ? text : { ...text, html };
    };
    if ('html' in value) return rewrite(value as { html: string; plain: string });
    return Object.fromEntries(
      Object.entries(value).map(([locale, text]) => [
        locale,
        text && typeof text === 'object' && 'html' in text ? rewrite(text as { html: string; plain: string }) : text,
      ]),
    );
  }

  /**
   * The relative file paths of the assets, the only files `/files/<repo>/` serves: the folder
   * beside a snapshot also holds the snapshot itself, API keys included.
   */
  localFiles(): Set<string> {
    this.indexes.localFiles ??= new Set(this.snapshot.assets.flatMap((asset) => assetFilePath(asset) ?? []));
    return this.indexes.localFiles;
  }

  /** The record with every asset reference in its fields replaced by the asset record. */
  embedAssets(
    record: PreparedRecord,
    locale: LocaleView,
  ): { fields: Record<string, unknown>; meta: PreparedRecord['meta'] } {
    const fields = record.fields(locale);
    const assetFields = record.type.referenceFields.filter((f) => f.type === 'asset' && valueIn(fields, f));
    if (assetFields.length === 0) return record.toObject(locale);
    const embed = (refs: unknown): unknown =>
      Array.isArray(refs)
        ? refs.map((ref) => {
            const asset = isApiReference(ref) ? this.byId.get(ref.meta.id) : undefined;
            return asset && asset.contentType === '_asset' ? asset.toObject(locale) : ref;
          })
        : refs;
    const out = { ...fields };
    for (const field of assetFields) {
      const value = valueIn(fields, field);
      // Inside a section, in a copy of the section: the view is shared by every answer.
      const holder =
        field.section === undefined
          ? out
          : (out[field.section] = { ...(out[field.section] as Record<string, unknown>) });
      holder[field.apiId] =
        locale === 'all' && field.localized && value && typeof value === 'object' && !Array.isArray(value)
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, embed(v)]))
          : embed(value);
    }
    return { fields: out, meta: record.meta };
  }
}
