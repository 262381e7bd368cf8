import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoSnapshot } from './server.ts';

/** The command-line interface, run from source. */
const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

export interface PullRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `comfortable-loader <args>` in `cwd`, with no CMFT_* of this process leaking in. */
export function runIn(cwd: string, args: string[], env: Record<string, string> = {}): Promise<PullRun> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('CMFT_')));
  const child = spawn(process.execPath, [cli, ...args], { cwd, env: { ...clean, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** A project folder holding `comfortable.config.json` with `config`. */
export function projectWith(config: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'cmft-pull-'));
  writeFileSync(join(dir, 'comfortable.config.json'), JSON.stringify(config, null, 2));
  return dir;
}

/** A copy of the demo snapshot and its images in a folder of its own; returns the snapshot's path. */
export function demoCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cmft-demo-'));
  cpSync(dirname(demoSnapshot), dir, { recursive: true });
  return join(dir, 'demo.json');
}
