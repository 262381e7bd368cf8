import { filterOperators } from '../../src/wire/schemas.ts';
import type { BatteryMethod, BatteryRequest } from './compare-servers.ts';
import type { CoverContentType, SnapshotJson } from './cover-snapshot.ts';

export {
  coverApiId,
  coverKey,
  coverSnapshot,
  danglingIds,
  tinyPng,
  writeCoverSnapshot,
  writeSnapshot,
} from './cover-snapshot.ts';
export type { CoverSnapshot, SnapshotJson } from './cover-snapshot.ts';
export {
  type Answer,
  compareAnswers,
  compareServers,
  describeDifferences,
  type Difference,
  fetchAnswer,
  type Target,
} from './compare-servers.ts';
export type { BatteryMethod, BatteryRequest } from './compare-servers.ts';

/**
 * Round trips: proof that a copy of a repository (a pulled snapshot, say) answers exactly like
 * the original. `battery` makes a few hundred requests over every route and option of the Read
 * API (spec/read-api.md §2–§8, §10) for a repository; `compareServers` (compare-servers.ts,
 * exported here too) sends each to two servers and lists where their answers differ: status,
 * content type or body bytes, each server's own origin in a body replaced by `<origin>` first
 * (`/files` answers are compared raw). `coverSnapshot` (cover-snapshot.ts) is a repository to try.
 */

/** What `battery` needs to know of a repository; `batteryInfo` reads it from a snapshot. */
export interface BatteryInfo {
  apiId: string;
  documentIds: string[];
  /** The content type of each document, by id: the single-document requests take the first of each type. */
  documentTypes?: Record<string, string>;
  assetIds: string[];
  /** The relative file paths of the assets (`images/apples.png`), served under `/files/<apiId>/`. */
  assetFiles: string[];
  collections: string[];
  aliases: string[];
  /** Locale keys, the default one first. */
  locales: string[];
  contentTypes: CoverContentType[];
  /** Some values (up to 3) of each field in the default locale, by field name: filters on them match something. */
  samples?: Record<string, unknown[]>;
  /** Tags of the documents. */
  tags?: string[];
  /** Words of text, richtext and select values, by locale key: what `search` looks for. */
  words?: Record<string, string[]>;
}

const isEmpty = (value: unknown) =>
  value === undefined ||
  value === null ||
  value === '' ||
  (Array.isArray(value) && value.length === 0) ||
  (typeof value === 'object' && Object.keys(value).length === 0);

