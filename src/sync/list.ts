import type { Records, StoredMembers } from '../cache/index.ts';
import { requestOptions } from './config.ts';
import type { Fetcher } from './fetch.ts';
import type { Intake } from './intake.ts';
import type { SourcePlan } from './plan.ts';

/**
 * The list phase: a source's members, in its order. An alias is fetched (with its includes), a
 * full source page by page (most often without includes: see `Fetcher.full`). An incremental
 * source is listed by stamps, which are compared with those its members were stored with, in
 * the same order; from the first that differs, the documents changed since the last sync (less
 * a safety margin, for clocks and slow publishes) are fetched while the listing goes on. Listed
 * documents that still differ after that (a clock off by more than the margin) are fetched by id.
 */

/**
 * A source's members as listed in this run, and those fetched in it or listed with other stamps than they were stored
 * with.
 */
export interface Listed {
  ids: string[];
  changed: Set<string>;
}

export interface ListContext {
  fetcher: Fetcher;
  intake: Intake;
  records: Records;
  safetyMarginMs: number;
  progress(message: string): void;
  /** The members of a source as the last sync stored them. */
  stored(key: string): StoredMembers;
  /** Settles once the repository's locales are known: records are fetched only then. */
  localesKnown: Promise<void>;
}

export async function listSource(plan: SourcePlan, context: ListContext): Promise<Listed> {
  const { source } = plan;
  const { fetcher, intake } = context;
  if (plan.how !== 'incremental') {
    // An alias, or a full source: every member is taken in anew.
    await context.localesKnown;
    let told = -1; // the tenths of a full source told so far
    const ids =
      plan.how === 'alias'
        ? await fetcher.alias(source)
        : await fetcher.full(source, (done, total) => {
            // A source of more than a page tells its first page, then each tenth, not every page.
            const tenths = Math.floor((done * 10) / total);
            if ((done === total && told === -1) || tenths === told) return;
            told = tenths;
            context.progress(`${source.key}: ${done.toLocaleString('en')} of ${total.toLocaleString('en')} documents`);
          });
    return { ids, changed: new Set(ids) };
  }
  const pages = fetcher.stamps(source);
  const first = pages.next();
  first.catch(() => {}); // awaited below
  // The stored members the stamps are compared with are read while the first page is on its way.
  await new Promise((resolve) => setImmediate(resolve));
  const stored = context.stored(source.key);
  let storedAt: Map<string, number> | undefined; // where each stored member stands, when the order moved
  const since = new Date(Date.parse(plan.syncedAt!) - context.safetyMarginMs).toISOString();
  let changedSince: Promise<void> | undefined;
  const ids: string[] = [];
  const changed = new Set<string>();
  try {
    for (let answer = await first; !answer.done; answer = await pages.next()) {
      for (const { id, updatedAt = '', revision = 0 } of answer.value) {
        let at: number | undefined = ids.push(id) - 1;
        if (stored.ids[at] !== id) at = (storedAt ??= new Map(stored.ids.map((member, i) => [member, i]))).get(id);
        if (
          at === undefined ||
          stored.updatedAt[at] !== updatedAt ||
          stored.revisions[at] !== revision ||
          context.records.dropped.has(id)
        )
          changed.add(id);
      }
      if (changed.size > 0 && !changedSince) {
        changedSince = context.localesKnown.then(() => fetcher.changedSince(source, since));
        changedSince.catch(() => {}); // handled below; a failure meanwhile is not an unhandled rejection
      }
    }
  } finally {
    await pages.return(undefined).catch(() => {}); // its pages still in flight are let go
    await changedSince?.catch(() => {}); // never left running
  }
  if (changedSince) {
    await changedSince;
    const leftovers = [...changed].filter((id) => !intake.taken.has(id));
    const found = await fetcher.byIds(leftovers, requestOptions(source));
    // A member listed but gone by the time it was fetched: the closures of the last sync do not hold.
    if (leftovers.some((id) => !found.has(id) && !context.records.info(id))) intake.relinked = true;
    context.progress(`${source.key}: ${ids.length} members, ${changed.size} changed`);
  }
  return { ids, changed };
}
