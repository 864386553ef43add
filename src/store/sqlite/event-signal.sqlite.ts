import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, unlinkSync, watch, writeSync, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { EventSignal } from '../store.js';
import { PRIVATE_FILE, PRIVATE_FOLDER } from './db-connect.sqlite.js';

/** The folder beside a store file where the processes on it say they wrote; hidden, like the store's marker. */
export function signalFolder(path: string): string {
  return join(dirname(path), `.${basename(path)}.events`);
}

const BYTE = Buffer.from([0]);

/**
 * The processes on one SQLite file (workers of `--workers`, separate `serve`
 * instances) telling each other of new events, through the file system:
 * each process has a file of its own in signalFolder(), opened on first use,
 * and after a write is answered it writes one byte into it (one `pwrite`
 * per turn of the event loop, however many writes it answered in it; no
 * fsync, the byte only has to reach the page cache). Every process watches
 * the folder (inotify on Linux, FSEvents or kqueue elsewhere), and a change
 * to any file but its own makes its streams look at once. The word is only
 * a hint: where the folder cannot be made or watched, streams wait for
 * their poll as before.
 */
export class SqliteEventSignal implements EventSignal {
  readonly #listeners = new Set<() => void>();
  readonly #folder: string;
  /** This process's file: a pid alone could repeat across containers sharing the folder, or stores in one process. */
  readonly #name = `${process.pid}-${randomBytes(4).toString('hex')}`;
  #fd: number | undefined;
  #opened = false;
  #watcher: FSWatcher | undefined;
  #announcing = false;
  #closed = false;

  constructor(storePath: string) {
    this.#folder = signalFolder(storePath);
  }

  listen(listener: () => void): () => void {
    const own = () => listener();
    this.#listeners.add(own);
    this.#watch();
    return () => this.#listeners.delete(own);
  }

  announce(): void {
    if (this.#announcing || this.#closed) return;
    this.#announcing = true;
    setImmediate(() => {
      this.#announcing = false;
      const fd = this.#file();
      if (fd === undefined) return;
      try {
        writeSync(fd, BYTE, 0, 1, 0);
      } catch {
        // A word lost: the other processes' polls find the events.
      }
    });
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#watcher?.close();
    this.#watcher = undefined;
    if (this.#fd !== undefined) {
      closeSync(this.#fd);
      this.#fd = undefined;
      try {
        unlinkSync(join(this.#folder, this.#name));
      } catch {
        // Gone already.
      }
    }
    return Promise.resolve();
  }

  /** The folder, made if missing; false when it cannot be. */
  #makeFolder(): boolean {
    try {
      mkdirSync(this.#folder, { mode: PRIVATE_FOLDER });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return false;
    }
    return true;
  }

  /** This process's file, created on the first write; tried once. */
  #file(): number | undefined {
    if (!this.#opened && !this.#closed) {
      this.#opened = true;
      try {
        if (this.#makeFolder()) this.#fd = openSync(join(this.#folder, this.#name), 'w', PRIVATE_FILE);
      } catch {
        // Not writable here: no word goes out.
      }
    }
    return this.#fd;
  }

  #watch(): void {
    if (this.#watcher || this.#closed || !this.#makeFolder()) return;
    try {
      // Not persistent: a watch alone must not keep a process alive.
      this.#watcher = watch(this.#folder, { persistent: false }, (_type, name) => {
        if (name !== this.#name) for (const listener of this.#listeners) listener();
      });
    } catch {
      return;
    }
    this.#watcher.on('error', () => {
      // The folder removed, or the watch lost: streams go back to their poll.
      this.#watcher?.close();
      this.#watcher = undefined;
    });
  }
}
