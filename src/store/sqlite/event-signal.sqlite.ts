import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  watch,
  writeSync,
  type FSWatcher,
} from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { EventSignal } from '../store.js';
import { PRIVATE_FILE, PRIVATE_FOLDER } from './db-connect.sqlite.js';

/** The folder beside a store file where the processes on it say they wrote; hidden, like the store's marker. */
export function signalFolder(path: string): string {
  return join(dirname(path), `.${basename(path)}.events`);
}

const WORD_FILE = 'word';
const BYTE = Buffer.from([0]);
/** This host, as a file name may hold it: a process id is looked up only among the listeners of this host. */
const HOST = hostname().replace(/[^A-Za-z0-9.]/g, '_');
const LISTENER = /^(.+)-(\d+)-[0-9a-f]{8}$/;

/** Whether the process with this id runs here (EPERM: it does, as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The processes on one SQLite file (workers of `--workers`, separate `serve`
 * instances) telling each other of new events, through the file system.
 *
 * A process with live streams open keeps a folder of its own in
 * signalFolder() while it has them, holding one file, `word`, which it
 * watches (inotify on Linux). Every process watches signalFolder() itself,
 * so it knows who listens. After a write is answered, a process writes one
 * byte into the word file of each other listening process (one `pwrite`
 * each per turn of the event loop, however many writes it answered in it;
 * no fsync), whose streams then look at once. With no stream open on
 * another process a write does nothing for them; no process hears its own
 * word or a word meant for another.
 *
 * The word is only a hint: where the folder cannot be made or watched,
 * streams wait for their poll as before. A listener's folder left by a
 * process that was killed is removed by the next process on the same host
 * that starts to listen; until then the others write their byte for nobody.
 */
export class SqliteEventSignal implements EventSignal {
  readonly #listeners = new Set<() => void>();
  readonly #folder: string;
  /** A pid alone could repeat across hosts sharing the folder, or stores in one process. */
  readonly #id = `${HOST}-${process.pid}-${randomBytes(4).toString('hex')}`;
  /** The other listening processes, with their word file once opened (undefined: not opened yet). */
  readonly #others = new Map<string, number | undefined>();
  #folderWatch: FSWatcher | undefined;
  #wordWatch: FSWatcher | undefined;
  #watching = false;
  #announcing = false;
  #closed = false;

  constructor(storePath: string) {
    this.#folder = signalFolder(storePath);
  }

  start(): void {
    this.#watch();
  }

  listen(listener: () => void): () => void {
    const own = () => listener();
    this.#listeners.add(own);
    this.#watch();
    if (!this.#wordWatch && !this.#closed) this.#beListener();
    return () => {
      if (this.#listeners.delete(own) && this.#listeners.size === 0) this.#stopListening();
    };
  }

  announce(): void {
    if (this.#announcing || this.#closed) return;
    this.#watch();
    if (this.#others.size === 0) return;
    this.#announcing = true;
    setImmediate(() => {
      this.#announcing = false;
      for (const name of this.#others.keys()) this.#tell(name);
    });
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#folderWatch?.close();
    this.#folderWatch = undefined;
    this.#stopListening();
    for (const name of [...this.#others.keys()]) this.#forget(name);
    return Promise.resolve();
  }

  /** One byte into another listener's word file; a word lost leaves its events to the poll. */
  #tell(name: string): void {
    let fd = this.#others.get(name);
    try {
      // 'r+': never creates a file a listener has removed.
      if (fd === undefined) this.#others.set(name, (fd = openSync(join(this.#folder, name, WORD_FILE), 'r+')));
      writeSync(fd, BYTE, 0, 1, 0);
    } catch {
      // Its folder made but not its file yet, or gone: the folder's watch says which.
    }
  }

  #forget(name: string): void {
    const fd = this.#others.get(name);
    this.#others.delete(name);
    if (fd !== undefined) closeSync(fd);
  }

  /** Makes this process's folder and word file, and watches the file; removes the folders of gone processes of this host. */
  #beListener(): void {
    for (const name of [...this.#others.keys()]) {
      const [, host, pid] = LISTENER.exec(name) ?? [];
      if (host === HOST && !running(Number(pid))) {
        this.#forget(name);
        rmSync(join(this.#folder, name), { recursive: true, force: true });
      }
    }
    const own = join(this.#folder, this.#id);
    try {
      mkdirSync(own, { mode: PRIVATE_FOLDER });
      closeSync(openSync(join(own, WORD_FILE), 'w', PRIVATE_FILE));
      this.#wordWatch = watch(join(own, WORD_FILE), { persistent: false }, () => {
        for (const listener of this.#listeners) listener();
      });
      this.#wordWatch.on('error', () => this.#stopListening());
    } catch {
      // Not writable here: the others' words do not come, their events arrive at the poll.
      this.#stopListening();
    }
  }

  #stopListening(): void {
    this.#wordWatch?.close();
    this.#wordWatch = undefined;
    rmSync(join(this.#folder, this.#id), { recursive: true, force: true });
  }

  /** Watches the folder from the first word or listener on: which processes listen. */
  #watch(): void {
    if (this.#watching || this.#closed) return;
    this.#watching = true;
    try {
      mkdirSync(this.#folder, { mode: PRIVATE_FOLDER });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return;
    }
    try {
      // Not persistent: a watch alone must not keep a process alive.
      this.#folderWatch = watch(this.#folder, { persistent: false }, (_type, name) => name && this.#changed(name));
      this.#folderWatch.on('error', () => {
        // The folder removed, or the watch lost: no word goes out, streams go back to their poll.
        this.#folderWatch?.close();
        this.#folderWatch = undefined;
        for (const name of [...this.#others.keys()]) this.#forget(name);
      });
      // After the watch began: a listener that comes meanwhile is seen by one or the other.
      for (const name of readdirSync(this.#folder)) this.#changed(name);
    } catch {
      this.#folderWatch?.close();
      this.#folderWatch = undefined;
    }
  }

  /** A listener's folder came or went (perhaps both, since the last look): only the folder says which is left. */
  #changed(name: string): void {
    if (name === this.#id || !LISTENER.test(name)) return;
    // Its word file may be a new one: opened again at the next word.
    this.#forget(name);
    if (existsSync(join(this.#folder, name))) this.#others.set(name, undefined);
  }
}
