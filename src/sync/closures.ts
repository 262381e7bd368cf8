import type { DanglingReference, Node, Records } from '../cache/index.ts';
import type { Stamp } from '../model/records.ts';
import { requestOptions, type SyncSource } from './config.ts';
import { type Fetcher, isMasked, settleAll } from './fetch.ts';
import type { Intake } from './intake.ts';
import type { Listed } from './list.ts';
import { includeOptions, reach } from './reach.ts';

/**
 * The closures phase: the records each source needs (its members and what their includes
 * reach), brought up to date until nothing changes. Included records that no listing checked
 * in this run are re-checked by their stamps; records stored otherwise than a fresh sync would
 * store them (partial where a source needs them whole, whole where only masked sources need
 * them) are fetched again; records the closures reach but the cache lacks are fetched, and
 * those the server does not have either are dangling.
 */

export interface SourceClosure {
  /** The records of the closure that are not members. */
  included: readonly string[];
  dangling: DanglingReference[];
  /** The closure of the last sync, which still holds: nothing was relinked and the members are the same. */
  kept: boolean;
  /** The nodes of every record reached, when the closure was worked out in this run. */
  nodes?: Map<string, Node>;
}

/** The closure of the last sync of a source whose options are the same. */
export interface StoredClosure {
  members: readonly string[];
  included: readonly string[];
  dangling: DanglingReference[];
}

export interface ClosureContext {
  records: Records;
  intake: Intake;
  fetcher: Fetcher;
  stored(source: SyncSource): StoredClosure | undefined;
  /**
   * The mask that keeps the stamps of embedded assets (`assetStampsMask`); without it, assets are checked one by one.
   */
  assetMask?: string | undefined;
  /** What was checked while the members were listed (`checkAhead`): not asked again. */
  ahead?: CheckedAhead | undefined;
}

/**
 * What a warm sync checks of the last sync's closures while the members are listed, rather than
 * a round trip after: the stamps of the assets they include, and whether the targets of their
 * dangling references exist by now (those that do are fetched).
 */
export interface CheckedAhead {
  /** Stamps of assets by id, as a stored document embedding each carried them. */
  assetStamps: ReadonlyMap<string, Stamp>;
  /** Targets of dangling references that the server still does not have. */
  absent: ReadonlySet<string>;
}

/** What asks the server for records or stamps needs. */
type Asking = Pick<ClosureContext, 'records' | 'fetcher' | 'assetMask'>;

export async function checkAhead(
  included: readonly string[],
  dangling: readonly DanglingReference[],
  context: Asking & { localesKnown: Promise<void> },
): Promise<CheckedAhead> {
  const { records } = context;
  records.infos(included);
  const assets = included.filter((id) => records.isAsset(id));
  const targets = [...new Set(dangling.map((ref) => ref.id))];
  const assetStamps = embeddedAssetStamps(assets, context);
  // What is fetched is normalised with the repository's locales.
  const found = context.localesKnown.then(() => fetchTargets(targets, dangling, context));
  await settleAll<unknown>([assetStamps, found]);
  const had = await found;
  return { assetStamps: await assetStamps, absent: new Set(targets.filter((id) => !had.has(id))) };
}

export const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((id, i) => id === b[i]);
/** Rounds are a guard: each one checks or fetches records not seen before, so they end. */
const maxRounds = 100;

