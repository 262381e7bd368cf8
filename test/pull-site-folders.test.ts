import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotPort } from '../src/astro/snapshot.ts';
import { startServer } from '../src/server/index.ts';
import { copyFixture, runAstro } from './helpers/astro.ts';
import { differences, tree } from './helpers/dist.ts';
import { tinyWithFileAssets } from './helpers/file-assets.ts';
import { runIn } from './helpers/pull.ts';
import { tinyKey } from './helpers/server.ts';

/**
 * One site and its pulled copy (with its files) in two folders, as a laptop and a CI runner
 * have them: built from the copy (CMFT_SNAPSHOT), each gives the same dist/, file for file and
 * byte for byte. The images' optimised names come from their URLs, which hold the in-process
 * server's port: that port follows the copy, not the folder it lives in.
 */

let a: { dir: string; remove(): Promise<void> };
let b: { dir: string; remove(): Promise<void> };
let cmsFiles: string;
let localKey: string;
const copy = { CMFT_SNAPSHOT: 'content/tiny.json', CMFT_API_KEY: undefined, CMFT_BASE_URL: undefined };

async function build(dir: string): Promise<string> {
  const { code, output } = await runAstro(dir, ['build'], copy);
  expect(code, output).toBe(0);
  return output;
}

beforeAll(async () => {
  const snapshot = tinyWithFileAssets();
  cmsFiles = dirname(snapshot);
  const cms = await startServer({ paths: [snapshot], watch: false });
  a = await copyFixture('astro-copy', 'copy-folder-a');
  await writeFile(
    join(a.dir, 'comfortable.config.json'),
    JSON.stringify({ baseUrl: cms.url, repository: 'tiny', apiKey: tinyKey, collections: { news: {} } }),
  );
  const pulled = await runIn(a.dir, ['pull', '--assets']);
  await cms.close();
  expect(pulled.code, pulled.stderr).toBe(0);
  localKey = JSON.parse(await readFile(join(a.dir, 'content/tiny.json'), 'utf8')).repository.apiKeys[0];
  // The same project in another folder, before either is built: what a CI runner checks out.
  b = await copyFixture('astro-copy', 'copy-folder-b');
  await cp(a.dir, b.dir, { recursive: true });
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.remove(), b?.remove(), cmsFiles && rm(cmsFiles, { recursive: true, force: true })]);
});

describe('a copy built in two folders', () => {
  it('gives the same dist/, its optimised images included, served on the port of the copy', async () => {
    const served = `Serving the snapshot content/tiny.json in-process at http://127.0.0.1:${snapshotPort(localKey)}/v1`;
    expect(await build(a.dir)).toContain(served);
    expect(await build(b.dir)).toContain(served);
    const [inA, inB] = await Promise.all([tree(a.dir), tree(b.dir)]);
    expect([...inA.keys()].filter((path) => path.startsWith('_astro/')).length).toBeGreaterThanOrEqual(2);
    expect(differences(inA, inB)).toEqual([]);
  }, 240_000);

  it('while its port is taken: serves on another with a note, and the next build is as before', async () => {
    const before = await tree(a.dir);
    const port = snapshotPort(localKey);
    const taker: Server = createServer();
    await new Promise<void>((resolve) => taker.listen(port, '127.0.0.1', resolve));
    try {
      const output = await build(a.dir);
      expect(output).toMatch(
        new RegExp(
          `port ${port}, where this snapshot is usually served, is taken \\(another build or dev server\\?\\): ` +
            'serving on \\d+, so the content cache is fetched again',
        ),
      );
      expect(differences(before, await tree(a.dir))).not.toEqual([]); // other URLs, other image names
    } finally {
      await new Promise((resolve) => taker.close(resolve));
    }
    const output = await build(a.dir);
    expect(output).not.toContain('is taken');
    expect(differences(before, await tree(a.dir))).toEqual([]);
  }, 240_000);
});
