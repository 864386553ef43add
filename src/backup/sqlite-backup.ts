import { closeSync, copyFileSync, existsSync, fsyncSync, openSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';

export class BackupError extends Error {
  override name = 'BackupError';
}

const TABLES = ['plants', 'tokens'];

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The bytes of a store: its file and its write-ahead log, which may hold most recent writes. */
function storeBytes(path: string): number {
  const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
  return size(path) + size(`${path}-wal`);
}

/**
 * Copies the SQLite store at `from` to a new file `to`, consistent as of the
 * moment the copy starts, while servers keep writing. `onProgress` gets the
 * bytes written so far and the store's size (an upper bound) about once a second.
 */
export async function backupSqlite(
  from: string,
  to: string,
  onProgress: (written: number, total: number) => void = () => {},
): Promise<void> {
  if (!existsSync(from)) throw new BackupError(`no SQLite store at ${from}`);
  if (existsSync(to)) throw new BackupError(`${to} exists already; choose a new file for the backup`);
  const partial = `${to}.partial`;
  rmSync(partial, { force: true });
  const total = storeBytes(from);
  const worker = new Worker(new URL('./vacuum-into.worker.js', import.meta.url), {
    workerData: { from, to: partial },
  });
  const timer = setInterval(() => {
    if (existsSync(partial)) onProgress(statSync(partial).size, total);
  }, 1000);
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
      worker.once('exit', (code) => (code === 0 ? resolve() : reject(new BackupError(`backup stopped (${code})`))));
    });
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    clearInterval(timer);
  }
  onProgress(statSync(partial).size, total);
  fsyncPath(partial);
  renameSync(partial, to);
  fsyncPath(dirname(to));
}

/** Why `path` is not a usable Plant Store backup, or undefined when it is. */
export function checkBackup(path: string): string | undefined {
  if (!existsSync(path)) return `no file at ${path}`;
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    return `${path} is not a SQLite database (${(error as Error).message})`;
  }
  try {
    const check = db.pragma('integrity_check', { simple: true });
    if (check !== 'ok') return `${path} is damaged: ${String(check)}`;
    const tables = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => r.name),
    );
    const missing = TABLES.filter((t) => !tables.has(t));
    if (missing.length > 0) return `${path} is not a Plant Store backup (no ${missing.join(' or ')} table)`;
    return undefined;
  } catch (error) {
    return `${path} cannot be read: ${(error as Error).message}`;
  } finally {
    db.close();
  }
}

/** True when another connection (a server, a CLI) has the store open. */
function inUse(path: string): boolean {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 0');
    // Every connection to a WAL database holds a shared lock on it while
    // open, so an exclusive lock is granted only when nobody else is there.
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('COMMIT');
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
    throw error;
  } finally {
    db.close();
  }
}

function isEmpty(path: string): boolean {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => r.name),
    );
    return TABLES.every((t) => !tables.has(t) || db.prepare(`SELECT 1 FROM ${t} LIMIT 1`).get() === undefined);
  } finally {
    db.close();
  }
}

/**
 * Replaces the store at `to` with the backup `from`: the backup is checked
 * first, a store in use is never replaced, and one that holds plants or
 * tokens only with `force`. The swap is a rename, so a crash leaves either
 * the old store or the restored one.
 */
export function restoreSqlite(from: string, to: string, { force }: { force: boolean }): void {
  const problem = checkBackup(from);
  if (problem) throw new BackupError(problem);
  if (existsSync(to)) {
    if (inUse(to)) throw new BackupError(`${to} is in use by a running server or command; stop it first`);
    if (!force && !isEmpty(to)) throw new BackupError(`${to} holds plants or tokens; add --force to replace them`);
  }
  const partial = `${to}.restoring`;
  copyFileSync(from, partial);
  fsyncPath(partial);
  for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${to}${suffix}`, { force: true });
  renameSync(partial, to);
  fsyncPath(dirname(to));
}
