import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import {
  type Answer,
  battery,
  type BatteryRequest,
  batteryInfo,
  compareServers,
  type CoverSnapshot,
  describeDifferences,
  type Target,
  writeCoverSnapshot,
  writeSnapshot,
} from './helpers/round-trip.ts';

/**
 * The round-trip helper checks itself: two servers on the same cover snapshot answer the whole
 * battery alike (and the battery asks things that have answers), while a copy with one German
 * title changed, or one asset file's bytes changed, is told apart, by the requests that show it.
 */

let scratch: string;
let cover: CoverSnapshot & { file: string };
const servers: ReadApiServer[] = [];
let original: Target;
let twin: Target;
let retitled: Target;
let repainted: Target;
let requests: BatteryRequest[];

/** The document whose German title the retitled copy changes: the `home` alias's, which has a title in every locale. */
let changedId: string;
const changedFile = 'images/harbor.png';

const serve = async (file: string): Promise<Target> => {
  const server = await startServer({ paths: [file], watch: false, port: 0 });
  servers.push(server);
  return { origin: server.origin, key: cover.key };
};

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'round-trip-'));
  cover = await writeCoverSnapshot(join(scratch, 'original'));
  requests = battery(batteryInfo(cover.snapshot));
  original = await serve(cover.file);
  twin = await serve(cover.file);

  const copy = structuredClone(cover.snapshot);
  changedId = copy.aliases.find((a) => a.apiId === 'home')!.document;
  const title = copy.documents.find((d) => d.meta.id === changedId)!.fields.title as Record<string, string>;
  expect(title.de_DE).toBeTruthy();
  title.de_DE = 'Geänderter Titel';
  retitled = await serve(await writeSnapshot(join(scratch, 'retitled'), copy, cover.files));

  const bytes = Buffer.from(cover.files[changedFile]!);
  bytes[bytes.length - 5] = bytes[bytes.length - 5]! ^ 0xff; // same size, so the snapshot's fields.file.size still holds
  repainted = await serve(
    await writeSnapshot(join(scratch, 'repainted'), cover.snapshot, { ...cover.files, [changedFile]: bytes }),
  );
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const parse = (answer: Answer): any => {
  try {
    return JSON.parse(answer.body.toString('utf8'));
  } catch {
    return undefined;
  }
};

describe('two servers on the same snapshot', () => {
  it('answer every request of the battery alike, each its own origin aside', async () => {
    const answers = new Map<string, Answer>();
    const differences = await compareServers(original, twin, requests, {
      onAnswer: (request, a) => answers.set(request.name, a),
    });
    expect(differences, describeDifferences(differences)).toEqual([]);
    expect(answers.size).toBe(requests.length);
    // The origins differ, so equal bodies show the replacement worked.
    expect(original.origin).not.toBe(twin.origin);
    expect([...answers.values()].filter((a) => a.body.includes('<origin>/files/cover/images/')).length).toBeGreaterThan(
      50,
    );
  });

  it('is a battery of a few hundred requests that ask what the snapshot answers', async () => {
    expect(requests.length).toBeGreaterThanOrEqual(150);
    expect(new Set(requests.map((r) => r.name)).size).toBe(requests.length);
    const answers = new Map<string, Answer>();
    await compareServers(original, original, requests, { onAnswer: (request, a) => answers.set(request.name, a) });

    // Every request gets the status the spec gives it (200 unless the battery says otherwise).
    const statuses = requests.map((r) => `${r.name}: ${answers.get(r.name)!.status}`);
    expect(statuses).toEqual(requests.map((r) => `${r.name}: ${r.status ?? 200}`));
    expect(requests.filter((r) => (r.status ?? 200) !== 200).length).toBeGreaterThanOrEqual(20);

    // Lists answer data: most filters match something, and the includes are there.
    const listed = (name: string) => parse(answers.get(name)!)?.data?.length ?? 0;
    const filters = requests.filter((r) => /^filters?[ :]/.test(r.name) && (r.status ?? 200) === 200);
    expect(filters.length).toBeGreaterThanOrEqual(150);
    const matching = filters.filter((r) => listed(r.name) > 0);
    expect(
      matching.length,
      filters
        .filter((r) => listed(r.name) === 0)
        .map((r) => r.name)
        .join('\n'),
    ).toBeGreaterThanOrEqual(filters.length - 12);
    const lists = requests.filter((r) => Array.isArray(parse(answers.get(r.name)!)?.data));
    expect(lists.filter((r) => listed(r.name) > 0).length).toBeGreaterThanOrEqual(240);
    const included = requests.filter((r) => Object.keys(parse(answers.get(r.name)!)?.includes ?? {}).length > 0);
    expect(included.length).toBeGreaterThanOrEqual(20);

    // Every route answers.
    for (const pattern of [
      /^repository$/,
      /^documents$/,
      /^document \d+ locale=all/,
      /^alias home$/,
      /^collection top-rated$/,
      /^asset \d+$/,
    ]) {
      expect(
        requests.some((r) => pattern.test(r.name) && answers.get(r.name)!.status === 200),
        String(pattern),
      ).toBe(true);
    }
    // The files come as written.
    for (const [path, bytes] of Object.entries(cover.files)) {
      const answer = answers.get(`file ${path}`)!;
      expect(answer.contentType).toBe('image/png');
      expect(answer.body.equals(bytes), path).toBe(true);
    }
    expect(answers.get(`file ${Object.keys(cover.files)[0]} HEAD`)!.body.length).toBe(0);
    // The localized values of every locale show, and the fallback fills gaps.
    const all = parse(answers.get('documents locale=all [brackets]')!);
    expect(all.data.length).toBe(cover.snapshot.documents.length);
    expect(JSON.stringify(all.data)).toContain('"de_CH":');
  });
});

describe('a copy that differs', () => {
  it('with one document’s German title changed: differs in the answers that show it, and only there', async () => {
    const differences = await compareServers(original, retitled, requests);
    const names = differences.map((d) => d.name);
    expect(names).toEqual(
      expect.arrayContaining([
        `document ${changedId} locale=de_DE [query]`,
        'alias home locale=all [brackets]',
        'documents locale=de_DE [brackets]',
        'documents locale=all [brackets]',
      ]),
    );
    expect(differences.every((d) => d.what === 'body')).toBe(true);
    expect(differences.find((d) => d.name === `document ${changedId} locale=de_DE [query]`)!.b).toContain(
      'Geänderter Titel',
    );
    // Answers in English (the default locale) or in French (which falls back to English) do not show the German title.
    const german = /locale\W+(de_DE|de_CH|all)\b/;
    const elsewhere = differences.filter((d) => !german.test(decodeURIComponent(d.path) + JSON.stringify(d)));
    expect(elsewhere, describeDifferences(elsewhere)).toEqual([]);
    expect(names).not.toContain(`document ${changedId} locale=en_US [query]`);
    expect(names.some((n) => n.startsWith('file '))).toBe(false);
  });

  it('with one asset file’s bytes changed: differs in that file’s request alone', async () => {
    const differences = await compareServers(original, repainted, requests);
    expect(differences.map((d) => d.name)).toEqual([`file ${changedFile}`]);
    expect(differences[0]!.what).toBe('body');
  });
});
