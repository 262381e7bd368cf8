import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotPort } from '../src/astro/snapshot.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { copyFixture, runAstro } from './helpers/astro.ts';
import { runIn } from './helpers/pull.ts';
import { fixture, tinyKey, tinySnapshot } from './helpers/server.ts';

/**
 * A site on a pulled copy: the integration's `snapshot` option (here through CMFT_SNAPSHOT)
 * serves it in-process, with no key and no CMS, and the site equals the one built on the
 * original repository.
 */

let original: ReadApiServer;
let a: { dir: string; remove(): Promise<void> };
let b: { dir: string; remove(): Promise<void> };

const files = (dir: string): Map<string, Buffer> => {
  const out = new Map<string, Buffer>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.set(relative(dir, path), readFileSync(path));
    }
  };
  walk(dir);
  return out;
};

/** The tiny snapshot with each asset's file beside it (its own are on hosts the tests cannot reach). */
function tinyWithFiles(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cmft-tiny-'));
  const snapshot = tinySnapshot();
  mkdirSync(join(dir, 'images'));
  for (const asset of snapshot.assets) {
    const name = `${asset.meta.id}.svg`;
    const svg = readFileSync(fixture('images/apples.svg'));
    writeFileSync(join(dir, 'images', name), svg);
    asset.fields.file = {
      ...asset.fields.file,
      url: `images/${name}`,
      fileName: name,
      mimeType: 'image/svg+xml',
      size: svg.length,
    };
  }
  writeFileSync(join(dir, 'tiny.json'), JSON.stringify(snapshot));
  return join(dir, 'tiny.json');
}
let tinyFile: string;

beforeAll(async () => {
  tinyFile = tinyWithFiles();
  original = await startServer({ paths: [tinyFile], watch: false });
  [a, b] = await Promise.all([copyFixture('astro-small', 'pull-site-a'), copyFixture('astro-small', 'pull-site-b')]);
});
afterAll(async () => {
  await original.close();
  await Promise.all([a.remove(), b.remove()]);
});

describe('the snapshot option', () => {
  it('builds the same site from a pulled copy as from the repository, without the CMS', async () => {
    const built = await runAstro(a.dir, ['build'], { CMFT_BASE_URL: original.url, CMFT_API_KEY: tinyKey });
    expect(built.code, built.output).toBe(0);

    const config = {
      baseUrl: original.url,
      repository: 'tiny',
      apiKey: tinyKey,
      collections: { news: {} },
      aliases: ['home'],
    };
    await import('node:fs/promises').then((fs) =>
      fs.writeFile(join(b.dir, 'comfortable.config.json'), JSON.stringify(config)),
    );
    const pulled = await runIn(b.dir, ['pull']);
    expect(pulled.code, pulled.stderr).toBe(0);

    // No key and no base URL: CMFT_SNAPSHOT alone switches the site to its copy.
    const copy = await runAstro(b.dir, ['build'], {
      CMFT_SNAPSHOT: 'content/tiny.json',
      CMFT_API_KEY: undefined,
      CMFT_BASE_URL: undefined,
    });
    expect(copy.code, copy.output).toBe(0);
    expect(copy.output).toContain('Serving the snapshot content/tiny.json in-process');
    const localKey = JSON.parse(readFileSync(join(b.dir, 'content/tiny.json'), 'utf8')).repository.apiKeys[0];
    expect(copy.output).toContain(`127.0.0.1:${snapshotPort(localKey)}`);

    const [fromA, fromB] = [files(join(a.dir, 'dist')), files(join(b.dir, 'dist'))];
    expect([...fromB.keys()].sort()).toEqual([...fromA.keys()].sort());
    const differ = [...fromA].filter(([path, bytes]) => !fromB.get(path)!.equals(bytes)).map(([path]) => path);
    expect(differ).toEqual([]);
    expect(fromA.size).toBeGreaterThan(1);
  }, 240_000);

  it('with the files pulled too, the site needs nothing of the original server', async () => {
    const pulled = await runIn(b.dir, ['pull', '--assets']);
    expect(pulled.code, pulled.stderr).toBe(0);
    await original.close();
    const copy = await runAstro(b.dir, ['build'], {
      CMFT_SNAPSHOT: 'content/tiny.json',
      CMFT_API_KEY: undefined,
      CMFT_BASE_URL: undefined,
    });
    expect(copy.code, copy.output).toBe(0);
    const html = [...files(join(b.dir, 'dist'))]
      .filter(([path]) => path.endsWith('.html'))
      .map(([, bytes]) => bytes.toString())
      .join('\n');
    expect(html).toContain('/_astro/'); // images optimised at build time
    expect(html).not.toContain(original.origin);
    original = await startServer({ paths: [tinyFile], watch: false });
  }, 240_000);

  it('names a missing snapshot and a snapshot of another repository', async () => {
    const missing = await runAstro(b.dir, ['build'], { CMFT_SNAPSHOT: 'content/nope.json', CMFT_API_KEY: undefined });
    expect(missing.code).not.toBe(0);
    expect(missing.output).toContain('no snapshot at');
    expect(missing.output).toContain('comfortable-loader pull (or unset CMFT_SNAPSHOT to use the CMS)');
    const missingOption = await runAstro(b.dir, ['build'], {
      FIXTURE_SNAPSHOT: 'content/nope.json',
      CMFT_API_KEY: undefined,
    });
    expect(missingOption.code).not.toBe(0);
    expect(missingOption.output).toContain('(or remove the snapshot option of comfortable() to use the CMS)');
    const other = await runAstro(b.dir, ['build'], {
      CMFT_SNAPSHOT: 'content/tiny.json',
      FIXTURE_REPOSITORY: 'acme',
      CMFT_API_KEY: undefined,
    });
    expect(other.code).not.toBe(0);
    expect(other.output).toContain('holds the repository "tiny", not "acme"');
  }, 120_000);

  it('a collection the copy was not pulled with is named with the config to pull it with', async () => {
    // The copy holds `news` and the alias `home` (the config of the first test); `goodNews` exists only in the repository.
    const run = await runAstro(b.dir, ['build'], {
      CMFT_SNAPSHOT: 'content/tiny.json',
      FIXTURE_COLLECTION: 'goodNews',
      CMFT_API_KEY: undefined,
    });
    expect(run.code).not.toBe(0);
    expect(run.output).toContain('The snapshot content/tiny.json has no collection "goodNews"');
    expect(run.output).toContain(
      'Add "goodNews" to the collections of that config (comfortable.config.mjs) and run npx comfortable-loader pull again',
    );
  }, 120_000);
});
