import { type ChildProcess, spawn } from 'node:child_process';
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { closeAllPools } from '../src/api/transport.ts';
import { comfortableLoader } from '../src/astro/loader.ts';
import { loaderRegistry } from '../src/astro/registry.ts';
import { sharedSync } from '../src/sync/shared.ts';
import {
  astroBuild,
  type Build,
  buildDist,
  contentLines,
  contentTypes,
  env,
  loaderAstroConfig,
  loaderContentConfig,
  median,
  root,
  seconds,
} from './astro-site.ts';
import { generateSnapshot, writeSnapshot } from '../test/helpers/generate-snapshot.ts';
import { loadedConfig } from '../test/helpers/content-config.ts';

/**
 * `astro build` of a generated site whose one collection holds 10,000 documents × 3 locales
 * (30,000 entries; test/helpers/generate-snapshot.ts, seed 7, plus a collection `all` of every document),
 * through `comfortableLoader({ collection: 'all' })` against the local Read API server, and the
 * floor: the same entries (same ids, same data, same count, written by running the loader once
 * in this process) read from a local JSON file by Astro's `file()` loader, without a schema.
 * One page prints the count and a few entries, so the builds measure the content layer; both
 * sites must produce the same page.
 *
 * Each site is built cold (its dist, .astro, Astro cache folder with the data store and the
 * loader's cache removed) and then warm (same content again) several times, loader and floor
 * in turn. Each build runs under /usr/bin/time -v for its peak RSS and CPU time. The floor's
 * warm build is the baseline of the ratios. Target: the best warm loader build within 1.2× of
 * the best warm floor build (wall; the median and CPU time are printed too, since other work on
 * a 2-core machine stretches single wall times).
 *
 * Build logs are kept in bench/.out/astro/<site>-<cold|warm-N>.log.
 *
 * Usage: node bench/astro.ts [documents] [warm runs]   (default 10000 3)
 */

const documents = Number(process.argv[2] ?? 10_000);
const warmRuns = Number(process.argv[3] ?? 3);
const seed = 7;
const target = 1.2;
const out = join(root, 'bench/.out/astro');

