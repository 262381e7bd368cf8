import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pull } from '../src/pull/pull.ts';
import { type ReadApiServer, startServer } from '../src/server/index.ts';
import {
  battery,
  batteryInfo,
  compareServers,
  describeDifferences,
  type SnapshotJson,
  type Target,
  writeCoverSnapshot,
} from './helpers/round-trip.ts';
import { demoKey, demoSnapshot, fixture, tinyKey } from './helpers/server.ts';

/**
 * The round trip: serve snapshot A, pull it into B through the client over HTTP, serve B; every
 * request of the battery (every route, filters on every type and operator, sorting, includes,
 * embedAssets, locales, masks, tags, search, paging, collections with request options, /files)
 * answers byte for byte the same from both, each server's own origin aside. With and without
 * the files, for a generated snapshot that covers every field type, for a repository with
 * sections (test/fixtures/sections.json), and for the demo.
 */

let scratch: string;
const servers: ReadApiServer[] = [];
const serve = async (file: string): Promise<ReadApiServer> => {
  const server = await startServer({ paths: [file], watch: false });
  servers.push(server);
  return server;
};

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cmft-round-trip-'));
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  await rm(scratch, { recursive: true, force: true });
});

/** Pulls every collection and alias of `original` from `server` into `out`; returns the copy's file and key. */
async function pullAll(
  server: ReadApiServer,
  original: SnapshotJson,
  key: string,
  out: string,
  assets: boolean,
): Promise<{ file: string; key: string; warnings: string[] }> {
  const result = await pull({
    config: {
      baseUrl: server.url,
      repository: original.repository.apiId,
      apiKey: key,
      collections: Object.fromEntries(original.collections.map((c) => [c.apiId, {}])),
      aliases: original.aliases.map((a) => a.apiId),
      concurrency: 8,
      pageSize: 7, // many pages, so paging is part of the trip
    },
    out,
    assets,
  });
  return { file: result.file, key: result.localKey, warnings: result.warnings };
}

const cases: { name: string; make(dir: string): Promise<{ file: string; snapshot: SnapshotJson; key: string }> }[] = [
  {
    name: 'a generated snapshot with every field type',
    make: async (dir) => {
      const cover = await writeCoverSnapshot(dir);
      return { file: cover.file, snapshot: cover.snapshot, key: cover.key };
    },
  },
  {
    name: 'a repository with sections',
    make: async (dir) => {
      await cp(fixture('sections.json'), join(dir, 'sections.json'));
      await cp(fixture('images'), join(dir, 'images'), { recursive: true });
      const file = join(dir, 'sections.json');
      return { file, snapshot: JSON.parse(await readFile(file, 'utf8')) as SnapshotJson, key: tinyKey };
    },
  },
  {
    name: 'the demo',
    make: async (dir) => {
      await cp(dirname(demoSnapshot), dir, { recursive: true });
      const file = join(dir, 'demo.json');
      return { file, snapshot: JSON.parse(await readFile(file, 'utf8')) as SnapshotJson, key: demoKey };
    },
  },
];

describe.each(cases)('round trip of $name', ({ make }) => {
  for (const assets of [false, true]) {
    it(`answers every request of the battery alike ${assets ? 'with the files pulled' : 'with the files left on the original'}`, async () => {
      const a = await make(await mkdtemp(join(scratch, 'a-')));
      const serverA = await serve(a.file);
      const b = await pullAll(serverA, a.snapshot, a.key, await mkdtemp(join(scratch, 'b-')), assets);
      expect(b.warnings).toEqual([]);
      expect(b.key).not.toBe(a.key);
      expect(await readFile(b.file, 'utf8')).not.toContain(a.key);
      const serverB = await serve(b.file);
      const requests = battery(batteryInfo(a.snapshot));
      expect(requests.length).toBeGreaterThan(150);
      const targetA: Target = { origin: serverA.origin, key: a.key };
      // Without its files, the copy links the original's: that origin stands for the copy's own.
      const targetB: Target = { origin: serverB.origin, key: b.key, alsoOrigins: assets ? [] : [serverA.origin] };
      // Without its files, the copy serves no /files of its own: its assets link the original's.
      const differences = await compareServers(
        targetA,
        targetB,
        assets ? requests : requests.filter((r) => !r.path.startsWith('/files/')),
      );
      expect(differences, describeDifferences(differences)).toEqual([]);
      if (assets) {
        // The copy serves its own files: the original can go.
        await serverA.close();
        const files = requests.filter((r) => r.path.startsWith('/files/'));
        expect(files.length).toBeGreaterThan(0);
        for (const request of files)
          expect((await fetch(`${serverB.origin}${request.path}`)).status, request.path).toBe(request.status ?? 200);
      }
    }, 120_000);
  }
});
