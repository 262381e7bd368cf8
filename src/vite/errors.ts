import { scrub } from '../api/errors.ts';
import { ConfigError } from '../sync/config.ts';
import { hintFor, type OptionsSite } from '../api/hints.ts';
import { hintSettings, rootOf } from '../sync/hints.ts';
import type { SharedSync } from '../sync/shared.ts';

/**
 * The plugin's failures as a Vite user sees them: the message of what failed, then the option
 * to fix and where it is written (see api/hints.ts), as the Astro loader's hints say it.
 */

/** Where a plain Vite project writes the options the hints name. */
export const viteSite: OptionsSite = {
  kind: 'sync',
  call: 'comfortable()',
  options: 'comfortable() in vite.config',
  cacheFolder: 'node_modules/.vite',
};

/**
 * A sync's failure that a user fixes in the options: the message (with the URL and the answer)
 * ends with what to check. It has no `cause`: Vite would print the stack of this package's
 * internals under it, which says nothing to someone whose key or option is wrong.
 */
export class ComfortableViteError extends Error {
  /** The code of the error it stands for, such as `authentication` or `not_found`. */
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'ComfortableViteError';
    this.code = code;
    userFacing(this);
  }
}

/** Leaves the message alone in the stack Vite prints, for an error of the options (see above). */
export function userFacing<E extends Error>(error: E): E {
  error.stack = `${error.name}: ${error.message}`;
  return error;
}

/**
 * For a sync's failure a user fixes in the options (key, base URL, repository, a source's name or
 * options, cache folder): its code, its message without the key or a final full stop, and the hint
 * of what to check where `site` writes the options; undefined for any other.
 */
export function optionsHint(error: Error, shared: SharedSync, site: OptionsSite) {
  const settings = hintSettings(shared);
  const root = rootOf(error);
  const hint = settings && hintFor(root, settings, site);
  if (!settings || hint === undefined) return undefined;
  return { code: root.code!, message: scrub(error.message, settings.apiKey).replace(/\.+$/, ''), hint };
}

/** The error the plugin throws for `error`: with the hint when it is one fixed in the options, the key never in it. */
export function viteError(error: unknown, shared: SharedSync): unknown {
  if (!(error instanceof Error)) return error;
  if (error instanceof ConfigError) return userFacing(error);
  const hinted = optionsHint(error, shared, viteSite);
  return hinted ? new ComfortableViteError(hinted.code, `${hinted.message}. ${hinted.hint}`) : error;
}
