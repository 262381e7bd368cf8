import { defaultBaseUrl } from '../api/client.ts';
import type { ConfigError } from '../sync/config.ts';
import type { ComfortableLiveLoader } from './live.ts';
import { liveError } from './live-errors.ts';

/**
 * A live loader whose options are wrong. Astro evaluates `src/live.config.ts` when a page first
 * reads a live collection, so a loader that threw there would fail every page of the server with
 * a 500 and a stack trace. This one is made instead: each request returns the options' problem
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
export type OptionsProblem = (where: string) => ConfigError;

/** The loader for options that are wrong; `apiKey` (if the options have one) is only scrubbed from messages. */
export function misconfiguredLoader<Fields extends Record<string, unknown>>(
  problem: OptionsProblem,
  apiKey: unknown,
): ComfortableLiveLoader<Fields> {
  const failure = async ({ collection }: { collection: string }) => ({
    error: liveError(problem(' in src/live.config.ts'), {
      collection,
      baseUrl: defaultBaseUrl,
      apiKey: typeof apiKey === 'string' ? apiKey : undefined,
      aliases: false,
    }),
  });
  const loader: ComfortableLiveLoader<Fields> = {
    name: 'comfortable-live-loader',
    loadCollection: failure,
    loadEntry: failure,
  };
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
