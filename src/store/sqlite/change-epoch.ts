import type Database from 'better-sqlite3';
import { CONNECTION_SQL, prepareAll } from './db-connect.sqlite.js';

/** A plant deleted through this process: the version it was deleted at, and its position (seq) in the list. */
export interface Deletion {
  readonly at: number;
  readonly position: bigint;
}

/**
 * An owner's plants as of some moment, for list page reuse. Versions only
 * grow, and every change gets one never given before. A page read at version
 * `v` (the owner's `appended` then) is still right while `changed` <= v,
 * `appended` <= v unless the page had a next page, and no later deletion
 * lies within its span (page-cache.ts).
 */
export interface ChangeVersion {
  /** Moves with anything that can change any page and is not in `deletions`: an import, another connection's commit. */
  readonly changed: number;
  /** Moves with every change. A create appends, so it changes only the last page of the list. */
  readonly appended: number;
  /** The latest deletions, oldest first; older ones have moved `changed`. */
  readonly deletions: readonly Deletion[];
}

/** What ChangeEpoch needs from the writer thread. */
export interface WriterProbe {
  /** A batch has been sent and not yet answered. */
  readonly busy: boolean;
  /** A checkForeign() question has not been answered yet. */
  readonly awaitingForeign: boolean;
  /**
   * Asks the writer thread whether another connection committed, without
   * waiting: the answer comes later, through ChangeEpoch.probed. False when
   * no answer can come.
   */
  checkForeign(): boolean;
}

// Past this many owners with their own version, all of them start over
// from one shared version, so memory stays bounded.
const MAX_OWNERS = 10_000;
// Deletions remembered per owner; an older one moves the owner's `changed`.
const MAX_DELETIONS = 16;

/** A committed write of the writer thread, as ChangeEpoch needs it. */
export interface WrittenOwner {
  owner: string;
  /** A create (only appends), rather than a delete. */
  appended: boolean;
  /** A delete: the seq of the plant it deleted. */
  deleted?: bigint | undefined;
}

/**
 * Versions of each owner's plants, for list page reuse. A write through this
 * process's writer thread changes only its owners' versions. A commit by any
 * other connection (another worker or process, the CLI) may have touched any
 * owner, so it changes them all.
 *
 * A create only appends: a new plant's seq (its rowid) is above every row
 * of the table, so it cannot enter a page that already had a next page. It
 * moves only the owner's `appended` version, and a page that ended before
 * the end of the list stays good (page-cache.ts). A delete through this
 * process is remembered with the plant's seq, so only pages that held it go.
 * Everything else (an import, another connection's commit) moves `changed`.
 *
 * SQLite reports commits by other connections through PRAGMA data_version,
 * read at most once per turn of the event loop (a client that saw another
 * process acknowledge a write can only reach us in a later turn). Our writer
 * thread has a connection of its own, so its commits change the main
 * connection's data_version too. When that may be why it changed, the
 * writer thread, whose own data_version changes only for the others, is
 * asked; until it answers, no version is given and nothing is reused (the
 * pages are read from SQLite, which is always right). The serving thread
 * never waits for the answer: it takes it from the next store call on.
 */
export class ChangeEpoch {
  // Every version comes from this counter, so a change always gives a version
  // never handed out before.
  #counter = 0;
  #all: ChangeVersion = { changed: 0, appended: 0, deletions: [] };
  readonly #owners = new Map<string, { changed: number; appended: number; deletions: Deletion[] }>();
  readonly #read: Database.Statement<[], number>;
  #dataVersion: unknown;
  #fresh = false;
  #writer: WriterProbe | undefined;
  /** The writer thread committed since data_version was last read: its next change may be ours. */
  #ours = false;
  /** A version was asked for since the last commit: list pages are being served. */
  #wanted = false;
  readonly #expire = () => {
    this.#fresh = false;
  };

  constructor(db: Database.Database) {
    this.#read = prepareAll(db, { dataVersion: CONNECTION_SQL.dataVersion }).dataVersion;
    this.#dataVersion = this.#read.get();
  }

  follow(writer: WriterProbe): void {
    this.#writer = writer;
  }

  /** This owner's plants may have changed through this process; `appended`: only by creates. */
  bump(owner: string, appended = false): void {
    const version = this.#owner(owner);
    version.appended = ++this.#counter;
    if (!appended) version.changed = this.#counter;
  }

  /** This process deleted the owner's plant at `seq`. */
  deleted(owner: string, seq: bigint): void {
    const version = this.#owner(owner);
    version.appended = ++this.#counter;
    if (version.deletions.push({ at: this.#counter, position: seq }) > MAX_DELETIONS) {
      version.changed = version.deletions.shift()!.at;
    }
  }

  #owner(owner: string) {
    let version = this.#owners.get(owner);
    if (version === undefined) {
      if (this.#owners.size >= MAX_OWNERS) this.#bumpAll();
      version = { changed: this.#all.changed, appended: this.#all.appended, deletions: [] };
      this.#owners.set(owner, version);
    }
    return version;
  }

  /** A batch of the writer thread committed; `foreign`: another connection committed since its last report. */
  committed(written: readonly WrittenOwner[], foreign: boolean): void {
    if (foreign) this.#bumpAll();
    for (const w of written) {
      if (w.deleted === undefined) this.bump(w.owner, w.appended);
      else this.deleted(w.owner, w.deleted);
    }
    this.#ours = true;
    // While lists are served, read data_version now, before the next batch
    // is sent: the change is this commit, perhaps with another connection's,
    // and the probe this sends is then answered ahead of that batch. With
    // nobody listing (a stream of creates), the read and the probe wait for
    // the next list, instead of costing two more messages every commit.
    if (this.#wanted) {
      this.#wanted = false;
      this.#check();
    }
  }

  /** The writer thread's answer to a probe. */
  probed(foreign: boolean): void {
    if (foreign) this.#bumpAll();
  }

  /** The owner's current version (read it at once, it changes in place), or undefined while the store cannot tell. */
  current(owner: string): ChangeVersion | undefined {
    this.#wanted = true;
    if (!this.#fresh) this.#check();
    if (this.#writer?.awaitingForeign) return undefined;
    return this.#owners.get(owner) ?? this.#all;
  }

  #check(): void {
    if (!this.#fresh) {
      this.#fresh = true;
      setImmediate(this.#expire);
    }
    const version = this.#read.get();
    if (version === this.#dataVersion) return;
    this.#dataVersion = version;
    const mayBeOurs = this.#ours || (this.#writer?.busy ?? false);
    this.#ours = false;
    if (!(mayBeOurs && this.#writer?.checkForeign())) this.#bumpAll();
  }

  #bumpAll(): void {
    const version = ++this.#counter;
    this.#all = { changed: version, appended: version, deletions: [] };
    this.#owners.clear();
  }
}
