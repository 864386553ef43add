// VACUUM INTO copies a consistent snapshot in one read transaction, however
// many writes the server commits meanwhile; it runs here so that the main
// thread stays free to report progress.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { from, to } = workerData as { from: string; to: string };
const db = new Database(from, { readonly: true, fileMustExist: true });
try {
  db.pragma('busy_timeout = 10000');
  db.prepare('VACUUM INTO ?').run(to);
} finally {
  db.close();
}
parentPort!.postMessage('done');
