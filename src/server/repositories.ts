import { dirname } from 'node:path';
import { collectionError } from './answer.ts';
import { PreparedRepository } from './prepared-repository.ts';
import { SnapshotError } from '../wire/snapshot.ts';
import type { Snapshot } from '../wire/snapshot-format.ts';
import { warmFrom } from './warm.ts';

/** Where a repository's snapshot came from: a file (whose folder serves its asset files), or an object. */
export interface SnapshotSource {
  file?: string;
}

export interface ReloadEvent {
  repository: string;
  changed: string[];
  removed: string[];
}

/** The ids of records added or changed, and of records removed, between two snapshots. */
export function diffSnapshots(before: Snapshot | undefined, after: Snapshot): Omit<ReloadEvent, 'repository'> {
  const index = (s: Snapshot | undefined) =>
    new Map([...(s?.documents ?? []), ...(s?.assets ?? [])].map((r) => [r.meta.id, JSON.stringify(r)]));
  const old = index(before);
  const now = index(after);
  return {
    changed: [...now].filter(([id, json]) => old.get(id) !== json).map(([id]) => id),
    removed: [...old.keys()].filter((id) => !now.has(id)),
  };
}

/**
 * The repositories in service, each with the source it came from. A swap replaces a
 * repository's prepared snapshot in one assignment, so a request, which takes the repository
 * once, sees the old snapshot or the new one, never a mix.
 */
export class Repositories {
  readonly #live = new Map<string, PreparedRepository>();
  readonly #sources = new Map<string, SnapshotSource>();
  /** The origin asset URLs are made absolute with; known once the server listens. */
  origin = '';

  /** The map requests read; a request takes a repository from it once. */
  get live(): ReadonlyMap<string, PreparedRepository> {
    return this.#live;
  }

  apiIds(): string[] {
    return [...this.#live.keys()];
  }

  sourceOf(apiId: string): SnapshotSource | undefined {
    return this.#sources.get(apiId);
  }

  /** The folder whose files a repository's assets may name; none for a snapshot given as an object. */
  folderOf(apiId: string): string | undefined {
    const file = this.#sources.get(apiId)?.file;
    return file === undefined ? undefined : dirname(file);
  }

  /**
   * Prepares a snapshot and puts it in service for its repository, warmed with the work the
   * snapshot it replaces had done; refuses a repository another file serves already.
   */
  swap(snapshot: Snapshot, source: SnapshotSource, label: string): ReloadEvent {
    const apiId = snapshot.repository.apiId;
    const other = this.#sources.get(apiId);
    if (other && other.file !== source.file && source.file !== undefined) {
      throw servedTwice(label, apiId, other.file ?? 'another snapshot');
    }
    const repository = this.#prepare(snapshot, label);
    const previous = this.#live.get(apiId);
    // Before it goes live, so the first requests after a reload are as fast as those before it.
    if (previous) warmFrom(repository, previous);
    // The file served another repository before: that one is gone.
    const owner = [...this.#sources].find(([id, s]) => id !== apiId && s.file !== undefined && s.file === source.file);
    this.#live.set(apiId, repository);
    this.#sources.set(apiId, source);
    if (owner) {
      this.#live.delete(owner[0]);
      this.#sources.delete(owner[0]);
    }
    return { repository: apiId, ...diffSnapshots(previous?.snapshot, snapshot) };
  }

  #prepare(snapshot: Snapshot, label: string): PreparedRepository {
    const repository = new PreparedRepository(snapshot, this.origin);
    snapshot.collections.forEach((collection, i) => {
      const problem = collectionError(repository, collection);
      if (problem) throw new SnapshotError(label, `$.collections[${i}].${problem.key}`, problem.error.message);
    });
    return repository;
  }
}

/** Checks that no two snapshots given at start serve the same repository. */
export function checkDistinct(initial: { snapshot: Snapshot; label: string }[]): void {
  const seen = new Map<string, string>();
  for (const { snapshot, label } of initial) {
    const apiId = snapshot.repository.apiId;
    if (seen.has(apiId)) throw servedTwice(label, apiId, seen.get(apiId)!);
    seen.set(apiId, label);
  }
}

const servedTwice = (label: string, apiId: string, other: string) =>
  new SnapshotError(label, '$.repository.apiId', `repository ${JSON.stringify(apiId)} is also served from ${other}`);
