import type { LiveDataEntry } from 'astro';
import { z } from 'zod';
import type { ComfortableLiveEntryData } from './live-entries.ts';

/**
 * The `fields` option of a live loader at work: each entry's fields are checked with the user's
 * schema and replaced by what it outputs, so that a page gets what the types promise, or an
 * error naming the option, never an entry that breaks the page further down.
 */

/** How many of a mismatch's problems its message lists. */
const shownIssues = 3;

/** An entry whose fields do not match the `fields` option. */
export class FieldsMismatch extends Error {
  /** The entry's id (`<locale>/<document id>`). */
  readonly entryId: string;
  constructor(entryId: string, error: z.ZodError) {
    const issues = error.issues
      .slice(0, shownIssues)
      .map((issue) => `${['fields', ...issue.path.map(String)].join('.')}: ${issue.message}`);
    const more = error.issues.length > shownIssues ? ` (and ${error.issues.length - shownIssues} more)` : '';
    super(
      `entry ${entryId} does not match the fields option of comfortableLiveLoader() in src/live.config.ts: ${issues.join('; ')}${more}. ` +
        'Change the schema to what the content type holds (a field that may be empty needs .nullish()).',
    );
    this.name = 'FieldsMismatch';
    this.entryId = entryId;
  }
}

/** The entries with their fields as `schema` outputs them; throws a FieldsMismatch for the first that does not match. */
export async function checkFields<Fields extends Record<string, unknown>>(
  entries: LiveDataEntry<ComfortableLiveEntryData>[],
  schema: z.ZodType<Fields, unknown> | undefined,
): Promise<LiveDataEntry<ComfortableLiveEntryData<Fields>>[]> {
  // Without a schema the fields stay as they are, typed Record<string, unknown> (the default of Fields).
  if (!schema) return entries as LiveDataEntry<ComfortableLiveEntryData<Fields>>[];
  return Promise.all(
    entries.map(async (entry) => {
      const result = await z.safeParseAsync(schema, entry.data.fields);
      if (!result.success) throw new FieldsMismatch(entry.id, result.error);
      return { ...entry, data: { ...entry.data, fields: result.data } };
    }),
  );
}
