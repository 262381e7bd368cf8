import type { ConfigError } from '../sync/config.ts';

/**
 * A live loader whose options are wrong (see `comfortableLiveLoader` in live.ts). Astro evaluates
 * `src/live.config.ts` when a page first reads a live collection, so a loader that threw there
 * would fail every page of the server with a 500 and a stack trace. This one is made instead: each
 * request returns the options' problem
 * as the loader's error (code `config`), which a page answers as it answers a CMS that is down
 * (503), and the integration finds it at build and when `astro dev` starts (live-check.ts), and
 * fails them with the same message.
 */

/**
 * Where a misconfigured loader keeps its problem: a key of the process (`Symbol.for`), because the
 * integration and `src/live.config.ts` may each load their own copy of this module.
 */
const problemKey = Symbol.for('comfortable-loader.liveOptionsProblem');

/** The problem of the options, said for a place (` in src/live.config.ts`). */
type OptionsProblem = (where: string) => ConfigError;

/** Marks a loader as made for options that are wrong, with their problem, for the check to find. */
export function withProblem<L extends object>(loader: L, problem: OptionsProblem): L {
  return Object.assign(loader, { [problemKey]: problem });
}

/**
 * The problem of a live loader of this package whose options are wrong, named for its collection
 * and file; undefined for any other loader.
 */
export function optionsProblem(loader: unknown, collection: string, file: string): ConfigError | undefined {
  const problem = (loader as Record<symbol, unknown> | null | undefined)?.[problemKey];
  return typeof problem === 'function'
    ? (problem as OptionsProblem)(` for the live collection "${collection}" in ${file}`)
    : undefined;
}
