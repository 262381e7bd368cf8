import type { Records } from '../cache/index.ts';
import type { ApiRecord } from '../wire/schemas.ts';
import {
  embeddedIn,
  mergePartial,
  type Model,
  normalizeRecord,
  referenceList,
  type StoredRecord,
} from '../model/records.ts';
import { digest } from '../model/digests.ts';
import { countLocales, localeShaped } from '../model/locales.ts';
import type { LocaleKeys } from '../model/shapes.ts';

/** A page of a list answer, or an alias or record answer with its includes. */
export interface AnsweredPage {
  data: ApiRecord[];
  includes?: Record<string, ApiRecord[]> | undefined;
}

/**
 * The normalise phase: turns answered records into stored ones in the sync's transaction, and
 * keeps what the run has taken in. It is the one owner of that state:
 * - `taken`: records answered in this run (stored, or found stored as they are);
 * - `checked`: records answered with the stamps of their stored version (whose closures hold);
 * - `relinked`: whether a record was added, dropped, or changed its references in this run,
 *   which is what decides whether the closures of the last sync still hold.
 */
export class Intake {
  readonly taken = new Set<string>();
  readonly checked = new Set<string>();
  relinked = false;
  /** Records written to the cache in this run. */
  written = 0;
  /**
   * Bumped by every record written or dropped: what was worked out from the records at another version may be stale.
   */
  version = 0;
  readonly #records: Records;
  readonly #model: Model;
  readonly #refetch: ReadonlySet<string>;
  /** Keys of the form of locale keys until the repository's are known (`useLocales`). */
  #locales: LocaleKeys = localeShaped;
  /** How often each locale key was seen, while the repository's locales are not known. */
  readonly localeCounts = new Map<string, number>();

  constructor(records: Records, model: Model, refetch: ReadonlySet<string>) {
    this.#records = records;
    this.#model = model;
    this.#refetch = refetch;
  }

  /** Takes in every record of a page; `masked` when the source has a fields mask. Returns the ids of its data. */
  acceptPage(page: AnsweredPage, masked: boolean): string[] {
    // What the page names is looked up at once, not record by record.
    const included = Object.values(page.includes ?? {}).flat();
    if (!this.#records.startedEmpty) {
      const named = [...page.data, ...included].flatMap((record) => [record, ...embeddedIn(record, this.#locales)]);
      this.#records.infos(named.map((record) => record.meta.id));
    }
    for (const record of page.data) this.accept(record, masked);
    for (const record of included) {
      // An included record with the stamps of the stored (whole) version is that version: it is
      // checked, and only what it embeds with other stamps than the stored ones is taken in.
      if (this.#sameStamps(record)) {
        this.checked.add(record.meta.id);
        for (const child of embeddedIn(record, this.#locales)) {
          if (this.#sameStamps(child)) this.checked.add(child.meta.id);
          else this.accept(child, false);
        }
      } else this.accept(record, masked);
    }
    return page.data.map((record) => record.meta.id);
  }

  /** Normalises an answered record, and the records embedded in it, into the cache. */
  accept(answer: ApiRecord, masked: boolean): void {
    const embedded: ApiRecord[] = [];
    if (this.#locales === localeShaped) countLocales(answer.fields, this.localeCounts);
    let record = normalizeRecord(answer, this.#locales, this.#model, (child) => embedded.push(child));
    let partial = false;
    if (masked) ({ record, partial } = this.#mergeMasked(record));
    const json = JSON.stringify(record);
    this.taken.add(record.id);
    const put = this.#records.put(record, json, digest(json), partial, referenceList(record));
    if (put.changed) {
      this.written++;
      this.version++;
    }
    if (put.relinked) this.relinked = true;
    for (const child of embedded) {
      // An asset embedded with the stamps of the version stored or taken before is that version
      // (as an included record is), unless a hint names it and this run has not taken it yet.
      if (this.#sameStamps(child) && (this.taken.has(child.meta.id) || !this.#refetch.has(child.meta.id))) {
        this.checked.add(child.meta.id);
        continue;
      }
      this.accept(child, false);
    }
  }

  /** Removes a record (gone from the server, or needed by no source). */
  drop(id: string): void {
    if (!this.#records.drop(id)) return;
    this.relinked = true;
    this.version++;
  }

  /** The repository's locale keys, once known: locales are no longer guessed from the data. */
  useLocales(keys: LocaleKeys): void {
    this.#locales = keys;
  }

  #sameStamps(answer: ApiRecord): boolean {
    return this.#records.sameStamps(answer.meta);
  }

  /**
   * A masked answer holds some fields only: the others are kept from the stored version when it
   * is of the same revision (an older one would mix old values in). Unless that version is
   * complete, the result is partial, and is fetched whole when a source without a mask needs it.
   */
  #mergeMasked(answer: StoredRecord): { record: StoredRecord; partial: boolean } {
    const info = this.#records.info(answer.id);
    const stored = info && this.#records.body(answer.id);
    const base =
      stored && stored.updatedAt === answer.updatedAt && stored.revision === answer.revision ? stored : undefined;
    return { record: mergePartial(base, answer), partial: !base || info?.partial === true };
  }
}
