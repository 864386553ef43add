// The SQLite checkpoint thread: it copies what the write-ahead log holds back
// into the database file on a connection of its own, so that no commit of the
// writer thread (and no answer waiting for one) carries the copy and the
// fsync of the database file. See docs/explanation/durability.md.
//
// A PASSIVE checkpoint takes no lock a writer needs: the writer thread keeps
// appending to the log while frames already committed are copied, and
// SQLite's own rules make it safe at any moment: a frame is copied only once
// its commit is in the log, the log is fsynced before the copy and the
// database file after it (this connection is synchronous=FULL too), and the
// writer starts the log over only once every frame has been copied and
// synced. Should this thread fall behind or stop, the writer connection
// checkpoints its own commits past WAL_BEHIND_PAGES (writer.worker.ts).
import { parentPort, workerData } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import { CONNECTION_SQL, openSqlite, prepareAll, type SqliteOptions } from './db-connect.sqlite.js';

/** The writer thread's message: it committed ('commit'), or it is closing ('close'). */
export type CheckpointerRequest = 'commit' | 'close';

/**
 * How long after a checkpoint the next may start. A checkpoint copies each
 * page once however many commits wrote it since the last one, and fsyncs the
 * log and the database file: every 10 ms cost about a fifth more CPU per
 * request in the bench's 300-owner mix (the same hot index pages copied again
 * and again), every 250 ms about what checkpoints inside commits cost.
 */
export const CHECKPOINT_EVERY_MS = 250;

const options = workerData as SqliteOptions;
let db: Database.Database | undefined;
let checkpoint: Database.Statement | undefined;
let timer: NodeJS.Timeout | undefined;
let last = 0;

function run(): void {
  timer = undefined;
  last = performance.now();
  try {
    db ??= openSqlite({ ...options, mustExist: true });
    checkpoint ??= prepareAll(db, { checkpoint: CONNECTION_SQL.checkpoint }).checkpoint;
    checkpoint.run();
  } catch {
    // Busy, or the file cannot be read now: the next commit asks again, and
    // the writer checkpoints by itself past its bound meanwhile.
    try {
      db?.close();
    } catch {
      // Being replaced anyway.
    }
    db = undefined;
    checkpoint = undefined;
  }
}

parentPort!.on('message', (request: CheckpointerRequest) => {
  if (request === 'close') {
    clearTimeout(timer);
    db?.close();
    parentPort!.close();
    return;
  }
  // Commits that come while one is scheduled are copied by it.
  timer ??= setTimeout(run, Math.max(0, last + CHECKPOINT_EVERY_MS - performance.now()));
});
