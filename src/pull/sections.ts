import type { ReadApiClient } from '../api/client.ts';
import { BadRequestError } from '../api/errors.ts';
import type { FilterEntry } from '../api/query.ts';
import type { Sightings } from './infer.ts';

/**
 * Which objects of fields the server holds as sections. An object that shows only plain values
 * (text, numbers, dates…) may be a section or a JSON field's value: the documents cannot tell.
 * The server can: filters name a field inside a section by its own API id (`lesson.fields.level`),
 * and a key inside a JSON value is no field, so a filter on it matches nothing. One request per
 * such object: does any document of its content type have a value in one of its keys?
 */

/** Keys asked about per object at most: a filter of a few conditions says as much as one of many. */
const maxKeys = 20;

/** The fields (`<contentType>.<field>`) of `unconfirmed` that the server holds as sections. */
export async function confirmSections(
  client: ReadApiClient,
  unconfirmed: Sightings['unconfirmed'],
): Promise<Set<string>> {
  const confirmed = new Set<string>();
  await Promise.all(
    unconfirmed.map(async ({ contentType, field, keys }) => {
      // Relations and assets cannot be filtered on (and would have shown the object a section).
      const asked = keys.filter((key) => key.kind !== 'relation' && key.kind !== 'asset').slice(0, maxKeys);
      if (asked.length === 0) return;
      const filters = asked.map((key, i): FilterEntry => {
        const condition = { [`${contentType}.fields.${key.name}`]: { notEmpty: true } };
        return i === 0 ? condition : { or: condition };
      });
      try {
        const answer = await client.documents({ filters, limit: 1, fields: 'meta(id)' });
        if (answer.meta.total > 0) confirmed.add(`${contentType}.${field}`);
      } catch (error) {
        // A server that refuses the filter does not hold these keys as fields either.
        if (!(error instanceof BadRequestError)) throw error;
      }
    }),
  );
  return confirmed;
}
