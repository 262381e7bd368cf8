import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Tests that bound how long something takes (a server answering within 100 ms while it is
 * attacked, a timeout holding within ~50 ms) run last, one file at a time, so that they measure
 * the code and not the other test files sharing the machine's cores.
 */
const timed = ['test/server-fuzz-adversarial.test.ts', 'test/client-timeouts.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'main', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...timed], sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'timed', include: timed, fileParallelism: false, sequence: { groupOrder: 1 } } },
    ],
  },
});
