import { type FSWatcher, watch } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

/** A snapshot file's name as a folder of them holds it: `*.json`, not hidden. */
export const isSnapshotName = (file: string): boolean => file.endsWith('.json') && !basename(file).startsWith('.');

/**
 * Which snapshot files the server loads, and watching them: the files it was given, and the
 * `*.json` files of the folders it was given, those that appear later included.
 */
export class SnapshotFiles {
  readonly #files: Set<string>;
  readonly #folders: string[];
  readonly #watchers: FSWatcher[] = [];
  readonly #timers = new Map<string, NodeJS.Timeout>();

  private constructor(files: string[], folders: string[]) {
    this.#files = new Set(files);
    this.#folders = folders;
  }

  /** Expands the paths given: files as they are, folders into their snapshot files. */
  static async expand(paths: string[]): Promise<SnapshotFiles> {
    const files: string[] = [];
    const folders: string[] = [];
    for (const path of paths.map((p) => resolve(p))) {
      const info = await stat(path).catch(() => {
        throw new Error(`Snapshot path not found: ${path}`);
      });
      if (info.isDirectory()) {
        folders.push(path);
        const names = (await readdir(path)).filter((name) => isSnapshotName(name)).sort();
        if (names.length === 0) throw new Error(`No snapshot (*.json) in folder ${path}`);
        files.push(...names.map((name) => join(path, name)));
      } else files.push(path);
    }
    return new SnapshotFiles([...new Set(files)], folders);
  }

  files(): Iterable<string> {
    return this.#files;
  }

  folders(): Iterable<string> {
    return this.#folders;
  }

  /**
   * Calls `reload` with a snapshot file a moment after it changes (editors write in several
   * steps), or after a new one appears in a folder. A file removed or renamed away is not
   * reloaded: the server keeps serving what it held.
   */
  watch(reload: (file: string) => void): void {
    const dirs = new Set([...[...this.#files].map((file) => dirname(file)), ...this.#folders]);
    for (const dir of dirs) {
      const watcher = watch(dir, (_event, name) => {
        if (!name) return;
        const file = join(dir, name.toString());
        if (!this.#files.has(file) && !(this.#folders.includes(dir) && isSnapshotName(file))) return;
        clearTimeout(this.#timers.get(file));
        const timer = setTimeout(() => {
          this.#timers.delete(file);
          stat(file).then(
            () => {
              this.#files.add(file);
              reload(file);
            },
            () => {},
          );
        }, 60);
        this.#timers.set(file, timer);
      });
      this.#watchers.push(watcher);
    }
  }

  close(): void {
    for (const watcher of this.#watchers) watcher.close();
    for (const timer of this.#timers.values()) clearTimeout(timer);
  }
}
