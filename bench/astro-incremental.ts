import { readdirSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openCache } from '../src/cache/index.ts';
import { cacheKeys } from '../src/entries/page-keys.ts';
import { startServer } from '../src/server/index.ts';
import type { Snapshot } from '../src/wire/snapshot-format.ts';
import {
  astroBuild,
  type Build,
  buildDist,
  contentLines,
  loaderAstroConfig,
  loaderContentConfig,
  median,
  pagesOf,
  phasesOf,
  root,
  seconds,
} from './astro-site.ts';
import { generateSnapshot } from '../test/helpers/generate-snapshot.ts';

/**
 * Astro's incremental build (`experimental.incrementalBuild`) on a generated site of 10,000
 * documents × 3 locales (test/helpers/generate-snapshot.ts, seed 7: articles, authors, categories; the
 * collection `all` of every document), through `comfortableLoader({ collection: 'all' })`
 * against the local Read API server (in this process), with one page per entry
 * (`src/pages/[locale]/[id].astro`, 30,000 pages). Each page shows its entry's title and the
 * titles of what its relations reference, read with getEntry, and returns
 * `cacheKey: entry.data.cacheKey`.
 *
 * The site is built cold (dist, .astro and the cache folder removed), once more with no change
 * (the integration keeps dist/), three times with no change as Astro alone builds with dist/
 * kept (`vite.build.emptyOutDir: false`, which the integration leaves to Astro: the floor), and
 * again after ONE article was edited on the server (its English title, `updatedAt` and
 * `revision`, as the CMS would), three times: with dist/ kept by the integration; with dist/
 * removed first, as in CI where only the cache folder is kept; and, for information, as Astro
 * builds by default (`incrementalOutput: false`: it empties dist/ and copies every reused page
 * back). Each build's log says which pages were rendered and which were reused. Checks:
 * - the no-change rebuild renders no page;
 * - each one-edit rebuild renders exactly the pages of the documents whose cacheKey changed,
 *   worked out apart from Astro with the package's `cacheKeys` on the loader's cache before
 *   and after the edit, and no page changed that was not rendered; the pages whose bytes
 *   changed are printed beside those rendered;
 * - the rebuilt site equals, file for file and byte for byte, a clean build of the edited
 *   content in a second folder (so no page was left stale, and none too many).
 * Targets: the one-edit rebuild with dist/ kept within 1.2× the floor and under 25% of a cold
 * build; with only the cache folder (CI), within 1.5× the floor and under 30% of a cold build.
 * Builds run one after the other, each under /usr/bin/time -v. Both cold builds (the first, and
 * the clean one) build the same amount of content; the faster is the baseline of the ratios.
 *
 * Build logs are kept in bench/.out/astro-incremental/<build>.log.
 *
 * Usage: node bench/astro-incremental.ts [documents]   (default 10000)
 */

const documents = Number(process.argv[2] ?? 10_000);
const seed = 7;
const out = join(root, 'bench/.out/astro-incremental');

const page = `---
import { getCollection, getEntry } from 'astro:content';

export async function getStaticPaths() {
  const entries = await getCollection('all');
  return entries.map((entry) => ({ params: { locale: entry.data.locale, id: entry.data.id }, props: { entry }, cacheKey: entry.data.cacheKey }));
}
const { entry } = Astro.props;
const title = (e) => e.data.fields.title ?? e.data.fields.name ?? e.data.id;
// Every relation of the entry (author, category, related articles, parent, featured article).
const references = Object.entries(entry.data.fields).flatMap(([field, value]) =>
  (Array.isArray(value) ? value : [value]).filter((v) => v && typeof v === 'object' && v.collection && 'id' in v).map((ref) => ({ field, ref })),
);
const linked = await Promise.all(references.map(async ({ field, ref }) => ({ field, ref, other: await getEntry(ref) })));
---
<html lang={entry.data.locale}><body>
<h1>{title(entry)}</h1>
<p>{entry.data.contentType}, revision {entry.data.meta.revision}, updated {entry.data.meta.updatedAt}</p>
<ul>{linked.map(({ field, ref, other }) => <li>{field}: {other ? <a href={\`/\${other.data.locale}/\${other.data.id}/\`}>{title(other)}</a> : \`missing \${ref.id}\`}</li>)}</ul>
</body></html>
`;

async function writeSite(dir: string, baseUrl: string): Promise<void> {
  await mkdir(join(dir, 'src/pages/[locale]'), { recursive: true });
  // BENCH_FLOOR: Astro keeps dist/ itself; BENCH_ASTRO_DEFAULT: Astro empties it and copies reused pages back.
  const extra = [
    'experimental: { incrementalBuild: true },',
    "vite: { build: process.env.BENCH_FLOOR === '1' ? { emptyOutDir: false } : {} },",
  ];
  await writeFile(
    join(dir, 'astro.config.mjs'),
    loaderAstroConfig(baseUrl, extra, "incrementalOutput: process.env.BENCH_ASTRO_DEFAULT !== '1'"),
  );
  await writeFile(join(dir, 'src/content.config.ts'), loaderContentConfig);
  await writeFile(join(dir, 'src/pages/[locale]/[id].astro'), page);
}

