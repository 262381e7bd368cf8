import type { TestContext } from 'vitest';

/**
 * Skips that say why in the output: vitest's default reporter counts a skipped test but does not
 * show the note given to `context.skip`, so a test that cannot run here (no root, no strace, no
 * browser) would pass by unnoticed.
 */

/** Skips the running test, with a line on stderr that names it and says why. */
export function skipBecause(context: TestContext, why: string): never {
  console.warn(`skipped "${context.task.name}": ${why}`);
  return context.skip(why);
}

/** For `describe.skipIf`: `skip`, after a line on stderr that names the tests and says why when it is true. */
export function skippedWhen(skip: boolean, tests: string, why: string): boolean {
  if (skip) console.warn(`skipped "${tests}": ${why}`);
  return skip;
}
