import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import { copyFixture, runAstro } from './helpers/astro.ts';
import { tinyWithFileAssets } from './helpers/file-assets.ts';
import { runIn } from './helpers/pull.ts';
import { tinyKey } from './helpers/server.ts';

/**
 * A site that switches between its pulled copy (CMFT_SNAPSHOT) and the CMS (here a local Read
 * API, on one port throughout, as a CMS keeps its URL): each keeps its own last good content.
 * After a build from the copy, a build with the CMS down serves the CMS's last content; a switch
 * fetches again, from either server, no document or file that did not change, and writes no
 * record that did not change. Requests are counted from the servers' own request logs (the
 * in-process server's through `astro build --verbose`), records from the sync's changeset.
 */

let snapshot: string;
let cms: ReadApiServer | undefined;
let port: number;
const cmsLog: string[] = [];
let site: { dir: string; remove(): Promise<void> };
const fromCms = { CMFT_BASE_URL: () => `http://127.0.0.1:${port}/v1`, CMFT_API_KEY: tinyKey };
const fromCopy = { CMFT_SNAPSHOT: 'content/tiny.json', CMFT_API_KEY: undefined, CMFT_BASE_URL: undefined };

const startCms = async () => {
  cms = await startServer({ paths: [snapshot], watch: false, port, log: (line) => cmsLog.push(line) });
  port = cms.port;
};

/** Edits a document of the CMS as an editor would: a new title, a new revision. */
function editOnCms(id: string, title: string, updatedAt: string): void {
  const json = JSON.parse(readFileSync(snapshot, 'utf8'));
  const document = json.documents.find((d: { meta: { id: string } }) => d.meta.id === id);
  document.fields.title.en_US = title;
  document.meta = { ...document.meta, revision: document.meta.revision + 1, updatedAt };
  writeFileSync(snapshot, JSON.stringify(json, null, 2));
}

const buildFromCms = () => runAstro(site.dir, ['build'], { ...fromCms, CMFT_BASE_URL: fromCms.CMFT_BASE_URL() });
/** With --verbose, the in-process server's requests are in the output. */
const buildFromCopy = () => runAstro(site.dir, ['build', '--verbose'], fromCopy);
const page = () => readFileSync(join(site.dir, 'dist/index.html'), 'utf8');

/** A request as a server's log line tells it: `GET /v1/tiny/documents?… 200 1.2ms`. */
interface Request {
  method: string;
  url: string;
  status: number;
}
const requestsOf = (lines: string[]): Request[] =>
  lines.flatMap((line) => {
    const match = /(GET|HEAD|POST) (\/\S*) (\d{3}) /.exec(line);
    return match ? [{ method: match[1]!, url: decodeURIComponent(match[2]!), status: Number(match[3]) }] : [];
  });

/**
 * The answers that carried documents or files: reads of documents without a `fields` mask (a
 * masked read asks for stamps only) answered 200, and GETs of `/files` answered 200 (a 304 is a
 * file kept). Not counted: the check whether the dangling reference's target 999 exists by now
 * (it does not: the answer holds no document).
 */
function fetched(lines: string[]): { documents: string[]; files: string[] } {
  const requests = requestsOf(lines).filter((r) => r.status === 200);
  return {
    documents: requests
      .filter(
        (r) =>
          /^\/v1\/tiny\/(documents|collections|alias|assets)\b/.test(r.url) &&
          !/[?&]fields=/.test(r.url) &&
          !/\[\*\.meta\.id\]\[in\]=999&/.test(r.url),
      )
      .map((r) => r.url),
    files: requests.filter((r) => r.method === 'GET' && r.url.startsWith('/files/')).map((r) => r.url),
  };
}

