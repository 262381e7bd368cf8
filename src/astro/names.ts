import type { CacheHead } from '../cache/index.ts';
import { ConfigError, didYouMean } from '../sync/config.ts';
import { nearestKey } from '../sync/option-keys.ts';

/**
 * Option values that name something of the repository or of the site (a loader's content type
 * and locales, the integration's `contentTypes`), checked as option keys are: a name that is not
 * there fails, with the nearest one. The repository lists its locales, and Astro's content config
 * its collections, so those are known whole. The Read API lists no content types: the model holds
 * the types of the documents synced, and a type with no document yet is not in it. So a content
 * type the model lacks fails only when one near it is there (a misspelling: `cuisines` for
 * `cuisine`); else it is said once, as a type that may have no document yet. (The errors say
 * "content" rather than "document": Astro gives any error that names `document` a hint about
 * browser APIs in place of the package's.)
 */

const where = (collection: string) =>
  ` of comfortableLoader() for the collection "${collection}" in src/content.config.ts`;

/**
 * A content type an option names, against the synced ones: a ConfigError when one near it is
 * there (a misspelling), else `warn` with `unknown`, as a type that may have no document yet.
 */
function checkContentType(
  type: string,
  head: CacheHead,
  option: string,
  place: string,
  unknown: string,
  warn: (message: string) => void,
): void {
  const types = Object.keys(head.model)
    .filter((name) => !name.startsWith('_')) // assets aside
    .sort();
  if (types.includes(type)) return;
  if (nearestKey(type, types) !== undefined)
    throw new ConfigError(
      option,
      `Invalid option ${option}${place}: the synced content has no content type "${type}"${didYouMean(type, types)}`,
    );
  warn(unknown + didYouMean(type, types, 'the types synced: '));
}

/**
 * A loader's `contentType` and `locales` against the repository: a ConfigError for a locale it
 * lacks or a content type near one it has; `warn` for a content type of no synced document.
 */
export function checkLoaderNames(
  options: { contentType?: string | undefined; locales?: readonly string[] | undefined },
  head: CacheHead,
  collection: string,
  warn: (message: string) => void,
): void {
  const locales = head.locales.locales.map((locale) => locale.key);
  const missing = options.locales?.find((locale) => !locales.includes(locale));
  if (missing !== undefined) {
    throw new ConfigError(
      'locales',
      `Invalid option locales${where(collection)}: the repository has no locale "${missing}"` +
        didYouMean(missing, locales),
    );
  }
  const type = options.contentType;
  if (type === undefined) return;
  const unknown =
    `The collection "${collection}" is empty: no synced document has the content type "${type}", which its ` +
    `comfortableLoader() loads. If that type has no document yet, it fills once one is published; else check ` +
    `the contentType option in src/content.config.ts`;
  checkContentType(type, head, 'contentType', where(collection), unknown, warn);
}

/**
 * The keys of the integration's `contentTypes` against the repository's model, as a loader's
 * `contentType` is checked.
 */
export function checkContentTypeKeys(
  contentTypes: Readonly<Record<string, string>>,
  head: CacheHead,
  warn: (message: string) => void,
): void {
  for (const type of Object.keys(contentTypes)) {
    const unknown =
      `The contentTypes option of comfortable() maps the content type "${type}", which no synced document ` +
      `has. If that type has no document yet, that is right; else check its API id`;
    checkContentType(type, head, `comfortable.contentTypes.${type}`, '', unknown, warn);
  }
}

/**
 * The values of the integration's `contentTypes` against the collections of Astro's content
 * config that a comfortableLoader() fills: a reference into any other collection could never
 * resolve, so a value that names none of them fails, with the nearest one.
 */
export function checkContentTypeValues(
  contentTypes: Readonly<Record<string, string>>,
  collections: readonly string[],
): void {
  for (const [type, collection] of Object.entries(contentTypes)) {
    if (collections.includes(collection)) continue;
    const option = `comfortable.contentTypes.${type}`;
    throw new ConfigError(
      option,
      `Invalid option ${option}: "${collection}" is no collection of src/content.config.ts that a ` +
        `comfortableLoader() fills${didYouMean(collection, collections)}`,
    );
  }
}