/** Works out every source's closure, fetching what they lack; `members` are the members listed in this run. */
export async function completeClosures(
  sources: readonly SyncSource[],
  listings: ReadonlyMap<string, Listed>,
  context: ClosureContext,
): Promise<Map<string, SourceClosure>> {
  const { records, intake, fetcher } = context;
  const members = new Map([...listings].map(([key, listing]) => [key, listing.ids]));
  let listed: Set<string> | undefined; // made when some included document was neither taken nor checked
  const absent = new Set<string>(context.ahead?.absent);
  let worked: { version: number; closures: Map<string, SourceClosure> } | undefined;
  for (let round = 0; ; round++) {
    // Worked out again only when a round wrote or dropped a record.
    if (worked?.version !== intake.version)
      worked = {
        version: intake.version,
        closures: new Map(sources.map((source) => [source.key, closureOf(source, members.get(source.key)!, context)])),
      };
    const { closures } = worked;
    const included = [...new Set([...closures.values()].flatMap((closure) => closure.included))].filter(
      (id) => !intake.taken.has(id) && !intake.checked.has(id),
    );
    records.infos(included);
    const assets = included.filter((id) => records.isAsset(id));
    const documents = included.filter((id) => !records.isAsset(id));
    if (documents.length > 0) listed ??= new Set([...members.values()].flat());
    const unchecked = documents.filter((id) => !listed!.has(id));
    const { incomplete, overcomplete } = misshapen(sources, members, closures, records);
    if (
      (unchecked.length > 0 || assets.length > 0 || incomplete.length > 0 || overcomplete.size > 0) &&
      round < maxRounds
    ) {
      await recheck(unchecked, 'documents', context);
      await recheck(assets, 'assets', context);
      // Stored as the masked answers make them, as a fresh sync stores them (one the server no longer has stays
      // dropped).
      for (const ids of overcomplete.values()) for (const id of ids) intake.drop(id);
      for (const [source, ids] of overcomplete) {
        const { fields, embedAssets } = requestOptions(source);
        await fetcher.byIds(ids, { fields, embedAssets });
      }
      // A source without a mask needs these whole; one the server no longer has is dropped.
      const found = await fetcher.byIds(incomplete);
      for (const id of incomplete) if (!found.has(id)) intake.drop(id);
      continue;
    }
    const missing = [...closures.values()].flatMap((closure) => closure.dangling);
    const toFetch = [...new Set(missing.map((ref) => ref.id))].filter((id) => !absent.has(id));
    if (toFetch.length === 0 || round >= maxRounds) return closures;
    const found = await fetchTargets(toFetch, missing, context);
    for (const id of toFetch) if (!found.has(id)) absent.add(id);
  }
}

/** Fetches the targets of references the cache lacks (assets one by one); returns the ids the server had. */
async function fetchTargets(
  ids: readonly string[],
  references: readonly DanglingReference[],
  { records, fetcher }: Asking,
): Promise<Set<string>> {
  // Which targets are assets, as the records holding the references say.
  const nodes = records.nodes(new Set(references.map((ref) => ref.from)));
  const assetIds = new Set(
    references
      .filter((ref) => nodes.get(ref.from)?.references.some((r) => r.id === ref.id && r.asset))
      .map((ref) => ref.id),
  );
  const found = await fetcher.byIds(ids.filter((id) => !assetIds.has(id)));
  for (const id of await fetcher.assets(ids.filter((id) => assetIds.has(id)))) found.add(id);
  return found;
}

/** A source's closure: the stored one while it holds, else worked out from the stored references. */
function closureOf(source: SyncSource, members: readonly string[], context: ClosureContext): SourceClosure {
  const stored = context.stored(source);
  if (stored && !context.intake.relinked && sameList(members, stored.members)) {
    return { included: stored.included, dangling: stored.dangling.map((ref) => ({ ...ref })), kept: true };
  }
  const { nodes, missing } = reach(members, includeOptions(source), (ids) => context.records.nodes(ids));
  const isMember = new Set(members);
  return { included: [...nodes.keys()].filter((id) => !isMember.has(id)), dangling: missing, kept: false, nodes };
}

/**
 * Cached records that were neither taken nor listed in this run: their stamps asked, the changed
 * ones fetched, the ones the server no longer has dropped. Documents are asked in id listings.
 * The API lists no assets, and an asset can be edited alone: their stamps are read from a
 * listing of documents that embed them, one document per asset (`assetStamps`).
 */
