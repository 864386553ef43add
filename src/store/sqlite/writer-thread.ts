import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { dbCommitDuration, metricsOn, sqliteBatchSize } from '../../metrics/metrics.js';
import { DB_OPERATION_NAME, DB_SYSTEM_NAME } from '../../tracing/attributes.js';
import { tracing } from '../../tracing/tracing.js';
import { Batcher } from '../batcher.js';
import { StoreUnavailableError } from '../store.js';
import type { ChangeEpoch, WriterProbe, WrittenOwner } from './change-epoch.js';
import { writtenOwner } from './plant-writes.sqlite.js';
import { STORE_FILE_GONE, cannotWrite, isBusy } from './errors.sqlite.js';
import type { WriteFailure, WriteOp, WriteResult, WriteResults } from './write-kinds.js';
import type { Outcome, WriterData, WriterOptions, WriterReply, WriterRequest } from './writer.worker.js';

interface Pending {
  op: WriteOp;
  resolve: (value: WriteResult) => void;
  reject: (error: unknown) => void;
}

/**
 * A write the database refused. On its own (a constraint) it is answered as
 * 500; as the cause of a StoreUnavailableError (disk full, read-only, the
 * file gone, busy) as 503.
 */
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

/** Retry-After of a write refused because the store cannot take writes for now (disk full, read-only). */
const RETRY_AFTER_SECONDS = 5;
// A thread that died is started again with the next write, but not sooner than this.
const RESTART_AFTER_MS = 1000;
// A commit costs far more than an insert (the WAL write and its fsync), so a
// small batch waits a few turns of the event loop for more writes to join it:
// until it is as large as the last batch (at most MIN_BATCH), or MAX_WAIT_MS
// have passed (the Batcher's `gather`), each turn a poll for new requests.
// Under a stream of writes this fills batches; when writes are a few among
// many reads, a turn of the event loop is long and brings few writes, so the
// time bound sends the batch after one turn instead of holding a write for
// company that does not come.
const MIN_BATCH = 32;
const MAX_WAIT_MS = 2;
// Probes (readiness after a failed write) commit a row each: at most one per this long.
const PROBE_EVERY_MS = 100;

/**
 * The main thread's side of the writer thread: writes queue up while one
 * batch is being committed, and go as the next batch as soon as it is done.
 * A caller is answered only when the batch holding its write has committed.
 */
