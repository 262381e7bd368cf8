import { AstroError } from 'astro/errors';
import type { OptionsSite } from '../api/hints.ts';
import type { SharedSync } from '../sync/shared.ts';
import { optionsHint } from '../vite/errors.ts';

/**
 * A loader's failure as Astro shows it: the message of what failed, and a hint naming the
 * option to check (see api/hints.ts). Without one, Astro hints at "a syntax error inside your
 * content", which sends a user with a wrong key or a server that is down to the wrong place.
 * Astro prints the `hint` of an `AstroError` (from `astro/errors`) under the message, in a
 * build and in dev.
 */
class LoaderError extends AstroError {
  /** The code of the error it stands for, such as `authentication` or `cache_unwritable`. */
  readonly code: string;
  constructor(code: string, message: string, hint: string) {
    super(message, hint);
    this.name = 'ComfortableLoaderError';
    this.code = code;
  }
}

/** Where an Astro project writes the options the hints name. */
const astroSite: OptionsSite = {
  kind: 'sync',
  call: 'comfortable()',
  options: 'comfortable() in astro.config',
  cacheFolder: 'node_modules/.astro',
  loaders: { name: 'comfortableLoader', file: 'src/content.config.ts' },
};

/**
 * The error a loader throws for `error`: a `LoaderError` with a hint when it is one a user
 * fixes in the options (key, base URL, repository, a source's name or options, cache folder),
 * else `error` itself (Astro's own errors, such as a schema that refused an entry, included).
 */
export function loaderError(error: unknown, shared: SharedSync): unknown {
  if (!(error instanceof Error)) return error;
  // Without a full stop of its own: Astro ends the message with one when it tells it.
  const hinted = optionsHint(error, shared, astroSite);
  return hinted ? new LoaderError(hinted.code, hinted.message, hinted.hint) : error;
}

/** An error's message and, for a LoaderError, its hint, as a log line. */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const hint = (error as { hint?: unknown }).hint;
  return typeof hint === 'string' ? `${error.message}\n  Hint: ${hint}` : error.message;
}
