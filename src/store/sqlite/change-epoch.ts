import type Database from 'better-sqlite3';

/**
 * Counts changes to the database file: commits made through this connection
 * (bump) and commits by any other connection or process, which SQLite reports
 * through PRAGMA data_version. Reading the pragma costs a few microseconds,
 * so it is read at most once per turn of the event loop: a client that saw
 * another process acknowledge a write can only reach us in a later turn, so
 * it always sees the change.
 */
export class ChangeEpoch {
  #epoch = 0;
  #dataVersion: unknown;
  #fresh = false;
  readonly #read: Database.Statement;
  readonly #expire = () => {
    this.#fresh = false;
  };

  constructor(db: Database.Database) {
    this.#read = db.prepare('PRAGMA data_version').pluck();
    this.#dataVersion = this.#read.get();
  }

  bump(): void {
    this.#epoch++;
  }

  current(): number {
    if (!this.#fresh) {
      const version = this.#read.get();
      if (version !== this.#dataVersion) {
        this.#dataVersion = version;
        this.#epoch++;
      }
      this.#fresh = true;
      setImmediate(this.#expire);
    }
    return this.#epoch;
  }
}
