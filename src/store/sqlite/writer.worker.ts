// The SQLite writer thread. COMMIT waits for fsync; running it here lets the
// main thread keep parsing and answering requests meanwhile, and the writes
// that arrive during one fsync form the next group commit.
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite, type SqliteOptions } from './db-connect.sqlite.js';
import { GroupCommit } from './group-commit.js';
import { plantWriter, type WriteOp, type WriteResult } from './plant-writes.sqlite.js';

export type Outcome = { ok: true; value: WriteResult } | { ok: false; message: string; code: string | undefined };

const db = openSqlite(workerData as SqliteOptions);
const writes = new GroupCommit(db);
const write = plantWriter(db);

parentPort!.on('message', async (ops: WriteOp[] | 'close') => {
  if (ops === 'close') {
    await writes.drain();
    db.close();
    parentPort!.close();
    return;
  }
  const settled = await Promise.allSettled(ops.map((op) => writes.run(() => write(op))));
  const outcomes: Outcome[] = settled.map((s) =>
    s.status === 'fulfilled'
      ? { ok: true, value: s.value }
      : { ok: false, message: String((s.reason as Error)?.message ?? s.reason), code: (s.reason as { code?: string })?.code },
  );
  parentPort!.postMessage(outcomes);
});
