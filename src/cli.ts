#!/usr/bin/env node
/**
 * The command line. The Node version is checked before anything else loads (static imports
 * would load the dependencies first), so an old Node gets one sentence and exit code 1.
 */
try {
  await import('./node-check.ts');
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}

const { main } = await import('./commands/main.ts');
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`Error: ${(error as Error).message}`);
    process.exit(1);
  },
);