/** Reads a battery's information from a snapshot (the original's: a copy answers the same requests). */
export function batteryInfo(snapshot: SnapshotJson): BatteryInfo {
  const { repository } = snapshot;
  const locales = [
    repository.defaultLocale,
    ...repository.locales.map((l) => l.key).filter((k) => k !== repository.defaultLocale),
  ];
  const samples: Record<string, unknown[]> = {};
  const words: Record<string, string[]> = Object.fromEntries(locales.map((l) => [l, []]));
  for (const document of snapshot.documents) {
    const type = snapshot.contentTypes.find((t) => t.apiId === document.meta.contentType);
    for (const field of type?.fields ?? []) {
      const holder =
        field.section === undefined
          ? document.fields
          : (document.fields[field.section] as Record<string, unknown> | null | undefined);
      const stored = holder?.[field.apiId];
      const byLocale: Record<string, unknown> =
        field.localized && stored && typeof stored === 'object'
          ? (stored as Record<string, unknown>)
          : { [repository.defaultLocale]: stored };
      const value = byLocale[repository.defaultLocale];
      const list = (samples[field.apiId] ??= []);
      if (!isEmpty(value) && list.length < 3 && !list.some((v) => JSON.stringify(v) === JSON.stringify(value)))
        list.push(value);
      if (!['text', 'richtext', 'select'].includes(field.type)) continue;
      for (const [locale, v] of Object.entries(byLocale)) {
        const text =
          field.type === 'richtext' ? (v as { plain?: string } | null)?.plain : Array.isArray(v) ? v.join(' ') : v;
        if (typeof text !== 'string' || !words[locale]) continue;
        for (const word of text.split(/[^\p{L}]+/u))
          if (word.length >= 4 && words[locale]!.length < 6 && !words[locale]!.includes(word))
            words[locale]!.push(word);
      }
    }
  }
  return {
    apiId: repository.apiId,
    documentIds: snapshot.documents.map((d) => d.meta.id),
    documentTypes: Object.fromEntries(snapshot.documents.map((d) => [d.meta.id, d.meta.contentType])),
    assetIds: snapshot.assets.map((a) => a.meta.id),
    assetFiles: snapshot.assets
      .map((a) => (a.fields.file as { url?: string } | null | undefined)?.url)
      .filter((url): url is string => typeof url === 'string' && !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(url))
      .map((url) => url.replace(/^\.?\//, '')),
    collections: snapshot.collections.map((c) => c.apiId),
    aliases: snapshot.aliases.map((a) => a.apiId),
    locales,
    contentTypes: snapshot.contentTypes,
    samples,
    tags: [...new Set(snapshot.documents.flatMap((d) => d.meta.tags))].sort(),
    words,
  };
}

type Options = Record<string, unknown>;
const enc = encodeURIComponent;

/** Options as bracketed parameters: objects nest, lists of objects are indexed, lists of values are joined with ",". */
export function bracketed(options: Options): string {
  const pairs: string[] = [];
  const walk = (name: string, value: unknown): void => {
    if (Array.isArray(value) && value.some((v) => typeof v === 'object' && v !== null))
      value.forEach((v, i) => {
        walk(`${name}[${i}]`, v);
      });
    else if (Array.isArray(value)) pairs.push(`${name}=${enc(value.join(','))}`);
    else if (typeof value === 'object' && value !== null)
      for (const [k, v] of Object.entries(value)) walk(`${name}[${enc(k)}]`, v);
    else pairs.push(`${name}=${enc(String(value))}`);
  };
  for (const [name, value] of Object.entries(options)) walk(enc(name), value);
  return pairs.join('&');
}

/** Options as one `query` parameter of URI-encoded JSON, as the official SDKs send them. */
export const queryParameter = (options: Options): string => `query=${enc(JSON.stringify(options))}`;

/** Whether the options survive the bracket form: lists of values must not hold commas. */
const bracketSafe = (options: Options): boolean => {
  const ok = (value: unknown): boolean =>
    Array.isArray(value)
      ? value.every((v) => (typeof v === 'object' && v !== null ? ok(v) : !String(v).includes(',')))
      : typeof value === 'object' && value !== null
        ? Object.values(value).every(ok)
        : true;
  return ok(options);
};

type Form = 'brackets' | 'query';

/**
 * The battery of requests for a repository: every route, and every option over the list and
 * single-record routes. `status` on each is what the spec says the original answers.
 */
export function battery(info: BatteryInfo): BatteryRequest[] {
  const out: BatteryRequest[] = [];
  const names = new Set<string>();
  const base = `/v1/${enc(info.apiId)}`;
  const defaultLocale = info.locales[0]!;
  const add = (name: string, method: BatteryMethod, path: string, extra: { body?: unknown; status?: number } = {}) => {
    let unique = name;
    for (let n = 2; names.has(unique); n++) unique = `${name} #${n}`;
    names.add(unique);
    out.push({
      name: unique,
      method,
      path,
      ...(extra.body !== undefined ? { body: extra.body } : {}),
      ...(extra.status !== undefined ? { status: extra.status } : {}),
    });
  };
  /** A GET with options in a form (brackets unless they hold lists with commas). */
  const get = (name: string, route: string, options: Options = {}, form: Form = 'brackets', status?: number) => {
    const useForm = form === 'brackets' && !bracketSafe(options) ? 'query' : form;
    const query =
      Object.keys(options).length === 0
        ? ''
        : `?${useForm === 'brackets' ? bracketed(options) : queryParameter(options)}`;
    add(
      Object.keys(options).length === 0 ? name : `${name} [${useForm}]`,
      'GET',
      `${base}${route}${query}`,
      status === undefined ? {} : { status },
    );
  };
  const list = '/documents';
  const all = { limit: 1000 };
  const firstOf = (type: string) => info.documentIds.find((id) => info.documentTypes?.[id] === type);
  const fields = info.contentTypes.flatMap((t) => t.fields.map((f) => ({ ...f, contentType: t.apiId })));
  const referenceCount = (t: CoverContentType) =>
    t.fields.filter((f) => f.type === 'relation' || f.type === 'asset').length;
  const richest = [...info.contentTypes].sort((x, y) => referenceCount(y) - referenceCount(x))[0];
  /** The document the single-record options are tried on: the first of the content type with the most reference fields. */
  const doc0 =
    (richest && info.documentIds.find((id) => info.documentTypes?.[id] === richest.apiId)) ?? info.documentIds[0]!;
  const fieldOf = (type: string, localized?: boolean) =>
    fields.find((f) => f.type === type && (localized === undefined || !!f.localized === localized));
  const relation = fieldOf('relation');
  const asset = fieldOf('asset');
  const sample = (name: string, i = 0) => info.samples?.[name]?.[i];

  // Routes (§2, §10).
  add('repository', 'GET', base);
  add('repository, trailing slash', 'GET', `${base}/`);
  add('documents', 'GET', `${base}${list}`);
  add('documents, trailing slash', 'GET', `${base}${list}/`);
  for (const locale of [...info.locales, 'all']) get(`documents locale=${locale}`, list, { ...all, locale });
  const spread = Math.max(1, Math.ceil(info.documentIds.length / 8));
  info.documentIds.forEach((id, i) => {
    if (i % spread === 0) get(`document ${id} locale=all`, `${list}/${enc(id)}`, { locale: 'all' });
  });
  const firsts = info.documentTypes
    ? info.contentTypes.map((type) => [firstOf(type.apiId), type.apiId] as const)
    : [[doc0, 'first'] as const];
  for (const [id, type] of firsts) {
    if (id === undefined) continue;
    get(`document ${id} (${type})`, `${list}/${enc(id)}`);
  }
  for (const locale of info.locales)
    get(`document ${doc0} locale=${locale}`, `${list}/${enc(doc0)}`, { locale }, 'query');
  for (const alias of info.aliases) {
    get(`alias ${alias}`, `/alias/${enc(alias)}`);
    get(`alias ${alias} locale=all`, `/alias/${enc(alias)}`, { locale: 'all' });
    get(`alias ${alias} includes=1`, `/alias/${enc(alias)}`, { includes: 1 });
  }
  for (const collection of info.collections) {
    get(`collection ${collection}`, `/collections/${enc(collection)}`);
    get(`collection ${collection} locale=all`, `/collections/${enc(collection)}`, { ...all, locale: 'all' });
  }
  info.assetIds.forEach((id, i) => {
    get(`asset ${id}`, `/assets/${enc(id)}`);
    if (i < 3) get(`asset ${id} locale=all`, `/assets/${enc(id)}`, { locale: 'all' });
  });
  if (info.assetIds[0])
    get(`asset ${info.assetIds[0]} locale=${info.locales.at(-1)}`, `/assets/${enc(info.assetIds[0])}`, {
      locale: info.locales.at(-1),
    });
  const fileRoute = (path: string) => `/files/${enc(info.apiId)}/${path.split('/').map(enc).join('/')}`;
  for (const path of info.assetFiles) add(`file ${path}`, 'GET', fileRoute(path));
  if (info.assetFiles[0]) add(`file ${info.assetFiles[0]} HEAD`, 'HEAD', fileRoute(info.assetFiles[0]));
  add('file not pointed to by an asset', 'GET', fileRoute(`${info.apiId}.json`), { status: 404 });
  add('documents HEAD', 'HEAD', `${base}${list}`);
  add(`document ${doc0} HEAD`, 'HEAD', `${base}${list}/${enc(doc0)}`);
  add('unknown document', 'GET', `${base}${list}/1`, { status: 404 });
  if (info.documentIds[0]) add('a document asked as an asset', 'GET', `${base}/assets/${enc(doc0)}`, { status: 404 });
  if (info.assetIds[0])
    add('an asset asked as a document', 'GET', `${base}${list}/${enc(info.assetIds[0])}`, { status: 404 });
  add('unknown alias', 'GET', `${base}/alias/no-such-alias`, { status: 404 });
  add('unknown collection', 'GET', `${base}/collections/no-such-collection`, { status: 404 });
  add('unknown repository', 'GET', `/v1/${enc(info.apiId)}-no-such-repository/documents`, { status: 404 });
  add('unknown route', 'GET', `${base}/things`, { status: 404 });
  add('POST on a document', 'POST', `${base}${list}/${enc(doc0)}`, { body: {}, status: 405 });

  // Filters (§4): every operator on one field of each type (its localized variant, in turn in each locale), the other fields once.
  const operators = filterOperators;
  const filterable = fields.filter((f) => f.type !== 'relation' && f.type !== 'asset');
  const isMultiple = (name: string) => info.samples?.[name]?.some(Array.isArray) ?? false;
  const classOf = (f: (typeof fields)[number]) =>
    f.type === 'select' ? (isMultiple(f.apiId) ? 'select multiple' : 'select single') : f.type;
  const representatives = new Map<string, (typeof fields)[number]>();
  for (const f of [...filterable.filter((f) => f.localized), ...filterable])
    if (!representatives.has(classOf(f))) representatives.set(classOf(f), f);
  const filterValues = (f: (typeof fields)[number]) => {
    const scalar = (v: unknown): string | number | boolean => {
      if (f.type === 'richtext') return String((v as { plain?: string })?.plain ?? '');
      if (f.type === 'location') return `${(v as { lat: number }).lat},${(v as { lng: number }).lng}`;
      if (f.type === 'json') return JSON.stringify(v);
      if (Array.isArray(v)) return String(v[0] ?? 'x');
      return (v ?? 'x') as string | number | boolean;
    };
    const first = scalar(sample(f.apiId, 0));
    const second = scalar(sample(f.apiId, 1) ?? sample(f.apiId, 0));
    const text = String(first);
    const pattern =
      f.type === 'number' || f.type === 'date' || f.type === 'location'
        ? `${text.slice(0, 2)}%`
        : f.type === 'boolean'
          ? '%u%'
          : `%${text.replace(/%/g, '').slice(1, 4)}%`;
    const ordered = f.type === 'date' ? text.slice(0, 10) : first; // a date-only value means midnight UTC
    return {
      equal: first,
      notEqual: first,
      greaterThan: ordered,
      greaterThanEqual: first,
      lessThan: ordered,
      lessThanEqual: first,
      like: pattern,
      notLike: pattern,
      empty: true,
      notEmpty: '',
      in: [first, second],
      notIn: [first],
    };
  };
  const localeCycle = [undefined, ...info.locales.slice(1), 'all'];
  for (const [kind, f] of representatives) {
    const values = filterValues(f);
    operators.forEach((op, k) => {
      const locale = f.localized ? localeCycle[k % localeCycle.length] : undefined;
      const options = {
        ...all,
        filters: [{ [`*.fields.${f.apiId}`]: { [op]: values[op] } }],
        ...(locale ? { locale } : {}),
      };
      get(
        `filter ${f.apiId} (${kind}${f.localized ? ', localized' : ''}) ${op}${locale ? ` locale=${locale}` : ''}`,
        list,
        options,
        k % 2 === 0 ? 'brackets' : 'query',
      );
    });
  }
  const represented = new Set([...representatives.values()].map((f) => f.apiId));
  filterable
    .filter((f, i, a) => !represented.has(f.apiId) && a.findIndex((g) => g.apiId === f.apiId) === i)
    .forEach((f, k) => {
      const op = (['equal', 'notEmpty', 'like', 'in'] as const)[k % 4]!;
      get(
        `filter ${f.apiId} (${f.type}) ${op}`,
        list,
        { ...all, filters: [{ [`*.fields.${f.apiId}`]: { [op]: filterValues(f)[op] } }] },
        k % 2 === 0 ? 'query' : 'brackets',
      );
    });
  const ids = info.documentIds;
  const middle = ids[Math.floor(ids.length / 2)]!;
  const tag0 = info.tags?.[0] ?? 'featured';
  const tag1 = info.tags?.[1] ?? tag0;
  const metaFilters: [string, Options][] = [
    ['id equal', { 'meta.id': { equal: ids[0] } }],
    ['id in', { 'meta.id': { in: ids.slice(0, 3) } }],
    ['id greaterThan', { 'meta.id': { greaterThan: middle } }],
    ['id lessThanEqual', { 'meta.id': { lessThanEqual: middle } }],
    ['contentType equal', { 'meta.contentType': { equal: info.contentTypes[0]?.apiId } }],
    ['contentType notIn', { 'meta.contentType': { notIn: info.contentTypes.slice(0, 2).map((t) => t.apiId) } }],
    ['revision greaterThanEqual', { 'meta.revision': { greaterThanEqual: 3 } }],
    ['tags equal', { 'meta.tags': { equal: tag0 } }],
    ['tags in', { 'meta.tags': { in: [tag0, tag1] } }],
    ['tags notEqual', { 'meta.tags': { notEqual: tag0 } }],
    ['tags empty', { 'meta.tags': { empty: true } }],
    ['createdAt lessThan', { 'meta.createdAt': { lessThan: '2023-07-01T00:00:00.000Z' } }],
    ['updatedAt greaterThan date-only', { 'meta.updatedAt': { greaterThan: '2023-07-01' } }],
    ['createdAt like', { 'meta.createdAt': { like: '2023-0%' } }],
  ];
  metaFilters.forEach(([name, condition], k) => {
    const [path, tests] = Object.entries(condition)[0]!;
    get(
      `filter meta.${name}`,
      list,
      { ...all, filters: [{ [`*.${path}`]: tests }] },
      k % 2 === 0 ? 'brackets' : 'query',
    );
  });
  // and/or on fields of one content type: a text, a number (not localized, if there is one) and a boolean.
  const group = info.contentTypes
    .map((t) => {
      const of = (type: string) =>
        fields.find((f) => f.contentType === t.apiId && f.type === type && !f.localized) ??
        fields.find((f) => f.contentType === t.apiId && f.type === type);
      return { text: of('text'), number: of('number'), boolean: of('boolean') };
    })
    .find((g) => g.text && g.number && g.boolean);
  const text = group?.text ?? representatives.get('text') ?? filterable[0];
  const number = group?.number ?? representatives.get('number');
  const boolean = group?.boolean ?? representatives.get('boolean');
  if (text && number && boolean) {
    const threshold = Number(sample(number.apiId, 0) ?? 1);
    const t = `*.fields.${text.apiId}`;
    const n = `*.fields.${number.apiId}`;
    const b = `*.fields.${boolean.apiId}`;
    const textValue = filterValues(text).like;
    get(
      'filters and/or: (a AND b) OR (c AND d)',
      list,
      {
        ...all,
        filters: [
          { [n]: { greaterThan: threshold } },
          { and: { [b]: { equal: true } } },
          { or: { [t]: { like: textValue } } },
          { and: { [n]: { lessThanEqual: threshold } } },
        ],
      },
      'query',
    );
    get(
      'filters or',
      list,
      { ...all, filters: [{ [b]: { equal: false } }, { or: { [n]: { greaterThanEqual: threshold } } }] },
      'brackets',
    );
    get(
      'filters OR and AND in upper case',
      list,
      {
        ...all,
        filters: [
          { [b]: { equal: true } },
          { AND: { [n]: { lessThan: threshold } } },
          { OR: { '*.meta.tags': { equal: tag0 } } },
        ],
      },
      'query',
    );
    get(
      'filters: two operators in one condition',
      list,
      { ...all, filters: [{ [n]: { greaterThan: threshold / 2, lessThanEqual: threshold * 2 } }] },
      'brackets',
    );
    get(
      'filters: two paths in one condition',
      list,
      { ...all, filters: [{ [n]: { notEmpty: true }, [b]: { equal: true } }] },
      'query',
    );
    const typed = fields.find((f) => f.apiId === text.apiId)!.contentType;
    get(`filter ${typed}.fields.${text.apiId} notEqual (content type scope)`, list, {
      ...all,
      filters: [{ [`${typed}.fields.${text.apiId}`]: { notEqual: filterValues(text).equal } }],
    });
  }
  get('filter on a field no content type has', list, { ...all, filters: [{ '*.fields.noSuchField': { equal: 'x' } }] });
  if (relation)
    get(
      `filter on relation ${relation.apiId} (400)`,
      list,
      { filters: [{ [`*.fields.${relation.apiId}`]: { equal: ids[0] } }] },
      'brackets',
      400,
    );
  if (asset)
    get(
      `filter on asset ${asset.apiId} (400)`,
      list,
      { filters: [{ [`*.fields.${asset.apiId}`]: { notEmpty: true } }] },
      'query',
      400,
    );
  get('filter with an unknown operator (400)', list, { filters: [{ '*.meta.id': { near: 1 } }] }, 'brackets', 400);
  if (number)
    get(
      'filter with a value not a number (400)',
      list,
      { filters: [{ [`*.fields.${number.apiId}`]: { greaterThan: 'abc' } }] },
      'query',
      400,
    );
  get('filter with a malformed path (400)', list, { filters: [{ 'fields.title': { equal: 'x' } }] }, 'brackets', 400);

  // Sorting (§5): every sortable type both ways, every meta name but tags both ways, the other fields one way.
  const sortable = [...representatives.values()].filter((f) => f.type !== 'json');
  sortable.forEach((f, k) => {
    for (const direction of ['ASC', 'DESC'])
      get(
        `sort ${f.apiId} (${classOf(f)}) ${direction}`,
        list,
        { ...all, sorting: { [`fields.${f.apiId}`]: direction } },
        k % 2 === 0 ? 'brackets' : 'query',
      );
  });
  const sortedNames = new Set(sortable.map((f) => f.apiId));
  filterable
    .filter(
      (f, i, a) => f.type !== 'json' && !sortedNames.has(f.apiId) && a.findIndex((g) => g.apiId === f.apiId) === i,
    )
    .forEach((f, k) => {
      get(`sort ${f.apiId} (${f.type}) ${k % 2 ? 'desc' : 'asc'}`, list, {
        ...all,
        sorting: { [`fields.${f.apiId}`]: k % 2 ? 'desc' : 'asc' },
      });
    });
  ['id', 'contentType', 'revision', 'createdAt', 'updatedAt'].forEach((name, k) => {
    get(`sort meta.${name} 1`, list, { ...all, sorting: { [`meta.${name}`]: 1 } }, k % 2 === 0 ? 'query' : 'brackets');
    get(
      `sort meta.${name} -1`,
      list,
      { ...all, sorting: { [`meta.${name}`]: -1 } },
      k % 2 === 0 ? 'brackets' : 'query',
    );
  });
  if (text && number) {
    get(
      'sort by two keys',
      list,
      { ...all, sorting: { 'meta.contentType': 'ASC', [`fields.${number.apiId}`]: 'DESC' } },
      'query',
    );
    for (const locale of [info.locales[1], 'all'])
      get(`sort ${text.apiId} ASC locale=${locale}`, list, {
        ...all,
        locale,
        sorting: { [`fields.${text.apiId}`]: 'ASC' },
      });
  }
  const json = fieldOf('json');
  if (json)
    get(`sort on json ${json.apiId} (400)`, list, { sorting: { [`fields.${json.apiId}`]: 'ASC' } }, 'brackets', 400);
  if (relation)
    get(
      `sort on relation ${relation.apiId} (400)`,
      list,
      { sorting: { [`fields.${relation.apiId}`]: 'ASC' } },
      'query',
      400,
    );
  get('sort on meta.tags (400)', list, { sorting: { 'meta.tags': 'ASC' } }, 'brackets', 400);
  get('sort with a bad direction (400)', list, { sorting: { 'meta.id': 'up' } }, 'brackets', 400);

  // Includes and embedded assets (§6).
  for (const level of [0, 1, 2, 3]) {
    get(`documents includes=${level}`, list, { includes: level });
    get(`document ${doc0} includes=${level}`, `${list}/${enc(doc0)}`, { includes: level });
  }
  get('documents includes=2 limit=1000', list, { ...all, includes: 2 });
  get('documents includes=6 (400)', list, { includes: 6 }, 'brackets', 400);
  const referenceFields = fields.filter((f) => f.type === 'relation' || f.type === 'asset');
  /** The content type a reference field points to, as its samples show. */
  const targetOf = (f: (typeof fields)[number]): string | undefined => {
    if (f.type === 'asset') return '_asset';
    const first = info.samples?.[f.apiId]?.flat()[0] as { meta?: { contentType?: string } } | undefined;
    return first?.meta?.contentType;
  };
  /** A field map going `depth` levels on from `from`, each level a reference field of the content type the last one points to. */
  const chain = (depth: number, from: (typeof fields)[number], seen: string[] = [from.apiId]): Options | 1 => {
    const target = targetOf(from);
    const candidates = referenceFields.filter((f) => f.contentType === target);
    const next =
      candidates.find((f) => f.type === 'relation' && !seen.includes(f.apiId)) ??
      candidates.find((f) => !seen.includes(f.apiId));
    if (depth === 0 || !next) return 1;
    return { [`*.fields.${next.apiId}`]: chain(depth - 1, next, [...seen, next.apiId]) };
  };
  for (const f of referenceFields.filter((f, i, a) => a.findIndex((g) => g.apiId === f.apiId) === i))
    get(`includes field ${f.apiId}`, list, { ...all, includes: { [`*.fields.${f.apiId}`]: 1 } });
  const relations = referenceFields.filter((f) => f.type === 'relation');
  if (relations.length > 0) {
    // The relation whose chain goes deepest.
    const depthOf = (map: Options | 1): number => (map === 1 ? 0 : 1 + depthOf(Object.values(map)[0] as Options | 1));
    const outer = [...relations].sort((x, y) => depthOf(chain(4, y)) - depthOf(chain(4, x)))[0]!;
    get(
      `includes nested from ${outer.apiId}`,
      list,
      { ...all, includes: { [`*.fields.${outer.apiId}`]: chain(2, outer) } },
      'brackets',
    );
    get(
      `includes nested from ${outer.apiId}, 3 deep`,
      list,
      { ...all, includes: { [`*.fields.${outer.apiId}`]: chain(3, outer) } },
      'query',
    );
    const typed = fields.find((f) => f.type === 'asset' && f.localized) ?? asset;
    if (typed)
      get(
        `includes ${typed.contentType}.fields.${typed.apiId} locale=all`,
        list,
        { ...all, locale: 'all', includes: { [`${typed.contentType}.fields.${typed.apiId}`]: 1 } },
        'query',
      );
    get(
      `document ${doc0} includes nested`,
      `${list}/${enc(doc0)}`,
      { includes: { [`*.fields.${outer.apiId}`]: chain(2, outer) } },
      'query',
    );
  }
  get('documents embedAssets', list, { ...all, embedAssets: true });
  get('documents embedAssets=1 includes=2', list, { ...all, embedAssets: 1, includes: 2 });
  get(
    'documents embedAssets includes=1 locale=all',
    list,
    { ...all, embedAssets: 'true', includes: 1, locale: 'all' },
    'query',
  );
  get(`documents includes=2 locale=${info.locales.at(-2)}`, list, { ...all, includes: 2, locale: info.locales.at(-2) });
  get(`document ${doc0} embedAssets`, `${list}/${enc(doc0)}`, { embedAssets: true });
  get(`document ${doc0} embedAssets includes=2 locale=all`, `${list}/${enc(doc0)}`, {
    embedAssets: true,
    includes: 2,
    locale: 'all',
  });
  get('documents embedAssets=maybe (400)', list, { embedAssets: 'maybe' }, 'brackets', 400);

  // Locales (§7).
  get('documents unknown locale (400)', list, { locale: 'xx_XX' }, 'brackets', 400);
  get(`document ${doc0} unknown locale (400)`, `${list}/${enc(doc0)}`, { locale: 'xx_XX' }, 'query', 400);

  // Masks (§8).
  const title = text?.apiId ?? 'title';
  const masks = [
    `fields(${title}),meta(id)`,
    'meta',
    'fields(*)',
    `fields/${title},meta/id`,
    '*',
    `meta(id,tags),fields(${title})`,
  ];
  masks.forEach((mask, k) => {
    get(
      `mask ${mask}`,
      list,
      { ...all, fields: mask, ...(k === 0 ? { locale: 'all' } : {}) },
      k % 2 ? 'query' : 'brackets',
    );
  });
  // A field inside a section: the mask names the section in its path.
  const inSection =
    fields.find((f) => f.section !== undefined && f.localized) ?? fields.find((f) => f.section !== undefined);
  if (inSection) {
    get(
      `mask through the section ${inSection.section}`,
      list,
      { ...all, locale: 'all', fields: `fields(${inSection.section}(${inSection.apiId})),meta(id)` },
      'query',
    );
    get(`mask by the path through the section ${inSection.section}`, list, {
      ...all,
      embedAssets: true,
      fields: `fields/${inSection.section},meta/id`,
    });
  }
  const firstRelation = (relations.find((f) => f.contentType === richest?.apiId) ?? relations[0])?.apiId ?? 'author';
  get(`mask with includes scope`, list, {
    ...all,
    includes: 1,
    fields: `fields(${title}),meta(id),includes(${firstRelation}(meta(id),fields))`,
  });
  get('mask leaves includes out', list, { includes: 1, fields: `fields(${title})` });
  get(
    `document ${doc0} mask with includes`,
    `${list}/${enc(doc0)}`,
    { includes: 2, fields: 'meta(id),includes(*(meta(id)))' },
    'query',
  );
  get('mask malformed (400)', list, { fields: 'fields(title' }, 'brackets', 400);

  // Tags and search (§3, §8).
  get(`includeTags=${tag0}`, list, { ...all, includeTags: tag0 });
  add(
    `includeTags[]=${tag0}&includeTags[]=${tag1}`,
    'GET',
    `${base}${list}?limit=1000&includeTags[]=${enc(tag0)}&includeTags[]=${enc(tag1)}`,
  );
  get(`excludeTags=${tag0}`, list, { ...all, excludeTags: [tag0] });
  get('includeTags and excludeTags', list, { ...all, includeTags: [tag0], excludeTags: [tag1] }, 'query');
  const word = (locale: string, i = 0) => info.words?.[locale]?.[i] ?? 'x';
  get(`search ${word(defaultLocale)}`, list, { ...all, search: word(defaultLocale) });
  get(
    'search two words',
    list,
    { ...all, search: `${word(defaultLocale, 1).toUpperCase()} ${word(defaultLocale, 2)}` },
    'query',
  );
  for (const locale of info.locales.slice(1, 3))
    get(`search ${word(locale)} locale=${locale}`, list, { ...all, search: word(locale), locale });
  get(`search ${word(info.locales.at(-1)!)} locale=all`, list, {
    ...all,
    search: word(info.locales.at(-1)!),
    locale: 'all',
  });
  get('search without a match', list, { search: 'zzqxv' });

  // Paging (§3).
  get('limit=5 offset=5', list, { limit: 5, offset: 5 });
  get('limit=0', list, { limit: 0 });
  get('limit=5000 (clamped)', list, { limit: 5000 });
  get('offset=3', list, { offset: 3 }, 'query');
  get('offset beyond the total', list, { offset: 100_000 });
  get('limit=-1 (400)', list, { limit: -1 }, 'brackets', 400);
  get('limit=ten (400)', list, { limit: 'ten' }, 'query', 400);

  // Collections with the request's options.
  const collection = info.collections[0];
  if (collection) {
    const route = `/collections/${enc(collection)}`;
    get(`collection ${collection} with filters`, route, {
      ...all,
      filters: [{ '*.meta.revision': { greaterThanEqual: 2 } }, { or: { '*.meta.tags': { equal: tag0 } } }],
    });
    get(`collection ${collection} with sorting`, route, { ...all, sorting: { [`fields.${title}`]: 'ASC' } }, 'query');
    get(`collection ${collection} with tags and includes`, route, {
      excludeTags: tag1,
      includes: 1,
      locale: info.locales[1],
    });
    add(`collection ${collection} POST`, 'POST', `${base}${route}`, {
      body: { limit: 3, offset: 1, locale: 'all', sorting: { 'meta.id': 'DESC' } },
    });
  }
  for (const name of info.collections.slice(1))
    get(`collection ${name} search and paging`, `/collections/${enc(name)}`, {
      search: word(defaultLocale),
      limit: 3,
      offset: 1,
    });

  // POST and the precedence of the forms (§3).
  add('documents POST', 'POST', `${base}${list}`, {
    body: {
      limit: 10,
      locale: info.locales[1],
      sorting: { [`fields.${title}`]: 'DESC' },
      filters: [{ [`*.fields.${title}`]: { notEmpty: true } }],
      includes: 1,
    },
  });
  add('documents POST, empty body', 'POST', `${base}${list}`, { body: {} });
  add(
    'documents POST, the body wins over query=',
    'POST',
    `${base}${list}?${queryParameter({ limit: 2, locale: 'all' })}&offset=4`,
    { body: { limit: 3 } },
  );
  add('documents POST, not an object (400)', 'POST', `${base}${list}`, { body: [1, 2], status: 400 });
  add('query= wins over brackets', 'GET', `${base}${list}?limit=7&${queryParameter({ limit: 2 })}`);
  return out;
}
