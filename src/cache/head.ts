import type { Locales } from '../model/locales.ts';
import type { Model } from '../model/records.ts';
import { CacheError } from './database.ts';
import type { Database } from './sqlite.ts';

/** What a cache holds besides records and sources: whose it is, and the repository's shape. */
export interface CacheHead {
  /** A hash of base URL, repository, package version and format; never the key. */
  fingerprint: string;
  repository: string;
  baseUrl: string;
  package: string;
  /** ISO time of the last sync. */
  lastSync: string;
  locales: Locales;
  model: Model;
  /** How many records the cache holds (kept by each commit from what it changed). */
  records: number;
}

export const headKeys = [
  'fingerprint',
  'repository',
  'baseUrl',
  'package',
  'lastSync',
  'locales',
  'model',
  'records',
] as const;

/** The head of a cache of this format; a missing value is damage. */
export function readHead(db: Database): CacheHead {
  const rows = db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[];
  const values = new Map(rows.map((row) => [row.key, row.value]));
  const head: Record<string, unknown> = {};
  for (const key of headKeys) {
    const value = values.get(key);
    if (value === undefined) throw new CacheError('cache_damaged', `its ${key} is missing`);
    try {
      head[key] = JSON.parse(value);
    } catch {
      throw new CacheError('cache_damaged', `its ${key} is not JSON`);
    }
  }
  return head as unknown as CacheHead;
}
