import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { missingFilesWarning } from '../src/server/missing-files.ts';
import { startServer } from '../src/server/index.ts';
import { serveProcess } from './helpers/cli.ts';
import { fixture, rewrite, snapshotFolder, tinySnapshot as tiny } from './helpers/server.ts';

/**
 * A snapshot copied without its `images/` folder answers 404 for every file under /files: the
 * server says so when it loads the snapshot, once per repository, at start and on a reload.
 */

let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'read-api-missing-'));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The tiny snapshot with asset 300 (images/apples.svg, present), 301 (absolute) and two more whose files are not there. */
function withTwoMissing(extra: { id: string; url: string }[] = []): any {
  const snapshot = tiny();
  const [apples] = snapshot.assets;
  const copy = (id: string, url: string) => ({
    ...apples,
    fields: { ...apples.fields, file: { ...apples.fields.file, url } },
    meta: { ...apples.meta, id },
  });
  snapshot.assets.push(
    copy('302', 'images/pears.svg'),
    copy('303', './images/plums.svg'),
    ...extra.map(({ id, url }) => copy(id, url)),
  );
  return snapshot;
}

/** Resolves with the first line logged that matches. */
function logged(pattern: RegExp): { log: (line: string) => void; lines: string[]; line: Promise<string> } {
  const lines: string[] = [];
  let found!: (line: string) => void;
  const line = new Promise<string>((resolve) => (found = resolve));
  return {
    lines,
    line,
    log: (text) => {
      lines.push(text);
      if (pattern.test(text)) found(text);
    },
  };
}

describe('the server warns about asset files it would answer 404 for, when it loads a snapshot', () => {
  it('at start, in one line naming the count, the assets, their paths and what to do', async () => {
    const file = snapshotFolder(scratch, withTwoMissing());
    const { log, lines, line } = logged(/^Warning: /);
    const server = await startServer({ paths: [file], watch: false, log });
    try {
      const warning = await line;
      expect(warning).toContain('2 assets of repository tiny');
      expect(warning).toContain('302 images/pears.svg');
      expect(warning).toContain('303 images/plums.svg');
      expect(warning).toContain(`Copy the images/ folder beside ${file}`);
      // The present file and the absolute URL are not named.
      expect(warning).not.toContain('apples.svg');
      expect(warning).not.toContain('300');
      expect(warning).not.toContain('ada.png');
      expect(lines.filter((l) => l.startsWith('Warning: '))).toHaveLength(1);
      // And it is true: those files are 404, the present one is served.
      expect((await fetch(`${server.origin}/files/tiny/images/pears.svg`)).status).toBe(404);
      expect((await fetch(`${server.origin}/files/tiny/images/apples.svg`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('as an event too, which a caller of startServer can listen for once it has the server', async () => {
    const file = snapshotFolder(scratch, withTwoMissing());
    const server = await startServer({ paths: [file], watch: false });
    try {
      const [event] = await once(server.events, 'missing-files');
      expect(event).toEqual({
        repository: 'tiny',
        file,
        missing: [
          { id: '302', path: 'images/pears.svg', problem: 'missing' },
          { id: '303', path: 'images/plums.svg', problem: 'missing' },
        ],
      });
    } finally {
      await server.close();
    }
  });

  it('names a file it refuses to serve: outside the folder, or a snapshot file', async () => {
    writeFileSync(join(scratch, 'outside.svg'), '<svg/>');
    const file = snapshotFolder(
      scratch,
      withTwoMissing([
        { id: '304', url: '../outside.svg' },
        { id: '305', url: 'tiny.json' },
      ]),
    );
    const server = await startServer({ paths: [file], watch: false });
    try {
      const [event] = await once(server.events, 'missing-files');
      expect(event.missing.slice(2)).toEqual([
        { id: '304', path: '../outside.svg', problem: 'outside the folder' },
        { id: '305', path: 'tiny.json', problem: 'a snapshot file' },
      ]);
    } finally {
      await server.close();
    }
  });

  it('on a reload that still misses files, and no more once a reload finds them', async () => {
    const file = snapshotFolder(scratch, withTwoMissing());
    const { log, lines } = logged(/^Warning: /);
    const server = await startServer({ paths: [file], watch: true, log });
    try {
      await once(server.events, 'missing-files');
      const edited = withTwoMissing();
      edited.assets[2].fields.title.en_US = 'Pears, edited';
      let reloaded = once(server.events, 'reload');
      rewrite(file, JSON.stringify(edited));
      await reloaded;
      expect(lines.filter((l) => l.startsWith('Warning: '))).toHaveLength(2);

      for (const name of ['pears.svg', 'plums.svg'])
        writeFileSync(join(dirname(file), 'images', name), readFileSync(fixture('images/apples.svg')));
      edited.assets[2].fields.title.en_US = 'Pears, found';
      reloaded = once(server.events, 'reload');
      rewrite(file, JSON.stringify(edited));
      await reloaded;
      expect(lines.filter((l) => l.startsWith('Warning: '))).toHaveLength(2);
      expect(lines.some((l) => l.startsWith('reloaded tiny'))).toBe(true);
      expect((await fetch(`${server.origin}/files/tiny/images/pears.svg`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('names the first three assets and counts the rest', () => {
    const missing = ['a', 'b', 'c', 'd', 'e'].map((name, i) => ({
      id: String(400 + i),
      path: `images/${name}.png`,
      problem: 'missing' as const,
    }));
    const warning = missingFilesWarning('demo', '/site/content/demo.json', missing);
    expect(warning).toBe(
      'Warning: 5 assets of repository demo name a file the server cannot find, so /files/demo/ answers 404 for them: ' +
        '400 images/a.png, 401 images/b.png, 402 images/c.png and 2 more. Copy the images/ folder beside /site/content/demo.json.',
    );
  });
});

describe('the serve command prints the warning', () => {
  /** The first line the process prints on stderr. */
  const firstError = (serve: Awaited<ReturnType<typeof serveProcess>>) =>
    new Promise<string>((resolve) => {
      let text = '';
      serve.run.child.stderr.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        if (text.includes('\n')) resolve(text.split('\n')[0]!);
      });
    });

  for (const flags of [[], ['--quiet']]) {
    it(`on stderr, after the line with the URL${flags.length ? ', with --quiet too' : ''}`, async () => {
      const file = snapshotFolder(scratch, withTwoMissing());
      const serve = await serveProcess({ paths: [file], flags });
      try {
        expect(serve.firstLine).toContain('/v1');
        const warning = await firstError(serve);
        expect(warning).toMatch(
          /^Warning: 2 assets of repository tiny .*302 images\/pears\.svg, 303 images\/plums\.svg\. Copy the images\/ folder beside /,
        );
      } finally {
        await serve.stop();
      }
    });
  }
});
