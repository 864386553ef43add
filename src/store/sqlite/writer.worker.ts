// The SQLite writer thread. COMMIT waits for fsync; running it here lets the
// main thread keep parsing and answering requests meanwhile, and the writes
// that arrive during one fsync form the next group commit.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite, type SqliteOptions } from './db-connect.sqlite.js';
import { GroupCommit, type Settled } from './group-commit.js';
import { outboxWriter } from './outbox-writes.sqlite.js';
import { plantWriter, type WriteFailure, type WriteOp, type WriteResult } from './plant-writes.sqlite.js';

export type Outcome = Settled<WriteResult, WriteFailure>;

const db = openSqlite(workerData as SqliteOptions);
const writes = new GroupCommit(db);
const plants = plantWriter(db);
const outbox = outboxWriter(db);
const write = (op: WriteOp): WriteResult => (op.kind === 'create' || op.kind === 'delete' ? plants(op) : outbox(op));

parentPort!.on('message', (ops: WriteOp[] | 'close') => {
  if (ops === 'close') {
    db.close();
    parentPort!.close();
    return;
  }
  plants.newBatch();
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
  parentPort!.postMessage(outcomes);
});
