import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SnapshotRecord } from '../wire/snapshot-format.ts';

/**
 * The snapshot file a pull writes: read back for what the previous pull left (its local key,
 * its assets and their files), and written whole or not at all (a temporary file renamed over it).
 */

interface PreviousSnapshot {
  /** The local keys it holds. */
  apiKeys: string[];
  /** Its assets by id. */
  assets: Map<string, SnapshotRecord>;
  /** Its bytes, to leave an unchanged snapshot untouched. */
  text: string;
}

/**
 * The snapshot a previous pull wrote at `file`; undefined when there is none. Its assets are
 * read only when `withAssets` (the whole file is parsed then); its keys come from the repository
 * block at its head, which a pull writes first.
 */
export async function readPrevious(file: string, withAssets: boolean): Promise<PreviousSnapshot | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  let raw: { repository?: { apiKeys?: unknown }; assets?: SnapshotRecord[] } = {};
  try {
    if (withAssets) raw = JSON.parse(text);
    else {
      const keys = /^\s*"apiKeys": (\[[^\]]*\])/m.exec(text.slice(0, 64 * 1024));
      raw = { repository: { apiKeys: keys ? JSON.parse(keys[1]!) : [] } };
    }
  } catch {
    // Not a snapshot: it gets a new key, and its files are not reused.
  }
  const apiKeys = Array.isArray(raw.repository?.apiKeys)
    ? raw.repository.apiKeys.filter((k): k is string => typeof k === 'string' && k.length > 0)
    : [];
  const assets = new Map(
    (Array.isArray(raw.assets) ? raw.assets : [])
      .filter((a) => typeof a?.meta?.id === 'string')
      .map((a) => [a.meta.id, a]),
  );
  return { apiKeys, assets, text };
}

/** A new local key: nothing like a real one, so it cannot be mistaken for it. */
export function newLocalKey(): string {
  return `local-${randomBytes(18).toString('base64url')}`;
}

/**
 * `text` written to a temporary file beside `file` (its folder created): `commit` renames it
 * over `file`, `discard` removes it if it is still there (after a commit, it is not).
 */
export async function stageFile(
  file: string,
  text: string,
): Promise<{ commit(): Promise<void>; discard(): Promise<void> }> {
  await mkdir(dirname(file), { recursive: true });
  const temp = `${file}.pull-${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  const discard = () => rm(temp, { force: true });
  try {
    await writeFile(temp, text);
  } catch (error) {
    await discard();
    throw error;
  }
  return { commit: () => rename(temp, file), discard };
}

/**
 * The snapshot as text: two-space JSON, one key per line, so that a changed document changes
 * only its own lines in a diff.
 */
export function snapshotText(snapshot: object): string {
  return `${JSON.stringify(snapshot, null, 2)}\n`;
}
