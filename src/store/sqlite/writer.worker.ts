// The SQLite writer thread. COMMIT waits for fsync; running it here lets the
// main thread keep parsing and answering requests meanwhile, and the writes
// that arrive during one fsync form the next group commit.
//
// Three other shapes were measured with the service on one core, and none was
// better. Committing on the main thread saves the thread switches, but every
// fsync then stalls every request: `owners` (90 % lists) ran about a third
// slower. Committing with synchronous=NORMAL and fsyncing the WAL off this
// thread before answering, so that the next batch could commit during the
// fsync, was no faster for `create`: its clients all wait on the same fsync
// anyway. With smaller batches to overlap it cost more CPU per create.
// Committing on the main thread with synchronous=NORMAL and only the WAL's
// fsync on another thread was neither faster nor shorter-tailed in `owners`
// (README, Performance), and it shows a write before its fsync.
import { Worker, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { CheckpointerRequest } from './checkpointer.worker.js';
import { operation } from '../operation.js';
import { CONNECTION_SQL, openSqlite, prepareAll, type Prepared, type SqliteOptions } from './db-connect.sqlite.js';
import { GroupCommit, type Settled } from './group-commit.js';
import { storeFileProblem, type FileIdentity } from './store-file.js';
import { STORE_FILE_GONE, cannotWrite } from './errors.sqlite.js';
import { writer, type WriteFailure, type WriteOp, type WriteResult } from './write-kinds.js';

export type Outcome = Settled<WriteResult, WriteFailure>;

export interface WriterOptions extends SqliteOptions {
  /** The store file the server opened: a write into any other file (or none) is refused. */
  opened: FileIdentity;
}

/** What the thread is started with: its options, and the port its replies go to (WriterThread.poll reads it). */
export interface WriterData extends WriterOptions {
  replies: MessagePort;
}

/**
 * A batch of writes, a write probe (readiness), a question whether another
 * connection committed (list page reuse, change-epoch.ts), or the end.
 */
export type WriterRequest = WriteOp[] | 'probe' | 'foreign' | 'close';
/**
 * Each write's outcome, in order; the probe's; or the answer to 'foreign'.
 * foreign: a connection other than this thread's committed since the last
 * answer that carried it. This connection's data_version changes only for
 * those, so the main thread can tell its own writes from everyone else's.
 * Without a connection, or on a new one, the answer is true: what happened
 * meanwhile is unknown.
 */
export type WriterReply =
  { outcomes: Outcome[]; foreign: boolean } | { probe: Settled<true, WriteFailure> } | { foreign: boolean };

// After a failure that is not the write's fault, the next attempt waits:
// 100 ms, doubling up to 2 s. Writes meanwhile fail at once with that failure.
const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 2000;

const SQL = {
  // Commits of other connections since the last look (its locks: CONNECTION_SQL).
  dataVersion: CONNECTION_SQL.dataVersion,
  // Locks: run inside the group commit's BEGIN IMMEDIATE, as a write is. It
  // writes a row that changes every time: SQLite skips writing a row whose
  // content is unchanged, which would not find a full disk.
  probe: operation<[]>(
    'write_probe',
    "INSERT INTO secrets (name, value) VALUES ('write_probe', randomblob(16)) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
  ),
};

interface Connection {
  db: Database.Database;
  writes: GroupCommit;
  write: (op: WriteOp) => WriteResult;
  sql: Prepared<typeof SQL>;
  seen: unknown;
}

/**
 * The log's length past which this connection checkpoints its own commits,
 * as SQLite's automatic checkpoint does: only when the checkpoint thread
 * falls behind (or readers hold the log, so that it cannot be started over).
 * 16,000 pages: about 64 MB of log with 4 kB pages.
 */
export const WAL_BEHIND_PAGES = 16_000;

const options = workerData as WriterData;
let connection: Connection | undefined;
/** The checkpoint thread, started with the first connection; told of every commit. */
let checkpointer: Worker | undefined;
let lastFailure: WriteFailure | undefined;
let backoffMs = 0;
let retryAt = 0;

const failure = (error: unknown): WriteFailure => ({
  message: String((error as Error)?.message ?? error),
  code: (error as { code?: string })?.code,
});

/**
 * The open connection, a new one (lazily: the CLI never starts writing), or
 * why there is none. Writes wait out the backoff; a probe does not (the main
 * thread spaces probes), so that readiness follows the disk at once.
 */
function connect(waitOutBackoff = true): Connection | WriteFailure {
  if (connection) return connection;
  if (waitOutBackoff && lastFailure !== undefined && performance.now() < retryAt) return lastFailure;
  try {
    // mustExist: never create a new, empty file where the store was.
    const db = openSqlite({ ...options, mustExist: true });
    db.pragma(`wal_autocheckpoint = ${WAL_BEHIND_PAGES}`);
    checkpointer ??= startCheckpointer();
    connection = { db, writes: new GroupCommit(db), write: writer(db), sql: prepareAll(db, SQL), seen: undefined };
    return connection;
  } catch (error) {
    return setBack(failure(error));
  }
}

function startCheckpointer(): Worker {
  const { path, durability } = options;
  const worker = new Worker(new URL('./checkpointer.worker.js', import.meta.url), {
    workerData: { path, durability } satisfies SqliteOptions,
  });
  // Should it stop, the writer connection checkpoints by itself past WAL_BEHIND_PAGES; the next connection starts another.
  worker.on('error', () => {});
  worker.on('exit', () => {
    if (checkpointer === worker) checkpointer = undefined;
  });
  return worker;
}

const tellCheckpointer = (request: CheckpointerRequest) => checkpointer?.postMessage(request);

/** Drops the connection after a failure that was not the write's fault, and waits before the next try. */
function setBack(why: WriteFailure): WriteFailure {
  if (connection) {
    try {
      connection.db.close();
    } catch {
      // It is being replaced anyway.
    }
    connection = undefined;
  }
  backoffMs = Math.min(MAX_BACKOFF_MS, Math.max(MIN_BACKOFF_MS, backoffMs * 2));
  retryAt = performance.now() + backoffMs;
  lastFailure = why;
  return why;
}

function recovered(): void {
  lastFailure = undefined;
  backoffMs = 0;
}

// One stat per batch (not per write) sees the file deleted or replaced.
function gone(): WriteFailure | undefined {
  const problem = storeFileProblem(options.path, options.opened);
  return problem === undefined ? undefined : { message: problem, code: STORE_FILE_GONE };
}

function foreign(): boolean {
  if (!connection) return true;
  try {
    const version = connection.sql.dataVersion.get();
    const changed = version !== connection.seen;
    connection.seen = version;
    return changed;
  } catch {
    return true;
  }
}

function commit(ops: WriteOp[]): Outcome[] {
  const c = gone() ?? connect();
  if (!('db' in c)) return ops.map(() => ({ ok: false, error: c }));
  const outcomes: Outcome[] = c.writes
    .commitNow(ops.map((op) => () => c.write(op)))
    .map((s) => (s.ok ? s : { ok: false, error: failure(s.error) }));
  const stuck = outcomes.find((o) => !o.ok && cannotWrite(o.error.code));
  if (stuck && !stuck.ok) setBack(stuck.error);
  else if (outcomes.some((o) => o.ok)) {
    recovered();
    tellCheckpointer('commit');
  }
  return outcomes;
}

function probe(): Settled<true, WriteFailure> {
  const c = gone() ?? connect(false);
  if (!('db' in c)) return { ok: false, error: c };
  const [outcome] = c.writes.commitNow([() => c.sql.probe.run()]);
  if (outcome!.ok) {
    recovered();
    return { ok: true, value: true };
  }
  const why = failure(outcome!.error);
  if (cannotWrite(why.code)) setBack(why);
  return { ok: false, error: why };
}

parentPort!.on('message', (request: WriterRequest) => {
  if (request === 'close') {
    tellCheckpointer('close');
    connection?.db.close();
    options.replies.close();
    parentPort!.close();
    return;
  }
  const reply: WriterReply =
    request === 'probe'
      ? { probe: probe() }
      : request === 'foreign'
        ? { foreign: foreign() }
        : { outcomes: commit(request), foreign: foreign() };
  options.replies.postMessage(reply);
});
