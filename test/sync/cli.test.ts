import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { allRecordIds, key, serve, sorted, standard, tempDir } from '../helpers/magazine.ts';

/**
 * The `sync` command, run as a child process against the real local server: progress and a
 * changeset summary (or the result as JSON), and its exit codes: 0 when synced, 2 on a bad
 * config or option, 1 when the sync fails; never the API key in what it prints.
 */

describe('the sync command', () => {
  const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

  function run(args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const { CI: _ci, ...env } = process.env;
      const child = spawn(process.execPath, [cli, 'sync', ...args], { cwd, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  async function project(config: Record<string, unknown>): Promise<string> {
    const dir = await tempDir();
    await writeFile(join(dir, 'comfortable.config.json'), JSON.stringify({ cacheDir: join(dir, 'cache'), ...config }));
    return dir;
  }

  it('prints progress and a changeset summary, and exits 0', async () => {
    const { server } = await serve();
    const dir = await project({ baseUrl: server.url, repository: 'mag', apiKey: key, ...standard, pageSize: 2 });
    const { code, stdout, stderr } = await run([], dir);
    expect(code).toBe(0);
    expect(stderr.trim().split('\n')).toEqual([
      'warning: Dangling reference: document 1002, field related points to 1999, which the server does not have',
    ]);
    expect(stdout).toContain(`Syncing with ${join(dir, 'comfortable.config.json')}`);
    expect(stdout).toMatch(/collection:articles: 2 of 3 documents/);
    expect(stdout).toMatch(/Synced mag: 7 records \(7 added, 0 updated, 0 removed\)/);
    expect(stdout).toContain('  collection:articles: 3 added, 0 updated, 0 removed');
    expect(stdout).toContain('  alias:home: 1 added, 0 updated, 0 removed');
    expect(stdout).not.toContain(key);

    const again = await run(['--mode', 'incremental'], dir);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('  collection:articles: 0 added, 0 updated, 0 removed');
  });

  it('with --json prints the result as JSON on stdout and progress on stderr', async () => {
    const { server } = await serve();
    const dir = await project({ baseUrl: server.url, repository: 'mag', apiKey: key, ...standard });
    const { code, stdout, stderr } = await run(['--json'], dir);
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(sorted(result.changeset.records.added)).toEqual(allRecordIds);
    expect(result.stats.written).toBe(7);
    expect(result.dangling).toEqual([{ from: '1002', field: 'related', id: '1999' }]);
    expect(result.cacheDir).toBe(join(dir, 'cache'));
    expect(stderr).toMatch(/Synced mag/);
  });

  it('exits 2 on a bad config, naming the option', async () => {
    const dir = await project({
      baseUrl: 'http://127.0.0.1:9/v1',
      repository: 'mag',
      apiKey: key,
      ...standard,
      mode: 'sometimes',
    });
    const { code, stderr } = await run([], dir);
    expect(code).toBe(2);
    expect(stderr).toMatch(/mode/);
    expect(stderr).toMatch(/incremental/);
    expect(stderr).not.toContain(key);
    expect((await run(['--mode', 'sometimes'], dir)).code).toBe(2);
    expect((await run(['--config', 'missing.json'], dir)).code).toBe(2);
  });

  it('exits 1 when the sync fails', async () => {
    const dir = await project({
      baseUrl: 'http://127.0.0.1:9/v1',
      repository: 'mag',
      apiKey: key,
      ...standard,
      onError: 'fail',
    });
    const offline = await run(['--mode', 'offline'], dir);
    expect(offline.code).toBe(1);
    expect(offline.stderr).toMatch(/Offline mode needs a cache/);
    const unreachable = await run([], dir);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/failed/);
    expect(unreachable.stderr).not.toContain(key);
  }, 60_000);
});
