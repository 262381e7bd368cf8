import { z } from 'zod';

/**
 * The Read API's answers on the wire (spec §2), as zod schemas. The client validates every
 * answer with them; they are deliberately open (`looseObject`) where the real service may send
 * more than the seed shows, and strict about what the loader relies on.
 */

/** The filter operators of the Read API (spec §4), in the seed's order. */
export const filterOperators = [
  'equal',
  'notEqual',
  'greaterThan',
  'greaterThanEqual',
  'lessThan',
  'lessThanEqual',
  'like',
  'notLike',
  'empty',
  'notEmpty',
  'in',
  'notIn',
] as const;
export type FilterOperator = (typeof filterOperators)[number];

/** A reference as the Read API answers it; an embedded record (`embedAssets`) carries its `fields` too. */
const apiReferenceSchema = z.looseObject({
  meta: z.looseObject({ id: z.string(), contentType: z.string() }),
});

/** A string of at least one character: a name, an id, a path. */
export const nonEmpty = z.string().min(1);

/** A list of strings: tags, a select's values. */
export const stringList = z.array(z.string());

/** A count, a size, a revision: a whole number from 0. */
export const wholeNumber = z.number().int().nonnegative();

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether a value is a reference on the wire (what `apiReferenceSchema` accepts, without zod's copy). */
export function isApiReference(value: unknown): value is ApiReference {
  const meta = isObject(value) ? value.meta : undefined;
  return isObject(meta) && typeof meta.id === 'string' && typeof meta.contentType === 'string';
}

const metaSchema = z.looseObject({
  id: z.string(),
  contentType: z.string(),
  repository: z.string().optional(),
  revision: z.number().optional(),
  tags: stringList.optional(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
});

/** A document or asset record as answered. */
export const recordSchema = z.looseObject({
  fields: z.record(z.string(), z.unknown()),
  meta: metaSchema,
});

/** Included records, grouped by the name of the field that references them. */
const includesSchema = z.record(z.string(), z.array(recordSchema));

export const documentAnswerSchema = recordSchema.extend({ includes: includesSchema.optional() });

/** The HTTP status an answer may repeat in its body. */
const status = z.number().optional();

export const listAnswerSchema = z.looseObject({
  status,
  meta: z.looseObject({
    count: wholeNumber,
    limit: wholeNumber,
    offset: wholeNumber,
    total: wholeNumber,
  }),
  data: z.array(recordSchema),
  includes: includesSchema.optional(),
});

/** With a `fields` mask, records carry only what the mask keeps. */
const maskedRecordSchema = recordSchema.partial().extend({ meta: metaSchema.partial().optional() });
const maskedIncludes = z.record(z.string(), z.array(maskedRecordSchema)).optional();
export const maskedDocumentAnswerSchema = maskedRecordSchema.extend({ includes: maskedIncludes });
export const maskedListAnswerSchema = listAnswerSchema.extend({
  data: z.array(maskedRecordSchema),
  includes: maskedIncludes,
});

/** The repository endpoint; the real service documents only `meta.apiId`. */
export const repositoryAnswerSchema = z.looseObject({
  status,
  meta: z.looseObject({
    apiId: z.string(),
    id: z.string().optional(),
    name: z.string().optional(),
    defaultLocale: z.string().optional(),
    locales: z.array(z.looseObject({ key: z.string(), fallback: z.string().optional() })).optional(),
  }),
});

export const errorAnswerSchema = z.looseObject({
  status,
  message: z.string().optional(),
  error: z.looseObject({ code: z.string().optional(), message: z.string().optional() }).optional(),
});

type ApiReference = z.infer<typeof apiReferenceSchema>;
export type ApiRecord = z.infer<typeof recordSchema>;
export type DocumentAnswer = z.infer<typeof documentAnswerSchema>;
export type ListAnswer = z.infer<typeof listAnswerSchema>;
export type MaskedListAnswer = z.infer<typeof maskedListAnswerSchema>;
export type MaskedDocumentAnswer = z.infer<typeof maskedDocumentAnswerSchema>;
/**
 * An asset: `title`, `description` and `file` in its fields, kept in the order the server sent (a declared shape would
 * reorder them): a record answer.
 */
export type AssetAnswer = ApiRecord;
export type RepositoryAnswer = z.infer<typeof repositoryAnswerSchema>;