/** Starts `node src/cli.ts serve` and waits for the line with its base URL. */
function startServer(snapshot: string): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, 'src/cli.ts'), 'serve', snapshot, '--port', '0', '--quiet'], {
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let text = '';
    child.stdout!.on('data', (chunk) => {
      text += chunk;
      const match = /(http:\/\/\S+\/v1)\b/.exec(text);
      if (match) resolve({ child, url: match[1]! });
    });
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before it listened`)));
  });
}

const page = `---
import { getCollection } from 'astro:content';
const entries = await getCollection('all');
const sample = [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, 5);
---
<html><body><h1>{entries.length} entries</h1><ul>{sample.map((e) => <li id={e.id}>{JSON.stringify(e.data)}</li>)}</ul></body></html>
`;

async function writeSite(dir: string, config: string, content: string): Promise<void> {
  await mkdir(join(dir, 'src/pages'), { recursive: true });
  await writeFile(join(dir, 'astro.config.mjs'), config);
  await writeFile(join(dir, 'src/content.config.ts'), content);
  await writeFile(join(dir, 'src/pages/index.astro'), page);
}

/** The entries the loader produces, in its order, as `file()` wants them: store id → data. */
async function loaderEntries(baseUrl: string, cacheDir: string, site: string): Promise<Record<string, unknown>> {
  const loader = comfortableLoader({ collection: 'all' });
  const registry = loaderRegistry();
  registry.configure({ contentTypes, locales: undefined }, loadedConfig({ all: loader }));
  sharedSync().configure(
    { baseUrl, repository: 'bench', apiKey: 'bench-key', cacheDir },
    { info: () => {}, warn: () => {} },
    undefined,
    () => registry.sources(),
  );
  const entries = new Map<string, { id: string; data: unknown; digest?: string }>();
  const meta = new Map<string, string>();
  const quiet = () => {};
  await loader.load({
    collection: 'all',
    store: {
      get: (id: string) => entries.get(id),
      set: (entry: { id: string; data: unknown; digest?: string }) => {
        entries.set(entry.id, entry);
        return true;
      },
      delete: (id: string) => void entries.delete(id),
      clear: () => entries.clear(),
      keys: () => entries.keys(),
      has: (id: string) => entries.has(id),
    },
    meta: {
      get: (k: string) => meta.get(k),
      set: (k: string, v: string) => void meta.set(k, v),
      has: (k: string) => meta.has(k),
      delete: (k: string) => void meta.delete(k),
    },
    logger: { info: quiet, warn: quiet, error: quiet, debug: quiet },
    parseData: async ({ data }: { data: unknown }) => data,
    generateDigest: (value: unknown) => String(value),
    // The loader site's: entries carry a page key made with the digest of its content config.
    config: { root: pathToFileURL(`${site}/`), srcDir: pathToFileURL(`${site}/src/`) },
  } as never);
  await closeAllPools();
  return Object.fromEntries([...entries].map(([id, entry]) => [id, entry.data]));
}

const build = (site: string, cold: boolean, label: string): Promise<Build> => astroBuild(site, cold, out, label);

async function main(): Promise<void> {
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });

  console.log(`dist built in ${seconds(await buildDist())}`);

  let started = performance.now();
  const snapshot = generateSnapshot({ documents, seed });
  snapshot.collections.push({ apiId: 'all' }); // every document, in the default order
  const snapshotPath = join(out, 'snapshot.json');
  await writeSnapshot(snapshotPath, snapshot);
  console.log(`${documents.toLocaleString('en')} documents generated in ${seconds(performance.now() - started)}`);

  const server = await startServer(snapshotPath);
  try {
    const loaderSite = join(out, 'loader-site');
    const floorSite = join(out, 'floor-site');
    await writeSite(loaderSite, loaderAstroConfig(server.url), loaderContentConfig);
    await writeSite(
      floorSite,
      `import { defineConfig } from 'astro/config';
export default defineConfig({ cacheDir: './.cache' });
`,
      `import { defineCollection } from 'astro:content';
import { file } from 'astro/loaders';
export const collections = { all: defineCollection({ loader: file('data/entries.json') }) };
`,
    );

    const results = {
      loader: { cold: undefined as Build | undefined, warm: [] as Build[] },
      floor: { cold: undefined as Build | undefined, warm: [] as Build[] },
    };
    const sites = { loader: loaderSite, floor: floorSite };
    const report = (name: string, b: Build) =>
      console.log(`  ${name}: ${seconds(b.ms)} wall, ${seconds(b.cpuMs)} CPU, peak RSS ${b.maxRssMb.toFixed(0)} MB`);

    results.loader.cold = await build(loaderSite, true, 'loader-cold');
    report('loader cold', results.loader.cold);
    for (const line of contentLines(results.loader.cold.log)) console.log(`    ${line}`);

    // The floor's entries: the loader run once in this process, on a copy of the loader site's cache.
    started = performance.now();
    await cp(join(loaderSite, '.cache/comfortable'), join(out, 'floor-cache'), { recursive: true });
    const entries = await loaderEntries(server.url, join(out, 'floor-cache'), loaderSite);
    await mkdir(join(floorSite, 'data'), { recursive: true });
    const json = JSON.stringify(entries);
    await writeFile(join(floorSite, 'data/entries.json'), json);
    const count = Object.keys(entries).length;
    console.log(
      `  floor: ${count.toLocaleString('en')} entries (${(json.length / 2 ** 20).toFixed(1)} MB of JSON) written in ${seconds(performance.now() - started)}`,
    );

    results.floor.cold = await build(floorSite, true, 'floor-cold');
    report('floor cold', results.floor.cold);
    for (let i = 0; i < warmRuns; i++) {
      for (const name of ['loader', 'floor'] as const) {
        const b = await build(sites[name], false, `${name}-warm-${i + 1}`);
        results[name].warm.push(b);
        report(`${name} warm ${i + 1}`, b);
        if (name === 'loader' && i === 0) for (const line of contentLines(b.log)) console.log(`    ${line}`);
      }
    }

    // Both sites must show the same page: same count, same sample entries with the same data.
    const html = async (site: string) => readFile(join(site, 'dist/index.html'), 'utf8');
    const [loaderHtml, floorHtml] = await Promise.all([html(loaderSite), html(floorSite)]);
    const shown = /<h1>(\d+) entries<\/h1>/.exec(loaderHtml)?.[1];
    const same = loaderHtml === floorHtml && Number(shown) === count && count === documents * 3;

    // Other work on the machine stretches wall times (never shortens them): the best warm run is
    // the figure judged; the median and the CPU time (user + system) are printed beside it.
    const best = (name: 'loader' | 'floor') => Math.min(...results[name].warm.map((b) => b.ms));
    const middle = (name: 'loader' | 'floor', key: 'ms' | 'cpuMs') => median(results[name].warm.map((b) => b[key]));
    const [floorBest, floorMedian, floorCpu] = [best('floor'), middle('floor', 'ms'), middle('floor', 'cpuMs')];
    const rows = (['loader', 'floor'] as const).flatMap((name) => {
      const { cold, warm } = results[name];
      return [
        [
          name,
          'cold',
          seconds(cold!.ms),
          (cold!.ms / floorBest).toFixed(2),
          '',
          '',
          seconds(cold!.cpuMs),
          (cold!.cpuMs / floorCpu).toFixed(2),
          `${cold!.maxRssMb.toFixed(0)} MB`,
        ],
        [
          name,
          `warm ×${warm.length}`,
          seconds(best(name)),
          (best(name) / floorBest).toFixed(2),
          seconds(middle(name, 'ms')),
          (middle(name, 'ms') / floorMedian).toFixed(2),
          seconds(middle(name, 'cpuMs')),
          (middle(name, 'cpuMs') / floorCpu).toFixed(2),
          `${Math.max(...warm.map((b) => b.maxRssMb)).toFixed(0)} MB`,
        ],
      ];
    });
    const header = ['site', 'build', 'wall best', '×', 'wall median', '×', 'CPU median', '×', 'peak RSS'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
    const line = (cells: string[]) =>
      cells.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
    console.log(`\n${line(header)}`);
    for (const row of rows) console.log(line(row));
    console.log(
      `(${count.toLocaleString('en')} entries in one collection, one page; floor = file() of the same entries, no schema; × = against the same figure of the warm floor; ` +
        'cold builds run once; CPU = user + system of the build, the Read API server not included)',
    );

    const ratio = best('loader') / floorBest;
    console.log('');
    console.log(`both sites render the same page with ${shown} entries: ${same ? 'yes' : 'NO'}`);
    console.log(
      `warm loader within ${target}× of the warm floor (${ratio.toFixed(2)}× best wall; ${(middle('loader', 'ms') / floorMedian).toFixed(2)}× median wall, ` +
        `${(middle('loader', 'cpuMs') / floorCpu).toFixed(2)}× CPU): ${ratio <= target ? 'met' : 'MISSED'}`,
    );
    if (!same || ratio > target) process.exitCode = 1;
  } finally {
    server.child.kill('SIGTERM');
  }
}

await main();
