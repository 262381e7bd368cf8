import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * `npm run bench`: runs each benchmark script in turn, each in its own Node process (the Node
 * running this one, 24 or later), and exits non-zero if any of them failed or missed a target.
 * To add a benchmark, add its file to the list.
 */

const scripts = ['server.ts', 'client.ts', 'astro.ts', 'sync.ts'];

const [major] = process.versions.node.split('.').map(Number);
if (major! < 24) {
  console.error(`The benchmarks need Node 24 or later (they run .ts files directly); this is Node ${process.versions.node}.`);
  process.exit(2);
}

const failed: string[] = [];
for (const script of scripts) {
  console.log(`\n=== bench/${script} ===\n`);
  const { status, signal } = spawnSync(process.execPath, [fileURLToPath(new URL(script, import.meta.url))], { stdio: 'inherit' });
  if (status !== 0) failed.push(`${script} (${signal ?? `exit ${status}`})`);
}
if (failed.length > 0) {
  console.error(`\nFailed or missed a target: ${failed.join(', ')}`);
  process.exit(1);
}
