import type { Records } from '../cache/records.ts';
import { requestOptions } from './config.ts';
import type { Fetcher } from './fetch.ts';
import type { Intake } from './intake.ts';
import type { SourcePlan } from './plan.ts';

/**
 * The list phase: a source's members, in its order. An alias is fetched (with its includes), a
 * full source page by page with its includes. An incremental source is listed by stamps; from
 * the first stamp that differs from the stored one, the documents changed since the last sync
 * (less a safety margin, for clocks and slow publishes) are fetched while the listing goes on.
 * Listed documents that still differ after that (a clock off by more than the margin) are
 * fetched by id.
 */
export async function listSource(plan: SourcePlan, context: { fetcher: Fetcher; intake: Intake; records: Records; safetyMarginMs: number; progress(message: string): void; pageSize: number }): Promise<string[]> {
  const { source } = plan;
  const { fetcher, intake, records } = context;
  if (plan.how === 'alias') return fetcher.alias(source);
  if (plan.how === 'full') {
    return fetcher.full(source, (done, total) => {
      if (total > context.pageSize) context.progress(`${source.key}: ${done.toLocaleString('en')} of ${total.toLocaleString('en')} documents`);
    });
  }
  const since = new Date(Date.parse(plan.syncedAt!) - context.safetyMarginMs).toISOString();
  let changedSince: Promise<void> | undefined;
  const members: string[] = [];
  const changed: string[] = [];
  try {
    for await (const stamps of fetcher.stamps(source)) {
      for (const { id, updatedAt, revision } of stamps) {
        members.push(id);
        if (!records.sameStamps(id, updatedAt, revision)) changed.push(id);
      }
      if (changed.length > 0 && !changedSince) {
        changedSince = fetcher.changedSince(source, since);
        changedSince.catch(() => {}); // handled below; a failure meanwhile is not an unhandled rejection
      }
    }
  } finally {
    await changedSince?.catch(() => {}); // never left running
  }
  if (changedSince) {
    await changedSince;
    const leftovers = changed.filter((id) => !intake.taken.has(id));
    const found = await fetcher.byIds(leftovers, requestOptions(source));
    // A member listed but gone by the time it was fetched: the closures of the last sync do not hold.
    if (leftovers.some((id) => !found.has(id) && !records.info(id))) intake.relinked = true;
    context.progress(`${source.key}: ${members.length} members, ${changed.length} changed`);
  }
  return members;
}
