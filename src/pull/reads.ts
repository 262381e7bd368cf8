import type { ReadApiClient } from '../api/client.ts';
import { NotFoundError } from '../api/errors.ts';
import type { ApiRecord } from '../wire/schemas.ts';
import type { SnapshotRecord } from '../wire/snapshot-format.ts';
import { byId, snapshotAsset } from './records.ts';

/** What the pull reads of the CMS beside the documents: member lists, alias targets, referenced assets, locales. */

/** A problem with what the user asked for (a collection or alias that does not exist): exit 1, nothing written. */
export class PullError extends Error {
  override name = 'PullError';
}

/**
 * A list read page by page while documents are added or deleted shifts under the pages: one is
 * then read twice or not at all. Every page must tell the same total, and that many distinct
 * documents must have come, or the copy would silently lack some.
 */
export function unchangedWhilePulled(documents: SnapshotRecord[], totals: Set<number>): void {
  const twice = documents.find((document, i) => i > 0 && documents[i - 1]!.meta.id === document.meta.id);
  const [total] = totals;
  if (totals.size > 1 || twice || documents.length !== total) {
    const what = twice
      ? `document ${twice.meta.id} came twice`
      : totals.size > 1
        ? `the total went from ${[...totals].join(' to ')}`
        : `${documents.length} of ${total} documents came`;
    throw new PullError(
      `The repository's documents changed while they were listed (${what}): pull again when it is not being edited`,
    );
  }
}

/**
 * Every asset the documents reference: those embedded in the answers, the others asked one by one (the API lists no
 * assets).
 */
export async function referencedAssets(
  client: ReadApiClient,
  ids: Set<string>,
  embedded: Map<string, ApiRecord>,
  locales: ReadonlySet<string>,
  defaultLocale: string,
  warn: (m: string) => void,
): Promise<SnapshotRecord[]> {
  const missing = [...ids].filter((id) => !embedded.has(id));
  const fetched = await Promise.all(
    missing.map((id) =>
      client.asset(id, { locale: 'all' }).then(
        (asset) => asset as ApiRecord,
        (error: unknown) => {
          if (error instanceof NotFoundError) return undefined; // a dangling reference stays one
          throw error;
        },
      ),
    ),
  );
  const dropped = new Set<string>();
  const assets = [...embedded.values(), ...fetched.filter((a): a is ApiRecord => a !== undefined)]
    .filter((asset) => ids.has(asset.meta.id))
    .map((asset) => snapshotAsset(asset, locales, defaultLocale, (name) => dropped.add(name)));
  if (dropped.size > 0)
    warn(`Assets hold fields the snapshot format has no place for (${[...dropped].join(', ')}): they are not kept`);
  return assets.sort(byId);
}

/**
 * The config's collections as member lists, in the order each answers in the default locale.
 * A collection whose stored filters or sorting give another list in another locale is warned about.
 */
export async function memberLists(
  client: ReadApiClient,
  collections: Record<string, unknown>,
  locales: string[],
  warn: (m: string) => void,
): Promise<{ apiId: string; members: string[] }[]> {
  const listOf = async (apiId: string, locale: string | undefined): Promise<string[]> => {
    const ids: string[] = [];
    try {
      for await (const page of client.pages(
        { collection: apiId },
        { fields: 'meta(id)', ...(locale ? { locale } : {}) },
      )) {
        for (const record of page.data) ids.push((record as { meta: { id: string } }).meta.id);
      }
    } catch (error) {
      if (error instanceof NotFoundError)
        throw new PullError(
          `The repository has no collection "${apiId}": remove it from the config's collections, or check its API id`,
        );
      throw error;
    }
    return ids;
  };
  const out: { apiId: string; members: string[] }[] = [];
  for (const apiId of Object.keys(collections).sort()) {
    const [members, ...others] = await Promise.all([
      listOf(apiId, undefined),
      ...locales.slice(1).map((locale) => listOf(apiId, locale)),
    ]);
    const differ = locales.slice(1).filter((_, i) => others[i]!.join() !== members!.join());
    if (differ.length > 0) {
      warn(
        `Collection ${apiId} lists other documents, or another order, in ${differ.join(', ')} ` +
          "(its stored filters or sorting read localized values): the snapshot keeps the default locale's list",
      );
    }
    out.push({ apiId, members: members! });
  }
  return out;
}

export async function aliasTargets(
  client: ReadApiClient,
  aliases: string[],
): Promise<{ apiId: string; document: string }[]> {
  return Promise.all(
    [...aliases].sort().map(async (apiId) => {
      try {
        const answer = await client.alias(apiId, { fields: 'meta(id)' });
        return { apiId, document: (answer as { meta: { id: string } }).meta.id };
      } catch (error) {
        if (error instanceof NotFoundError)
          throw new PullError(
            `The repository has no alias "${apiId}": remove it from the config's aliases, or check its API id`,
          );
        throw error;
      }
    }),
  );
}