/** The in-process server's request lines, as `astro build --verbose` prints them. */
const copyLog = (output: string) =>
  output.split('\n').filter((line) => /astro:comfortable-loader (GET|HEAD|POST) \//.test(line));

/** The records a sync added, updated and removed, from its log line. */
const synced = (output: string) =>
  /Synced tiny: \d+ records \((\d+) added, (\d+) updated, (\d+) removed\)/.exec(output)?.slice(1).map(Number);

beforeAll(async () => {
  snapshot = tinyWithFileAssets();
  port = 0;
  await startCms();
  site = await copyFixture('astro-copy', 'pull-switch');
  writeFileSync(
    join(site.dir, 'comfortable.config.json'),
    JSON.stringify({ baseUrl: cms!.url, repository: 'tiny', apiKey: tinyKey, collections: { news: {} } }),
  );
  const pulled = await runIn(site.dir, ['pull', '--assets']);
  expect(pulled.code, pulled.stderr).toBe(0);
  // Edited on the CMS after the pull: the copy and the CMS now differ.
  await cms!.close();
  editOnCms('100', 'Apple harvest, from the CMS', '2024-06-01T00:00:00.000Z');
  await startCms();
}, 120_000);

afterAll(async () => {
  await cms?.close();
  await site?.remove();
});

describe('switching between the copy and the CMS', () => {
  it('builds from the CMS, then from the copy without asking the CMS', async () => {
    cmsLog.length = 0;
    const first = await buildFromCms();
    expect(first.code, first.output).toBe(0);
    expect(page()).toContain('Apple harvest, from the CMS');
    // The first build of each fetches everything: the documents, and the two images Astro optimises.
    const counted = (lines: string[]) => Object.values(fetched(lines)).map((urls) => urls.length);
    expect(counted(cmsLog)).toEqual([expect.toSatisfy((n: number) => n > 0), 2]);
    cmsLog.length = 0;
    const copy = await buildFromCopy();
    expect(copy.code, copy.output).toBe(0);
    expect(page()).toContain('<h2>Apple harvest</h2>');
    expect(counted(copyLog(copy.output))).toEqual([expect.toSatisfy((n: number) => n > 0), 2]);
    expect(cmsLog).toEqual([]);
    expect(copy.output).not.toContain('rebuilding it');
  }, 120_000);

  it('with the CMS down, a build serves the last content of the CMS, with the stale warning', async () => {
    await cms!.close();
    cms = undefined;
    const down = await buildFromCms();
    expect(down.code, down.output).toBe(0);
    expect(down.output).toMatch(
      /The server failed \(.*\); using the cached content of \S+, stale: collection:news, query:type:author/,
    );
    expect(down.output).not.toContain('rebuilding it');
    expect(page()).toContain('Apple harvest, from the CMS');
  }, 120_000);

  it('back on the CMS, fetches no document or file that did not change, and writes no record', async () => {
    await startCms();
    cmsLog.length = 0;
    const back = await buildFromCms();
    expect(back.code, back.output).toBe(0);
    expect(page()).toContain('Apple harvest, from the CMS');
    expect(requestsOf(cmsLog).length).toBeGreaterThan(0); // it did ask the CMS: what changed
    expect(fetched(cmsLog)).toEqual({ documents: [], files: [] });
    expect(synced(back.output)).toEqual([0, 0, 0]);
    expect(back.output).not.toContain('(before:'); // no image transformed again: Astro's cache had them
  }, 120_000);

  it('back on the copy, fetches nothing from its server that did not change, and writes no record', async () => {
    cmsLog.length = 0;
    const back = await buildFromCopy();
    expect(back.code, back.output).toBe(0);
    expect(page()).toContain('<h2>Apple harvest</h2>');
    expect(requestsOf(copyLog(back.output)).length).toBeGreaterThan(0);
    expect(fetched(copyLog(back.output))).toEqual({ documents: [], files: [] });
    expect(synced(back.output)).toEqual([0, 0, 0]);
    expect(back.output).not.toContain('(before:');
    expect(back.output).toContain('Copied 3 files of the snapshot'); // from the copy's folder, not its server
    expect(cmsLog).toEqual([]);
  }, 120_000);

  it('after an edit on the CMS, the switch back fetches that document only', async () => {
    await cms!.close();
    editOnCms('101', 'Banana boats, edited', '2030-01-01T00:00:00.000Z');
    await startCms();
    cmsLog.length = 0;
    const edited = await buildFromCms();
    expect(edited.code, edited.output).toBe(0);
    expect(page()).toContain('Banana boats, edited');
    expect(synced(edited.output)).toEqual([0, 1, 0]);
    const { documents, files } = fetched(cmsLog);
    expect(files).toEqual([]);
    // One read of the documents changed since the last sync of the CMS: the edited one alone.
    expect(documents).toEqual([
      expect.stringMatching(/^\/v1\/tiny\/collections\/news\?.*\[\*\.meta\.updatedAt\]\[greaterThanEqual\]=/),
    ]);
  }, 120_000);
});
