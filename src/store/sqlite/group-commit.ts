import type Database from 'better-sqlite3';
import { operation } from '../operation.js';
import { prepareAll, type Prepared } from './db-connect.sqlite.js';

export type Settled<T, E = unknown> = { ok: true; value: T } | { ok: false; error: E };

// The transaction of a batch. Locks: BEGIN IMMEDIATE takes SQLite's write
// lock at once (waiting up to busy_timeout while another connection holds
// it), not at the first write: a transaction that read first and then had to
// wait for the lock would fail with SQLITE_BUSY instead of waiting. It is
// held to COMMIT or ROLLBACK: no other connection writes between a write's
// check and the write it guards.
const SQL = {
  begin: operation<[]>('writer_begin', 'BEGIN IMMEDIATE'),
  commit: operation<[]>('writer_commit', 'COMMIT'),
  rollback: operation<[]>('writer_rollback', 'ROLLBACK'),
};

/**
 * Group commit on one connection: a batch of writes shares one transaction,
 * so one fsync covers them all, and a statement that fails fails only its
 * own write. (Which writes form a batch is decided by the writer thread's
 * caller, see writer-thread.ts.)
 */
export class GroupCommit {
  readonly #sql: Prepared<typeof SQL>;

  constructor(private readonly db: Database.Database) {
    this.#sql = prepareAll(db, SQL);
  }

  /** Runs these writes in one transaction; the outcome of each, in order, once COMMIT has returned. */
  commitNow<T>(writes: readonly (() => T)[]): Settled<T>[] {
    const outcomes: Settled<T>[] = new Array(writes.length);
    this.#commitBatch(
      writes.map((run, i) => ({ run, i })),
      outcomes,
    );
    return outcomes;
  }

  #commitBatch<T>(batch: { run: () => T; i: number }[], outcomes: Settled<T>[]): void {
    if (batch.length === 0) return;
    try {
      this.#sql.begin.run();
    } catch (error) {
      for (const w of batch) outcomes[w.i] = { ok: false, error };
      return;
    }
    const done: Settled<T>[] = new Array(batch.length);
    for (let k = 0; k < batch.length; k++) {
      try {
        done[k] = { ok: true, value: batch[k]!.run() };
      } catch (error) {
        done[k] = { ok: false, error };
        if (!this.db.inTransaction) {
          // The error ended the whole transaction (disk full, I/O error): the
          // writes before it are gone too, so run the batch again without it.
          outcomes[batch[k]!.i] = done[k]!;
          const again = batch.filter((_, j) => j !== k && (j > k || done[j]!.ok));
          for (let j = 0; j < k; j++) if (!done[j]!.ok) outcomes[batch[j]!.i] = done[j]!;
          this.#commitBatch(again, outcomes);
          return;
        }
      }
    }
    try {
      this.#sql.commit.run();
    } catch (error) {
      if (this.db.inTransaction) this.#sql.rollback.run();
      for (const w of batch) outcomes[w.i] = { ok: false, error };
      return;
    }
    for (let k = 0; k < batch.length; k++) outcomes[batch[k]!.i] = done[k]!;
  }
}