async function recheck(ids: string[], kind: 'documents' | 'assets', context: ClosureContext): Promise<void> {
  const { records, intake, fetcher } = context;
  if (ids.length === 0) return;
  for (const id of ids) intake.checked.add(id);
  const stamps = kind === 'assets' ? await assetStamps(ids, context) : await fetcher.stampsOf(ids);
  const seen = new Set(stamps.map((stamp) => stamp.id));
  for (const id of ids) if (!seen.has(id)) intake.drop(id); // gone from the server
  // A partial record with the same stamps is as the masks made it: `misshapen` says whether a source needs it whole.
  const changed = stamps.filter((stamp) => !records.sameStamps(stamp, true)).map((stamp) => stamp.id);
  if (changed.length === 0) return;
  const found = kind === 'assets' ? await fetcher.assets(changed) : await fetcher.byIds(changed);
  for (const id of changed) if (!found.has(id)) intake.drop(id); // gone since its stamps were read
}

/**
 * The stamps of assets: those read ahead, else as embedded in one stored document that
 * references each (asked together, with a mask that keeps the stamps only), and for an asset no
 * such listing carried (its document changed or is gone, or a server that masks otherwise),
 * asked alone.
 */
async function assetStamps(ids: string[], context: ClosureContext): Promise<Stamp[]> {
  const known = new Map(context.ahead?.assetStamps);
  for (const [id, stamp] of await embeddedAssetStamps(
    ids.filter((id) => !known.has(id)),
    context,
  ))
    known.set(id, stamp);
  const alone = ids.filter((id) => !known.has(id));
  return [
    ...ids.flatMap((id) => known.get(id) ?? []),
    ...(alone.length > 0 ? await context.fetcher.assetStamps(alone) : []),
  ];
}

/**
 * The stamps of the assets of `ids` that one stored document embedding each carries (asked together); none without a
 * mask.
 */
async function embeddedAssetStamps(
  ids: readonly string[],
  { records, fetcher, assetMask }: Asking,
): Promise<Map<string, Stamp>> {
  const found = new Map<string, Stamp>();
  if (!assetMask || ids.length === 0) return found;
  const wanted = new Set(ids);
  for (const stamp of await fetcher.embeddedAssetStamps(records.assetReferrers(ids), assetMask))
    if (wanted.has(stamp.id)) found.set(stamp.id, stamp);
  return found;
}

/**
 * Records not stored the way a fresh sync would store them: partial ones a source without a
 * mask needs (`incomplete`: fetched whole), and whole ones only sources with a mask need
 * (`overcomplete`, by masked source: fetched again through each mask; assets are never masked).
 */
function misshapen(
  sources: readonly SyncSource[],
  members: ReadonlyMap<string, readonly string[]>,
  closures: ReadonlyMap<string, SourceClosure>,
  records: Records,
): { incomplete: string[]; overcomplete: Map<SyncSource, string[]> } {
  const masked = sources.filter(isMasked);
  const overcomplete = new Map<SyncSource, string[]>();
  const anyPartial = records.anyPartial();
  if (!anyPartial && masked.length === 0) return { incomplete: [], overcomplete };
  const closureIds = (source: SyncSource) => [...members.get(source.key)!, ...closures.get(source.key)!.included];
  const wholeNeeded = new Set(sources.filter((source) => !isMasked(source)).flatMap(closureIds));
  if (anyPartial) records.infos(wholeNeeded);
  const incomplete = anyPartial ? [...wholeNeeded].filter((id) => records.info(id)?.partial) : [];
  for (const source of masked) {
    const reached = closureIds(source);
    records.infos(reached);
    const ids = reached.filter((id) => {
      const info = records.info(id);
      return info && !info.partial && info.contentType !== '_asset' && !wholeNeeded.has(id);
    });
    if (ids.length > 0) overcomplete.set(source, [...new Set(ids)]);
  }
  return { incomplete, overcomplete };
}
