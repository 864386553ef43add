import { Worker } from 'node:worker_threads';
import { dbCommitDuration, metricsOn, sqliteBatchSize } from '../../metrics/metrics.js';
import { StoreUnavailableError } from '../store.js';
import type { ChangeEpoch, WriterProbe } from './change-epoch.js';
import type { SqliteOptions } from './db-connect.sqlite.js';
import type { WriteOp, WriteResult, WriteResults } from './plant-writes.sqlite.js';
import type { Report } from './writer.worker.js';

interface Pending {
  op: WriteOp;
  resolve: (value: WriteResult) => void;
  reject: (error: unknown) => void;
}

/** Thrown for a write the database refused (a constraint, a full disk); answered as 500. */
export class SqliteWriteError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'SqliteWriteError';
  }
}

/** Told of every batch the thread commits and every probe it answers: a ChangeEpoch. */
export type CommitListener = Pick<ChangeEpoch, 'follow' | 'committed' | 'probed'>;

const BUSY = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED']);
// A commit costs far more than an insert (the WAL write and its fsync), so a
// small batch waits a few turns of the event loop for more writes to join it:
// until it is as large as the last batch (at most MIN_BATCH), and at most 8
// turns, each a poll for new requests. Under a stream of writes this fills
// batches (about a fifth more creates per second at 32 connections); when
// writes are a trickle among reads, batches are small and a write waits
// little instead of 8 turns for company that does not come.
const MIN_BATCH = 32;
const MAX_WAIT_TURNS = 8;

/**
 * The main thread's side of the writer thread: writes queue up while one
 * batch is being committed, and go as the next batch as soon as it is done.
 * A caller is answered only when the batch holding its write has committed.
 */
export class WriterThread implements WriterProbe {
  #worker: Worker | undefined;
  #queue: Pending[] = [];
  #inFlight: Pending[] | undefined;
  #scheduled = false;
  #waited = 0;
  #lastBatch = MIN_BATCH;
  #failed: Error | undefined;
  #closed: Promise<void> | undefined;
  #drained: (() => void) | undefined;
  /** When the batch in flight was handed to the thread (performance.now()), for the commit-time metric. */
  #sentAt = 0;
  readonly #commitSeries = dbCommitDuration.series('sqlite');
  readonly #batchSeries = sqliteBatchSize.series();

  /** The thread starts with the first write, so read-only users (the CLI) never pay for it. */
  constructor(
    private readonly options: SqliteOptions,
    private readonly changes: CommitListener,
  ) {
    changes.follow(this);
  }

  get busy(): boolean {
    return this.#inFlight !== undefined;
  }

  probe(): boolean {
    if (!this.#worker || this.#failed) return false;
    this.#worker.postMessage('probe');
    return true;
  }

  #start(): Worker {
    const worker = new Worker(new URL('./writer.worker.js', import.meta.url), { workerData: this.options });
    worker.on('message', (report: Report) =>
      report.outcomes ? this.#settle(report.outcomes, report.foreign) : this.changes.probed(report.foreign),
    );
    worker.on('error', (error) => this.#fail(error));
    worker.on('exit', () => this.#fail(new Error('the SQLite writer thread stopped')));
    return worker;
  }

  run<Op extends WriteOp>(op: Op): Promise<WriteResults[Op['kind']]> {
    if (this.#failed || this.#closed)
      return Promise.reject(new StoreUnavailableError(this.#failed ?? new Error('closed')));
    return new Promise((resolve, reject) => {
      // The worker answers each op with the result of its kind (plantWriter).
      this.#queue.push({ op, resolve: resolve as (value: WriteResult) => void, reject });
      if (!this.#scheduled && !this.#inFlight) {
        this.#scheduled = true;
        setImmediate(() => this.#send());
      }
    });
  }

  /** Commits what is queued, then stops the thread. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      while (this.#inFlight || this.#queue.length > 0) await new Promise<void>((r) => (this.#drained = r));
      const worker = this.#worker;
      if (worker && !this.#failed) {
        const exited = new Promise((r) => worker.once('exit', r));
        worker.postMessage('close');
        await exited;
      }
    })();
    return this.#closed;
  }

  #send(): void {
    this.#scheduled = false;
    if (this.#inFlight || this.#queue.length === 0) return;
    if (this.#queue.length < Math.min(MIN_BATCH, this.#lastBatch) && this.#waited < MAX_WAIT_TURNS) {
      this.#waited++;
      this.#scheduled = true;
      setImmediate(() => this.#send());
      return;
    }
    this.#waited = 0;
    this.#lastBatch = this.#queue.length;
    this.#inFlight = this.#queue;
    this.#queue = [];
    this.#worker ??= this.#start();
    if (metricsOn) this.#sentAt = performance.now();
    this.#worker.postMessage(this.#inFlight.map((p) => p.op));
  }

  #settle(outcomes: NonNullable<Report['outcomes']>, foreign: boolean): void {
    const batch = this.#inFlight ?? [];
    this.#inFlight = undefined;
    if (metricsOn) {
      this.#commitSeries.observe((performance.now() - this.#sentAt) / 1000);
      this.#batchSeries.observe(batch.length);
    }
    // Before anyone is answered, so no list served after an answer predates its write.
    this.changes.committed(
      batch.filter((_, i) => outcomes[i]?.ok).map((p) => p.op.owner),
      foreign,
    );
    outcomes.forEach((o, i) => {
      const p = batch[i]!;
      if (o.ok) p.resolve(o.value);
      else if (o.error.code && BUSY.has(o.error.code))
        p.reject(new StoreUnavailableError(new SqliteWriteError(o.error.message, o.error.code)));
      else p.reject(new SqliteWriteError(o.error.message, o.error.code));
    });
    this.#send();
    if (!this.#inFlight && this.#queue.length === 0) this.#drained?.();
  }

  #fail(error: Error): void {
    if (this.#failed || (this.#closed && !this.#inFlight && this.#queue.length === 0)) return;
    this.#failed = error;
    const lost = [...(this.#inFlight ?? []), ...this.#queue];
    this.#inFlight = undefined;
    this.#queue = [];
    for (const p of lost) p.reject(new StoreUnavailableError(error));
    this.#drained?.();
  }
}
