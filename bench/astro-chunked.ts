import { fork } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  astroBuild,
  buildDist,
  contentLines,
  loaderAstroConfig,
  loaderContentConfig,
  phasesOf,
  root,
  seconds,
} from './astro-site.ts';

/**
 * A large store: `astro build` of a generated site of 100,000 documents × 3 locales (300,000
 * entries; test/helpers/generate-snapshot.ts, seed 7, plus a collection `all` of every document) through
 * `comfortableLoader({ collection: 'all' })` against the local Read API server (bench/sync-server.ts,
 * in its own process), with `experimental: { collectionStorage: 'chunked' }`. One page prints the
 * count and a few entries. Checks that the build succeeds and the page shows 300,000 entries;
 * reports wall and CPU time, peak RSS (/usr/bin/time -v), Astro's time for the content sync
 * (loaders and store) and the size of the chunked store. There is no baseline to set a ratio
 * against: the single-file store, the alternative, cannot hold this much (one string of the
 * whole store, past what Node allows; see docs/astro.md, "Large stores").
 *
 * Why cold only by default: `npm run bench` includes this build at full size, because "a
 * 100,000-document store builds" is what docs/astro.md says. But on the 2-core machine it was
 * written on, that one build took about ten minutes, most of it Astro splitting the store into
 * parts (it measures the UTF-8 length of the store one character at a time), and a build with
 * no change spends the same again (Astro writes the whole store on every build). A second build
 * would double the time and check nothing new, so it runs only with `--warm`.
 *
 * Build logs are kept in bench/.out/astro-chunked/<cold|warm>.log.
 *
 * Usage: node bench/astro-chunked.ts [documents] [--warm]   (default 100000, cold only)
 */

const documents = Number(process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? 100_000);
const warm = process.argv.includes('--warm');
const seed = 7;
const out = join(root, 'bench/.out/astro-chunked');

const page = `---
import { getCollection } from 'astro:content';
const entries = await getCollection('all');
const sample = [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, 5);
---
<html><body><h1>{entries.length} entries</h1><ul>{sample.map((e) => <li id={e.id}>{e.data.fields.title ?? e.data.fields.name}</li>)}</ul></body></html>
`;

async function writeSite(dir: string, baseUrl: string): Promise<void> {
  await mkdir(join(dir, 'src/pages'), { recursive: true });
  await writeFile(
    join(dir, 'astro.config.mjs'),
    loaderAstroConfig(baseUrl, ["experimental: { collectionStorage: 'chunked' },"]),
  );
  await writeFile(join(dir, 'src/content.config.ts'), loaderContentConfig);
  await writeFile(join(dir, 'src/pages/index.astro'), page);
}

/** The files of the chunked store (`<cacheDir>/data-store/`) and their total size. */
async function storeSize(site: string): Promise<{ files: number; mb: number }> {
  const dir = join(site, '.cache/data-store');
  const names = await readdir(dir);
  let bytes = 0;
  for (const name of names) bytes += (await stat(join(dir, name))).size;
  return { files: names.length, mb: bytes / 2 ** 20 };
}

/** bench/sync-server.ts in its own process: the generated snapshot with the collection `all`, served. */
async function startServer(): Promise<{ url: string; stop: () => Promise<number> }> {
  const child = fork(join(root, 'bench/sync-server.ts'), [String(documents), String(seed)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = (type: string) =>
    new Promise<Record<string, number | string>>((resolve, reject) => {
      const onMessage = (message: { type: string }) => {
        if (message.type !== type) return;
        child.off('message', onMessage);
        resolve(message as never);
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`the server exited (${code}) before it sent ${type}`)));
    });
  const ready = await next('ready');
  console.log(
    `${documents.toLocaleString('en')} documents generated in ${seconds(Number(ready.generateMs))}, served in ${seconds(Number(ready.startMs))} (server RSS ${Number(ready.rssMb).toFixed(0)} MB)`,
  );
  return {
    url: String(ready.url),
    stop: async () => {
      const stopped = next('stopped');
      child.send({ type: 'stop' });
      return Number((await stopped).maxRssMb);
    },
  };
}

async function main(): Promise<void> {
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  console.log(`dist built in ${seconds(await buildDist())}`);
  const server = await startServer();
  let ok = true;
  try {
    const site = join(out, 'site');
    await writeSite(site, server.url);
    const expected = documents * 3;
    for (const [label, cold] of warm
      ? ([
          ['cold', true],
          ['warm', false],
        ] as const)
      : ([['cold', true]] as const)) {
      const build = await astroBuild(site, cold, out, label);
      const html = await readFile(join(site, 'dist/index.html'), 'utf8');
      const shown = Number(/<h1>(\d+) entries<\/h1>/.exec(html)?.[1]);
      const store = await storeSize(site);
      console.log(
        `  ${label}: ${seconds(build.ms)} wall (content sync ${seconds(phasesOf(build.log).contentMs)}), ${seconds(build.cpuMs)} CPU, ` +
          `peak RSS ${build.maxRssMb.toFixed(0)} MB; chunked store ${store.mb.toFixed(0)} MB in ${store.files} files; the page shows ${shown.toLocaleString('en')} entries`,
      );
      for (const line of contentLines(build.log)) console.log(`    ${line}`);
      console.log(
        `${label} build with collectionStorage 'chunked' succeeds with ${expected.toLocaleString('en')} entries: ${shown === expected ? 'yes' : 'NO'}`,
      );
      if (shown !== expected) ok = false;
    }
  } finally {
    console.log(`server peak RSS ${(await server.stop()).toFixed(0)} MB`);
  }
  if (!ok) process.exitCode = 1;
}

await main();
