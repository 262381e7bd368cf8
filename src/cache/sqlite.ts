import { createRequire } from 'node:module';
import type * as Sqlite from 'node:sqlite';

/**
 * Runs `load` with SQLite's "ExperimentalWarning: SQLite is an experimental feature" left out:
 * Node 22 prints it when `node:sqlite` is first loaded, and it would stand in every user's build
 * log. Only that warning, and only while `load` runs (synchronously, so no other code runs
 * meanwhile); every other warning goes through as before. Node 24 prints none.
 */
export function withoutSqliteWarning<T>(load: () => T): T {
  const emit = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning.message;
    const type =
      typeof rest[0] === 'string'
        ? rest[0]
        : ((rest[0] as { type?: string } | undefined)?.type ?? (warning as Error).name);
    if (type === 'ExperimentalWarning' && /SQLite/i.test(text)) return;
    return (emit as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return load();
  } finally {
    process.emitWarning = emit;
  }
}

/** `node:sqlite`, loaded once. */
export const { DatabaseSync } = withoutSqliteWarning(
  () => createRequire(import.meta.url)('node:sqlite') as typeof Sqlite,
);
export type Database = Sqlite.DatabaseSync;
export type Statement = Sqlite.StatementSync;