export class WriterThread implements WriterProbe {
  #worker: Worker | undefined;
  // One batch at a time: the thread has one connection, and a batch is one transaction.
  readonly #batcher = new Batcher<Pending>((batch) => this.#send(batch), {
    maxItems: Infinity,
    maxInFlight: 1,
    gather: { items: MIN_BATCH, ms: MAX_WAIT_MS },
    nextAtOnce: true,
  });
  /** The batch the thread is committing, and the end of its Batcher run. */
  #inFlight: { batch: Pending[]; done: () => void } | undefined;
  #probes: ((reply: Extract<WriterReply, { probe: unknown }>['probe']) => void)[] = [];
  /** The last probe, reused by the checks that come while it runs, and for a while after it failed. */
  #probing: { outcome: Promise<void>; at: number } | undefined;
  /** The thread's replies, read by the 'message' event or, sooner, by poll(). */
  #replies: MessagePort | undefined;
  /** Questions about other connections' commits (checkForeign) not answered yet. */
  #foreignAsked = 0;
  /** Why the last write failed for a reason that was not its own; cleared by the next success. */
  #failing: WriteFailure | undefined;
  /** The store file was deleted or replaced: no write will succeed until a restart. */
  #gone: WriteFailure | undefined;
  /** Why the thread died, and when; it is started again after RESTART_AFTER_MS. */
  #died: { error: Error; at: number } | undefined;
  #closed: Promise<void> | undefined;
  /** When the batch in flight was handed to the thread (performance.now()), for the commit-time metric. */
  #sentAt = 0;
  readonly #commitSeries = dbCommitDuration.series('sqlite');
  readonly #batchSeries = sqliteBatchSize.series();

  /** The thread starts with the first write, so read-only users (the CLI) never pay for it. */
  constructor(
    private readonly options: WriterOptions,
    private readonly changes: CommitListener,
  ) {
    changes.follow(this);
  }

  get busy(): boolean {
    return this.#inFlight !== undefined;
  }

  get awaitingForeign(): boolean {
    return this.#foreignAsked > 0;
  }

  // Never waits for the answer: this thread serves requests meanwhile, and
  // every store call polls for it (poll()), so it is taken within one
  // request's time of its arrival.
  checkForeign(): boolean {
    if (!this.#worker || this.#closed) return false;
    this.#foreignAsked++;
    this.#worker.postMessage('foreign' satisfies WriterRequest);
    return true;
  }

  /** Why writes cannot succeed now, as far as this thread knows (readiness). */
  get problem(): WriteFailure | undefined {
    return this.#gone ?? this.#failing ?? (this.#died && { message: this.#died.error.message, code: undefined });
  }

  /**
   * Takes the thread's replies that have arrived, now. A reply otherwise
   * waits for the next turn of the event loop, which under load is long:
   * every store call polls, so a committed batch is answered (and the next
   * one sent) within one request's time of its commit.
   */
  poll(): void {
    const port = this.#replies;
    if (port === undefined) return;
    for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
      this.#reply(m.message as WriterReply);
    }
  }

  #reply(reply: WriterReply): void {
    if ('outcomes' in reply) this.#settle(reply.outcomes, reply.foreign);
    else if ('probe' in reply) this.#probes.shift()?.(reply.probe);
    else {
      this.#foreignAsked--;
      this.changes.probed(reply.foreign);
    }
  }

  #start(): Worker {
    const { port1, port2 } = new MessageChannel();
    const workerData: WriterData = { ...this.options, replies: port2 };
    const worker = new Worker(new URL('./writer.worker.js', import.meta.url), { workerData, transferList: [port2] });
    this.#replies?.close();
    this.#replies = port1;
    port1.on('message', (reply: WriterReply) => this.#reply(reply));
    // The worker keeps the process alive while it runs; its reply port need not.
    port1.unref();
    worker.on('error', (error) => this.#fail(worker, error));
    worker.on('exit', () => this.#fail(worker, new Error('the SQLite writer thread stopped')));
    return worker;
  }

  #post(request: WriterRequest): void {
    if (this.#worker === undefined) {
      this.#died = undefined;
      this.#worker = this.#start();
    }
    this.#worker.postMessage(request);
  }

  /** Why a write is refused before it reaches the thread, if it is. */
  #refusal(): StoreUnavailableError | undefined {
    if (this.#closed) return new StoreUnavailableError(new Error('the SQLite store is closed'));
    if (this.#gone) return new StoreUnavailableError(new SqliteWriteError(this.#gone.message, this.#gone.code));
    if (this.#died && performance.now() - this.#died.at < RESTART_AFTER_MS)
      return new StoreUnavailableError(this.#died.error, 1);
    return undefined;
  }

  run<Op extends WriteOp>(op: Op): Promise<WriteResults[Op['kind']]> {
    const traces = tracing();
    if (traces === undefined) return this.#run(op);
    // Timed here, around the round trip: the commit it waits for is the writer thread's, shared with other writes.
    return traces.child(
      `sqlite ${op.kind}`,
      'internal',
      { [DB_SYSTEM_NAME]: 'sqlite', [DB_OPERATION_NAME]: op.kind },
      () => this.#run(op),
    );
  }

  #run<Op extends WriteOp>(op: Op): Promise<WriteResults[Op['kind']]> {
    const refusal = this.#refusal();
    if (refusal) return Promise.reject(refusal);
    this.poll();
    return new Promise((resolve, reject) => {
      // The worker answers each op with the result of its kind (write-kinds.ts).
      this.#batcher.add({ op, resolve: resolve as (value: WriteResult) => void, reject });
    });
  }

  /**
   * Resolves once a real write transaction has committed; rejects with why it
   * cannot. Readiness checks come from anyone: they share the probe in
   * flight, and one that failed answers for PROBE_EVERY_MS.
   */
  probe(): Promise<void> {
    const refusal = this.#refusal();
    if (refusal) return Promise.reject(refusal);
    if (this.#probing && performance.now() - this.#probing.at < PROBE_EVERY_MS) return this.#probing.outcome;
    const outcome = this.#probeNow();
    this.#probing = { outcome, at: performance.now() };
    // A probe that succeeded is not reused: the next check sees the writes' own state.
    outcome.then(
      () => (this.#probing = undefined),
      () => {},
    );
    return outcome;
  }

  #probeNow(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#probes.push((outcome) => {
        if (outcome.ok) {
          this.#failing = undefined;
          resolve();
        } else {
          this.#noteFailure(outcome.error);
          reject(this.#error(outcome.error));
        }
      });
      this.#post('probe');
    });
  }

  /** Commits what is queued, then stops the thread. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.#batcher.idle();
      const worker = this.#worker;
      if (worker) {
        const exited = new Promise((r) => worker.once('exit', r));
        worker.postMessage('close');
        await exited;
      }
    })();
    return this.#closed;
  }

  #send(batch: Pending[]): Promise<void> {
    return new Promise((done) => {
      this.#inFlight = { batch, done };
      if (metricsOn) this.#sentAt = performance.now();
      this.#post(batch.map((p) => p.op));
    });
  }

  #noteFailure(failure: WriteFailure): void {
    if (failure.code === STORE_FILE_GONE) this.#gone ??= failure;
    else if (cannotWrite(failure.code)) this.#failing = failure;
  }

  #error(failure: WriteFailure): Error {
    const error = new SqliteWriteError(failure.message, failure.code);
    if (failure.code === STORE_FILE_GONE) return new StoreUnavailableError(error);
    if (cannotWrite(failure.code)) return new StoreUnavailableError(error, RETRY_AFTER_SECONDS);
    if (isBusy(failure)) return new StoreUnavailableError(error);
    return error;
  }

  #settle(outcomes: Outcome[], foreign: boolean): void {
    const { batch, done } = this.#inFlight ?? { batch: [], done: () => {} };
    this.#inFlight = undefined;
    if (metricsOn) {
      this.#commitSeries.observe((performance.now() - this.#sentAt) / 1000);
      this.#batchSeries.observe(batch.length);
    }
    if (outcomes.some((o) => o.ok)) this.#failing = undefined;
    // Before anyone is answered, so no list served after an answer predates its write.
    const written: WrittenOwner[] = [];
    outcomes.forEach((o, i) => {
      const owner = o.ok ? writtenOwner(batch[i]!.op, o.value) : undefined;
      if (owner !== undefined) written.push(owner);
    });
    this.changes.committed(written, foreign);
    outcomes.forEach((o, i) => {
      const p = batch[i]!;
      if (o.ok) return p.resolve(o.value);
      this.#noteFailure(o.error);
      p.reject(this.#error(o.error));
    });
    done();
  }

  // The thread died (an uncaught error, or killed): what it held fails as
  // unavailable (it may or may not have committed), and the next write
  // starts a new thread.
  #fail(worker: Worker, error: Error): void {
    if (this.#worker !== worker) return;
    this.#worker = undefined;
    const inFlight = this.#inFlight;
    this.#inFlight = undefined;
    const lost = [...(inFlight?.batch ?? []), ...this.#batcher.takeQueued()];
    inFlight?.done();
    const probes = this.#probes.splice(0);
    // Questions the dead thread will not answer: assume another connection committed.
    for (; this.#foreignAsked > 0; this.#foreignAsked--) this.changes.probed(true);
    if (this.#closed && lost.length === 0 && probes.length === 0) return;
    this.#died = { error, at: performance.now() };
    for (const p of lost) p.reject(new StoreUnavailableError(error, 1));
    for (const p of probes) p({ ok: false, error: { message: error.message, code: undefined } });
  }
}
