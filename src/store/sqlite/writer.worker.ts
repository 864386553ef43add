// The SQLite writer thread. COMMIT waits for fsync; running it here lets the
// main thread keep parsing and answering requests meanwhile, and the writes
// that arrive during one fsync form the next group commit.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite, type SqliteOptions } from './db-connect.sqlite.js';
import { GroupCommit, type Settled } from './group-commit.js';
import { plantWriter, type WriteFailure, type WriteOp, type WriteResult } from './plant-writes.sqlite.js';

export type Outcome = Settled<WriteResult, WriteFailure>;

/**
 * The answer to a batch (its outcomes) or to a probe. foreign: a connection
 * other than this thread's committed since the last report. This connection's
 * data_version changes only for those, so the main thread can tell its own
 * writes from everyone else's (change-epoch.ts). The first report says true:
 * what happened before this thread started is unknown.
 */
export interface Report {
  outcomes?: Outcome[];
  foreign: boolean;
}

const db = openSqlite(workerData as SqliteOptions);
const writes = new GroupCommit(db);
const write = plantWriter(db);
const dataVersion = db.prepare('PRAGMA data_version').pluck();
let seen: unknown;

function foreign(): boolean {
  const version = dataVersion.get();
  const changed = version !== seen;
  seen = version;
  return changed;
}

parentPort!.on('message', (ops: WriteOp[] | 'close' | 'probe') => {
  if (ops === 'close') {
    db.close();
    parentPort!.close();
    return;
  }
  if (ops === 'probe') {
    parentPort!.postMessage({ foreign: foreign() } satisfies Report);
    return;
  }
  const outcomes: Outcome[] = writes.commitNow(ops.map((op) => () => write(op))).map((s) =>
    s.ok
      ? { ok: true, value: s.value }
      : {
          ok: false,
          error: {
            message: String((s.error as Error)?.message ?? s.error),
            code: (s.error as { code?: string })?.code,
          },
        },
  );
  parentPort!.postMessage({ outcomes, foreign: foreign() } satisfies Report);
});
