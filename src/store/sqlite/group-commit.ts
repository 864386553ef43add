import type Database from 'better-sqlite3';
import { TRANSACTION_SQL, prepareAll, type Prepared } from './db-connect.sqlite.js';

export type Settled<T, E = unknown> = { ok: true; value: T } | { ok: false; error: E };

/**
 * Group commit on one connection: a batch of writes shares one transaction,
 * so one fsync covers them all, and a statement that fails fails only its
 * own write. The transaction is BEGIN IMMEDIATE (its locks: TRANSACTION_SQL).
 * (Which writes form a batch is decided by the writer thread's
 * caller, see writer-thread.ts.)
 */
export class GroupCommit {
  readonly #sql: Prepared<typeof TRANSACTION_SQL>;

  constructor(private readonly db: Database.Database) {
    this.#sql = prepareAll(db, TRANSACTION_SQL);
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
