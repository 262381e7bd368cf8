import { z } from 'zod';
import { nonEmpty } from '../wire/schemas.ts';
import { checkOptions, ConfigError, type SourceSpec, sourceOptionsSchema } from '../sync/config.ts';

/** What an entry id is made from. */
export interface EntryIdInput {
  id: string;
  locale: string;
  /** With `i18n` in astro.config: the locale as Astro names it (`fr` for `fr_FR`). */
  astroLocale?: string | undefined;
  contentType: string;
  fields: Record<string, unknown>;
}

export const defaultEntryId = ({ id, locale }: EntryIdInput) => `${locale}/${id}`;

const apiId = z.string().min(1, 'expected an API id');

const loaderOptionsSchema = z.strictObject({
  /** Load a collection of the repository, by its API id. */
  collection: apiId.optional(),
  /** Load the document an alias points to (one entry per locale). */
  alias: z
    .string({ error: 'expected the API id of one alias, such as "home" (aliases takes a list of them)' })
    .min(1, 'expected an API id')
    .optional(),
  /** Load the documents of several aliases. */
  aliases: z.array(apiId).min(1, 'expected a list of alias API ids').optional(),
  /** Load every document of a content type. */
  contentType: apiId.optional(),
  /** Request options for the source (includes, filters, sorting, …); fetched with every locale. */
  options: sourceOptionsSchema.optional(),
  /**
   * The field rendered as the entry's content, for `render(entry)` and `<Content />` (with
   * headings, and images of the repository's assets optimised by Astro); a field inside a section
   * by its path, such as `'content.body'`. A richtext field, or a Markdown field (one that holds
   * strings), which the site's own Markdown pipeline renders (its `markdown` config: plugins,
   * Shiki, GFM), in every locale. Default: the content type's first richtext field (those inside
   * sections included; a Markdown field looks like text, so it is rendered only when named);
   * `false` renders none.
   * @example render: 'body'
   */
  render: z
    .union([nonEmpty, z.literal(false)], {
      error: 'expected the API id of a richtext or Markdown field, or false',
    })
    .optional(),
  /**
   * Other Markdown fields, rendered by the site's Markdown pipeline into `entry.data.markdown`
   * (`{ html, headings }` by path, empty where an entry has no value); show one with
   * `<RichText field={entry.data.markdown.intro} />`, which optimises the images of the
   * repository's assets. Default: none.
   * @example markdown: ['intro', 'seo.summary']
   */
  markdown: z
    .array(nonEmpty, { error: 'expected a list of the API ids of Markdown fields, such as ["intro"]' })
    .optional(),
  /** Locales that get entries. Default: every locale of the repository. */
  locales: z.array(nonEmpty).min(1, 'expected at least one locale').optional(),
  /**
   * The entry id. Default `<locale>/<document id>`. A relation into this collection (through
   * the integration's `contentTypes`) becomes a reference with this id too, whatever the source.
   * @example ({ locale, fields }) => `${locale}/${fields.slug}`
   */
  entryId: z
    .custom<(entry: EntryIdInput) => string>(
      (value) => typeof value === 'function',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the message shows the code to write
      'expected a function such as ({ locale, fields }) => `${locale}/${fields.slug}`',
    )
    .optional(),
});

/**
 * Options of `comfortableLoader()`: one source (collection, alias, aliases or contentType), and how
 * its entries are made.
 */
export type ComfortableLoaderOptions = z.input<typeof loaderOptionsSchema>;

/**
 * Checks a loader's options and names its sources. A problem is thrown as a ConfigError that
 * names the option as written and the collection the loader fills (`collection`, known once
 * Astro loads it).
 */
export function loaderSources(options: unknown, collection?: string): SourceSpec[] {
  const place = ` of comfortableLoader()${collection ? ` for the collection "${collection}" in src/content.config.ts` : ''}`;
  const checked = checkOptions(loaderOptionsSchema, options, { place });
  const given = (['collection', 'alias', 'aliases', 'contentType'] as const).filter(
    (key) => checked[key] !== undefined,
  );
  if (given.length !== 1) {
    const which = given.length === 0 ? 'none' : given.join(' and ');
    throw new ConfigError(
      'collection',
      `Invalid options${place}: give exactly one of collection, alias, aliases or contentType (got ` +
        `${which}), for example comfortableLoader({ collection: "posts" })`,
    );
  }
  const extra = checked.options ?? {};
  if (checked.collection) return [{ kind: 'collection', name: checked.collection, options: extra }];
  if (checked.contentType)
    return [
      { kind: 'query', name: `type:${checked.contentType}`, options: { ...extra, contentType: checked.contentType } },
    ];
  return (checked.aliases ?? [checked.alias!]).map((name) => ({ kind: 'alias', name, options: extra }));
}