/** Every HTML file of the site's dist, by its path as the build log names it (`/en_US/…/index.html`). */
async function readPages(site: string): Promise<Map<string, string>> {
  const dist = join(site, 'dist');
  const pages = new Map<string, string>();
  for (const entry of await readdir(dist, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.html')) continue;
    const path = join(entry.parentPath, entry.name);
    pages.set(path.slice(dist.length), await readFile(path, 'utf8'));
  }
  return pages;
}

/** Every file of the site's dist, with its bytes. */
async function readFiles(site: string): Promise<Map<string, Buffer>> {
  const dist = join(site, 'dist');
  const files = new Map<string, Buffer>();
  for (const entry of await readdir(dist, { recursive: true, withFileTypes: true })) {
    if (entry.isFile())
      files.set(
        join(entry.parentPath, entry.name).slice(dist.length),
        await readFile(join(entry.parentPath, entry.name)),
      );
  }
  return files;
}

/** The cacheKey of each document of the collection `all`, worked out from the site's loader cache. */
function documentKeys(site: string): Map<string, string> {
  // The cache folder holds one cache per origin of the content: the site syncs from one server.
  const root = join(site, '.cache/comfortable');
  const origin = readdirSync(root).find((name) => name.startsWith('cms-'));
  const cache = origin ? openCache(join(root, origin)) : undefined;
  const source = cache?.sources().find((s) => s.kind === 'collection' && s.name === 'all');
  if (!cache || !source) throw new Error(`no synced collection "all" in ${site}/.cache/comfortable`);
  return cacheKeys(
    cache,
    cache.members(source.key).map((member) => member.id),
  );
}

/** Articles in the middle of the repository that relate to others and that others relate to: ordinary ones. */
function pickArticles(snapshot: Snapshot, count: number): number[] {
  const related = (i: number) =>
    ((snapshot.documents[i]!.fields.related ?? []) as { meta: { id: string } }[]).map((r) => r.meta.id);
  const referenced = new Set(snapshot.documents.flatMap((_, i) => related(i)));
  const articles = snapshot.documents.filter((d) => d.meta.contentType === 'article').length;
  const picked: number[] = [];
  for (let i = Math.floor(articles / 3); i < articles && picked.length < count; i += 101) {
    if (related(i).length > 0 && referenced.has(snapshot.documents[i]!.meta.id)) picked.push(i);
  }
  if (picked.length < count) throw new Error(`only ${picked.length} articles both relate to others and are related to`);
  return picked;
}

/** The snapshot with one document edited as the CMS would: English title, revision + 1, updatedAt now. */
function edit(snapshot: Snapshot, index: number): Snapshot {
  const documents = [...snapshot.documents];
  const document = documents[index]!;
  const title = document.fields.title as Record<string, string>;
  documents[index] = {
    fields: { ...document.fields, title: { ...title, en_US: `${title.en_US ?? ''} (edited)` } },
    meta: { ...document.meta, revision: document.meta.revision + 1, updatedAt: new Date().toISOString() },
  };
  return { ...snapshot, documents };
}

const difference = (a: Iterable<string>, b: Set<string>) => [...a].filter((x) => !b.has(x));
const sample = (list: string[]) =>
  list.length === 0 ? '' : ` (${list.slice(0, 5).join(', ')}${list.length > 5 ? ', …' : ''})`;
const percent = (part: number, whole: number) => `${((part / whole) * 100).toFixed(1)}%`;

interface Measured {
  name: string;
  build: Build;
  rendered: string[];
  reused: string[];
}

/**
 * The edit rounds, each of another article: three with dist/ kept by the integration, three with
 * dist/ removed first (CI), and one as Astro builds by default. The targets take the median of
 * three, as the floor does: on a shared machine one build's wall time moves by a quarter.
 */
const kinds = {
  kept: { name: 'one edit, dist kept', label: 'one-edit-dist-kept', env: {}, removeDist: false },
  ci: { name: 'one edit, cache folder only (CI)', label: 'one-edit-ci', env: {}, removeDist: true },
  astro: {
    name: "one edit, Astro's default (for information)",
    label: 'one-edit-astro-default',
    env: { BENCH_ASTRO_DEFAULT: '1' },
    removeDist: false,
  },
} as const;
const rounds = [
  ...[1, 2, 3].map((n) => ({
    ...kinds.kept,
    kind: 'kept' as const,
    name: `${kinds.kept.name} ${n}`,
    label: `${kinds.kept.label}-${n}`,
  })),
  ...[1, 2, 3].map((n) => ({
    ...kinds.ci,
    kind: 'ci' as const,
    name: `${kinds.ci.name} ${n}`,
    label: `${kinds.ci.label}-${n}`,
  })),
  { ...kinds.astro, kind: 'astro' as const },
];

async function main(): Promise<void> {
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  console.log(`dist built in ${seconds(await buildDist())}`);

  let started = performance.now();
  // Through JSON, as a snapshot file would be read (see bench/sync-server.ts).
  let snapshot: Snapshot = JSON.parse(JSON.stringify(generateSnapshot({ documents, seed })));
  snapshot.collections.push({ apiId: 'all' }); // every document, in the default order
  const locales = snapshot.repository.locales.map((locale) => locale.key);
  const server = await startServer({ snapshots: [snapshot], watch: false });
  console.log(
    `${documents.toLocaleString('en')} documents generated and served in ${seconds(performance.now() - started)}`,
  );

  try {
    const site = join(out, 'site');
    const clean = join(out, 'clean-site');
    await writeSite(site, server.url);
    await writeSite(clean, server.url);
    const all = documents * locales.length;
    const builds: Measured[] = [];
    const measure = async (
      name: string,
      dir: string,
      cold: boolean,
      label: string,
      env: Record<string, string> = {},
    ) => {
      const build = await astroBuild(dir, cold, out, label, env);
      const measured = { name, build, ...pagesOf(build.log) };
      builds.push(measured);
      console.log(
        `  ${name}: ${seconds(build.ms)} wall, ${seconds(build.cpuMs)} CPU, peak RSS ${build.maxRssMb.toFixed(0)} MB; ` +
          `${measured.rendered.length.toLocaleString('en')} pages rendered, ${measured.reused.length.toLocaleString('en')} reused`,
      );
      for (const line of contentLines(build.log)) console.log(`    ${line}`);
      return measured;
    };
    const verdicts: { line: string; ok: boolean }[] = [];

    const cold = await measure('cold', site, true, 'cold');
    let pagesBefore = await readPages(site);
    verdicts.push({
      line: `cold build renders all ${all.toLocaleString('en')} pages`,
      ok: cold.rendered.length === all && pagesBefore.size === all,
    });
    const unchanged = await measure('no change, dist kept', site, false, 'no-change');
    verdicts.push({
      line: `no-change rebuild renders no page${unchanged.rendered.length === 0 ? '' : ` (${unchanged.rendered.length} rendered${sample(unchanged.rendered)})`}`,
      ok: unchanged.rendered.length === 0 && unchanged.reused.length === all,
    });
    const floors: Measured[] = [];
    for (const n of [1, 2, 3])
      floors.push(
        await measure(`floor ${n}: no change, Astro keeping dist`, site, false, `floor-${n}`, { BENCH_FLOOR: '1' }),
      );
    const floor = median(floors.map((f) => f.build.ms));

    const edited = pickArticles(snapshot, rounds.length);
    const editRounds: (Measured & { kind: string })[] = [];
    for (const [i, round] of rounds.entries()) {
      const keysBefore = documentKeys(site);
      snapshot = edit(snapshot, edited[i]!);
      const id = snapshot.documents[edited[i]!]!.meta.id;
      started = performance.now();
      await server.replaceSnapshot(snapshot);
      console.log(
        `  article ${id} edited (English title, revision, updatedAt), snapshot swapped in ${seconds(performance.now() - started)}`,
      );
      if (round.removeDist) await rm(join(site, 'dist'), { recursive: true, force: true });
      const measured = await measure(round.name, site, false, round.label, round.env);
      editRounds.push({ ...measured, kind: round.kind });

      // What should have been rendered: the pages of the documents whose key changed.
      const keysAfter = documentKeys(site);
      const changedDocuments = [...keysAfter.keys()].filter((doc) => keysAfter.get(doc) !== keysBefore.get(doc));
      const expected = new Set(
        changedDocuments.flatMap((doc) => locales.map((locale) => `/${locale}/${doc}/index.html`)),
      );
      const rendered = new Set(measured.rendered);
      const extra = difference(rendered, expected);
      const missing = difference(expected, rendered);
      const pagesAfter = await readPages(site);
      const changedBytes = [...pagesAfter]
        .filter(([path, html]) => pagesBefore.get(path) !== html)
        .map(([path]) => path);
      const changedUnrendered = difference(changedBytes, rendered);
      pagesBefore = pagesAfter;
      verdicts.push({
        line:
          `${round.name}: renders exactly the pages whose cacheKey changed (${changedDocuments.length} documents × ${locales.length} locales = ${expected.size} pages)` +
          (extra.length + missing.length + changedUnrendered.length === 0
            ? ''
            : ` (${extra.length} more${sample(extra)}, ${missing.length} fewer${sample(missing)}, ${changedUnrendered.length} changed without being rendered${sample(changedUnrendered)})`),
        ok: extra.length + missing.length + changedUnrendered.length === 0,
      });
      console.log(`    pages rendered: ${rendered.size}; pages whose bytes changed: ${changedBytes.length}`);
    }

    // The same content built from nothing, in another folder; the rebuilt site once more as the integration leaves it.
    await measure('clean build of the edited content', clean, true, 'clean');
    await measure('no change, dist kept, after the edits', site, false, 'last');
    const [filesClean, filesRebuilt] = await Promise.all([readFiles(clean), readFiles(site)]);
    const stale = [...filesClean]
      .filter(([path, bytes]) => !filesRebuilt.get(path)?.equals(bytes))
      .map(([path]) => path);
    const surplus = difference(filesRebuilt.keys(), new Set(filesClean.keys()));
    verdicts.push({
      line:
        `rebuilt site equals a clean build of the edited content, ${filesClean.size.toLocaleString('en')} files of dist/ byte for byte` +
        (stale.length + surplus.length === 0
          ? ''
          : ` (${stale.length} differ${sample(stale)}, ${surplus.length} surplus${sample(surplus)})`),
      ok: stale.length === 0 && surplus.length === 0 && (await readPages(clean)).size === all,
    });

    // Both cold builds build the same amount of content: the faster is the baseline (the harder one to be within 10% of).
    const colds = [cold, builds.find((b) => b.name === 'clean build of the edited content')!];
    const baseline = colds[0]!.build.ms <= colds[1]!.build.ms ? colds[0]!.build : colds[1]!.build;
    const header = [
      'build',
      'wall',
      '× cold',
      'CPU',
      '× cold',
      'content sync',
      'pages',
      'peak RSS',
      'rendered',
      'reused',
    ];
    const rows = builds.map(({ name, build, rendered, reused }) => {
      const phases = phasesOf(build.log);
      return [
        name,
        seconds(build.ms),
        (build.ms / baseline.ms).toFixed(3),
        seconds(build.cpuMs),
        (build.cpuMs / baseline.cpuMs).toFixed(3),
        seconds(phases.contentMs),
        seconds(phases.pagesMs),
        `${build.maxRssMb.toFixed(0)} MB`,
        rendered.length.toLocaleString('en'),
        reused.length.toLocaleString('en'),
      ];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
    const line = (cells: string[]) =>
      cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
    console.log(`\n${line(header)}`);
    for (const row of rows) console.log(line(row));
    console.log(
      `(${all.toLocaleString('en')} entries, one page each; × = against the faster cold build (the first, or the clean one); content sync and pages = Astro's ` +
        'times of its phases, from its log; rendered / reused = pages the log shows rendered / marked (cached) or (restored); CPU = user + system of the build, ' +
        "the Read API server not included; floor = Astro's own no-change rebuild with dist/ kept, vite.build.emptyOutDir: false)",
    );

    console.log('');
    for (const { line: text, ok } of verdicts) console.log(`${text}: ${ok ? 'yes' : 'NO'}`);
    const ofKind = (kind: string) => editRounds.filter((round) => round.kind === kind);
    const targets = [
      { kind: 'kept', floorTimes: 1.2, coldShare: 0.25 },
      { kind: 'ci', floorTimes: 1.5, coldShare: 0.3 },
    ];
    let missed = false;
    for (const { kind, floorTimes, coldShare } of targets) {
      const wall = median(ofKind(kind).map((round) => round.build.ms));
      const cpu = median(ofKind(kind).map((round) => round.build.cpuMs));
      const met = wall <= floorTimes * floor && wall < coldShare * baseline.ms;
      missed ||= !met;
      console.log(
        `${kinds[kind as 'kept' | 'ci'].name}, median of ${ofKind(kind).length}: ${seconds(wall)}, within ${floorTimes}× the floor (${(wall / floor).toFixed(2)}×, floor ${seconds(floor)} median) ` +
          `and under ${coldShare * 100}% of a cold build (${percent(wall, baseline.ms)} wall, ${percent(cpu, baseline.cpuMs)} CPU): ${met ? 'met' : 'MISSED'}`,
      );
    }
    const byDefault = ofKind('astro')[0]!;
    console.log(
      `  for information, Astro's default (dist/ emptied, reused pages copied back): ${percent(byDefault.build.ms, baseline.ms)} wall of a cold build`,
    );
    if (verdicts.some((v) => !v.ok) || missed) process.exitCode = 1;
  } finally {
    await server.close();
  }
}

await main();
