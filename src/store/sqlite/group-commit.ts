import type Database from 'better-sqlite3';

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

interface PendingWrite {
  run: () => unknown;
  resolve: (value: any) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: writes that arrive in the same turn of the event loop share
 * one transaction, so one fsync covers them all. Each caller is answered only
 * after the COMMIT that holds its write has returned, and a statement that
 * fails fails only its own caller.
 */
export class GroupCommit {
  #queue: PendingWrite[] = [];
  #scheduled = false;
  #idle: Promise<void> = Promise.resolve();
  #markIdle: () => void = () => {};
  readonly #begin: Database.Statement;
  readonly #commit: Database.Statement;
  readonly #rollback: Database.Statement;

  /** @param onCommit runs right after each successful COMMIT, before any caller is answered. */
  constructor(
    private readonly db: Database.Database,
    private readonly onCommit: () => void = () => {},
  ) {
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
  }

  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run: write, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        this.#idle = new Promise((r) => (this.#markIdle = r));
        setImmediate(this.#flush);
      }
    });
  }

  /** Runs these writes in one transaction right away; the outcome of each, in order. */
  commitNow<T>(writes: readonly (() => T)[]): Settled<T>[] {
    const outcomes: Settled<T>[] = new Array(writes.length);
    this.#commitBatch(
      writes.map((run, i) => ({
        run,
        resolve: (value: T) => (outcomes[i] = { ok: true, value }),
        reject: (error: unknown) => (outcomes[i] = { ok: false, error }),
      })),
    );
    return outcomes;
  }

  /** Resolves once every write queued so far has been committed or failed. */
  drain(): Promise<void> {
    return this.#idle;
  }

  readonly #flush = () => {
    const batch = this.#queue;
    this.#queue = [];
    this.#scheduled = false;
    try {
      this.#commitBatch(batch);
    } finally {
      if (!this.#scheduled) this.#markIdle();
    }
  };

  #commitBatch(batch: PendingWrite[]): void {
    if (batch.length === 0) return;
    try {
      this.#begin.run();
    } catch (error) {
      for (const w of batch) w.reject(error);
      return;
    }
    const results: unknown[] = new Array(batch.length);
    const failures = new Map<number, unknown>();
    for (let i = 0; i < batch.length; i++) {
      try {
        results[i] = batch[i]!.run();
      } catch (error) {
        if (!this.db.inTransaction) {
          // The error ended the whole transaction (disk full, I/O error):
          // the writes before it are gone too, so run the batch again without it.
          batch[i]!.reject(error);
          this.#commitBatch(batch.filter((_, j) => j !== i && !failures.has(j)));
          for (const [j, e] of failures) batch[j]!.reject(e);
          return;
        }
        failures.set(i, error);
      }
    }
    try {
      this.#commit.run();
    } catch (error) {
      if (this.db.inTransaction) this.#rollback.run();
      for (const w of batch) w.reject(error);
      return;
    }
    this.onCommit();
    for (let i = 0; i < batch.length; i++) {
      const w = batch[i]!;
      if (failures.has(i)) w.reject(failures.get(i));
      else w.resolve(results[i]);
    }
  }
}
