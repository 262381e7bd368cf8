import { createRequire } from 'node:module';
import type * as Sqlite from 'node:sqlite';

/**
 * `node:sqlite`, loaded once. On Node 22 loading it prints "ExperimentalWarning: SQLite is an
 * experimental feature", which would stand in every user's build log; that one warning is left
 * out while the module loads (synchronously, so no other code runs meanwhile), every other
 * warning goes through as before. Node 24 prints none.
 */
function load(): typeof Sqlite {
  const emit = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type ?? (warning as Error).name;
    if (type === 'ExperimentalWarning' && /SQLite/i.test(text)) return;
    return (emit as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return createRequire(import.meta.url)('node:sqlite') as typeof Sqlite;
  } finally {
    process.emitWarning = emit;
  }
}

export const { DatabaseSync } = load();
export type Database = Sqlite.DatabaseSync;
export type Statement = Sqlite.StatementSync;
