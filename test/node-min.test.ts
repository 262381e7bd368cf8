import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openCache } from '../src/cache/index.ts';
import type { ReadApiServer } from '../src/server/index.ts';
import { startTiny, tinyKey } from './helpers/server.ts';
import { skipBecause } from './helpers/skip.ts';

/**
 * The oldest Node the package allows (`engines.node`, 22.19) runs the built CLI with a
 * `comfortable.config.ts`: Node strips its types itself, so the config loads with a plain
 * `import()`, and the sync writes its SQLite cache, without a single warning on stderr.
 *
 * The binary comes from `COMFORTABLE_MIN_NODE` (`.ci/run` installs Node 22.19.0 and sets it),
 * else from `.tools/node22-min`; without either the test is skipped and says why. The CLI is
 * compiled for this test alone (tsconfig.build.json, into test/.tmp) so that a build running
 * at the same time elsewhere cannot change it under the test.
 */

const root = fileURLToPath(new URL('..', import.meta.url));
const minimum = /^>=(\d+)\.(\d+)$/.exec(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node)!;
const localBinary = join(root, '.tools/node22-min/node_modules/.bin/node');
const minNode = process.env.COMFORTABLE_MIN_NODE || (existsSync(localBinary) ? localBinary : undefined);
const noBinary =
  'no Node 22.19 binary: set COMFORTABLE_MIN_NODE, or run .ci/run, which installs one into .tools/node22-min';

/** A Node older than the package allows (the machine's own Node 20, say), from COMFORTABLE_OLD_NODE or the usual places. */
function olderNode(): string | undefined {
  const allowed = (version: string) => {
    const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
    return major > Number(minimum[1]) || (major === Number(minimum[1]) && minor >= Number(minimum[2]));
  };
  for (const candidate of [process.env.COMFORTABLE_OLD_NODE, '/usr/bin/node', '/usr/local/bin/node']) {
    if (!candidate || !existsSync(candidate)) continue;
    try {
      if (!allowed(execFileSync(candidate, ['-v'], { encoding: 'utf8' }).trim())) return candidate;
    } catch {
      // not a Node that runs here
    }
  }
  return undefined;
}

const cleanups: string[] = [];
let server: ReadApiServer | undefined;
afterAll(async () => {
  await server?.close();
  await Promise.all(cleanups.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** The CLI compiled from this checkout, in a folder of its own inside the repository (so its dependencies resolve). */
async function buildCli(): Promise<string> {
  await mkdir(join(root, 'test/.tmp'), { recursive: true });
  const out = await mkdtemp(join(root, 'test/.tmp/node-min-'));
  cleanups.push(out);
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  await promisify(execFile)(process.execPath, [
    tsc,
    '-p',
    join(root, 'tsconfig.build.json'),
    '--outDir',
    join(out, 'dist'),
    '--declaration',
    'false',
    '--sourceMap',
    'false',
    '--inlineSources',
    'false',
  ]);
  await copyFile(join(root, 'package.json'), join(out, 'package.json')); // the version the CLI reads, and "type": "module"
  return join(out, 'dist/cli.js');
}

function run(
  node: string,
  args: string[],
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const { CI: _ci, NODE_OPTIONS: _options, ...env } = process.env;
    const child = spawn(node, args, { cwd, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe(`the oldest Node the package allows (${minimum[0]})`, () => {
  it('runs `sync --config comfortable.config.ts` of the built CLI, writes the cache, and warns of nothing', {
    timeout: 60_000,
  }, async (context) => {
    if (!minNode) return skipBecause(context, noBinary);
    const version = (await run(minNode, ['-v'], root)).stdout.trim();
    expect(version, `${minNode} is not the minimum Node`).toMatch(new RegExp(`^v${minimum[1]}\\.${minimum[2]}\\.`));

    const cli = await buildCli();
    server = await startTiny();
    const project = await mkdtemp(join(tmpdir(), 'node-min-'));
    cleanups.push(project);
    const config = join(project, 'comfortable.config.ts');
    // Type annotations and a type-only import: what Node must strip before it can run the file.
    await writeFile(
      config,
      `import type { SyncConfigInput } from 'comfortable-loader';

const cacheDir: string = ${JSON.stringify(join(project, 'cache'))};
export default {
  baseUrl: ${JSON.stringify(server.url)},
  repository: 'tiny',
  apiKey: ${JSON.stringify(tinyKey)},
  collections: { news: { includes: 1 } },
  aliases: ['home'],
  cacheDir,
} satisfies SyncConfigInput;
`,
    );

    const { code, stdout, stderr } = await run(minNode, [cli, 'sync', '--config', config], project);
    expect(stderr).not.toMatch(/ExperimentalWarning|SQLite|strip|TypeScript/i);
    // The only lines are the sync's own, about the fixture's deliberate dangling reference.
    for (const line of stderr.trim().split('\n')) expect(line).toMatch(/^warning: Dangling reference: /);
    expect(code).toBe(0);
    expect(stdout).toContain(`Syncing with ${config}`);
    expect(stdout).toMatch(/Synced tiny: \d+ records/);

    const cache = openCache(join(project, 'cache'));
    expect(cache?.head.repository).toBe('tiny');
    expect(cache!.members('collection:news').length).toBeGreaterThan(0);
  });
});

describe('a Node older than the package allows', () => {
  it('gets one sentence that names both versions from the CLI, and from an import of the package, not a dependency failing', {
    timeout: 60_000,
  }, async (context) => {
    const old = olderNode();
    if (!old)
      return skipBecause(context, 'no Node older than the package allows on this machine: set COMFORTABLE_OLD_NODE');
    const version = (await run(old, ['-v'], root)).stdout.trim().replace(/^v/, '');
    const sentence = `comfortable-loader needs Node.js ${minimum[1]}.${minimum[2]} or newer, and this is Node.js ${version}: install a newer Node.js (24 LTS, say) and run it again.`;
    const cli = await buildCli();
    const { code, stdout, stderr } = await run(old, [cli, 'sync'], root);
    expect(stderr).toBe(`${sentence}\n`);
    expect(stdout).toBe('');
    expect(code).toBe(1);

    const imported = await run(
      old,
      ['--input-type=module', '-e', `await import(${JSON.stringify(join(cli, '../index.js'))})`],
      root,
    );
    expect(imported.code).not.toBe(0);
    expect(imported.stderr).toContain(sentence);
    expect(imported.stderr).not.toContain("reading 'bind'");
  });
});
