import { accessSync, chmodSync, closeSync, constants, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';

import type { SqliteConfig } from '../../config.js';
import { operation, type Operation } from '../operation.js';
import { leaveMarker, refuseToStartOver, StoreFileMissingError } from './store-file.js';

/** What a connection needs: the file and its durability. */
export interface SqliteOptions extends Pick<SqliteConfig, 'path' | 'durability'> {
  /** Fail instead of creating the file (and its folder) when it does not exist. */
  mustExist?: boolean;
}

/** A write transaction, for the writer thread's group commits and the migrator. */
export const TRANSACTION_SQL = {
  // Locks: BEGIN IMMEDIATE takes SQLite's write lock at once (waiting up to
  // busy_timeout while another connection holds it), not at the first write:
  // a transaction that read first and then had to wait for the lock would
  // fail with SQLITE_BUSY instead of waiting. It is held to COMMIT or
  // ROLLBACK, so no other connection writes between a write's check and the
  // write it guards.
  begin: operation<[]>('begin_immediate', 'BEGIN IMMEDIATE'),
  commit: operation<[]>('commit', 'COMMIT'),
  rollback: operation<[]>('rollback', 'ROLLBACK'),
};

/** The statements on a connection itself rather than on a table, for every file that needs one. */
export const CONNECTION_SQL = {
  // Locks: none; it reads no table. Whether the connection answers at all (readiness).
  ping: operation<[], number>('ping', 'SELECT 1', { rowMode: 'value' }),
  // Locks: none; it reads the WAL index. This connection's counter, which
  // changes with every commit of another connection and never with its own
  // (https://sqlite.org/pragma.html#pragma_data_version): how a process tells
  // other processes' writes from its own.
  dataVersion: operation<[], number>('data_version', 'PRAGMA data_version', { rowMode: 'value' }),
  // Locks: PASSIVE copies the pages no reader still needs back into the
  // database file and waits for neither readers nor the writer; it holds only
  // the checkpoint lock, for as long as it runs.
  checkpoint: operation<[]>('wal_checkpoint', 'PRAGMA wal_checkpoint(PASSIVE)'),
};

// All connection setup for the SQLite store lives here, so every connection
// (the server's, the CLI's, the migrator's) gets the same pragmas.
export function openSqlite({ path, durability, mustExist = false }: SqliteOptions): Database.Database {
  if (mustExist && !existsSync(path)) throw new StoreFileMissingError(`no database at ${path}`);
  if (!mustExist) refuseToStartOver(path);
  makeFolder(dirname(resolve(path)), path);
  if (!mustExist) createPrivately(path);
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: mustExist });
  } catch (error) {
    throw new Error(`cannot use ${path} as the SQLite database: ${(error as Error).message}`, { cause: error });
  }
  if (!mustExist) leaveMarker(path);
  try {
    applyPragmas(db, durability);
  } catch (error) {
    // The first pragma is the first read of the file: a file that is no SQLite
    // database fails here, and nothing else would close its handle.
    db.close();
    // SQLite's own words ("file is not a database") name no file.
    throw new Error(`cannot use ${path} as the SQLite database: ${(error as Error).message}`, { cause: error });
  }
  return db;
}

function applyPragmas(db: Database.Database, durability: SqliteOptions['durability']): void {
  // WAL lets readers run while a writer commits, and makes a commit a single
  // append to the log.
  db.pragma('journal_mode = WAL');
  // FULL fsyncs the log on every commit (durable against power loss);
  // NORMAL fsyncs only at checkpoints (durable against a crash of this process).
  db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  // Other processes on the same file (workers, the CLI) wait for the write
  // lock instead of failing with SQLITE_BUSY.
  db.pragma('busy_timeout = 10000');
  db.pragma('foreign_keys = ON');
  db.pragma('temp_store = MEMORY');
  db.pragma('cache_size = -65536');
  db.pragma(`wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  // No mmap (SQLite's default): after another connection's commit (our own
  // writer thread's, every group commit) a read through the map pays page
  // faults again. A list page cost 45 µs with mmap against 27 µs without
  // while another connection committed every tenth read; mmap saved a tenth
  // only while nothing was written.
}

/**
 * Pages the log may hold before a commit on this connection copies them back
 * into the database file (SQLite's default is 1000). The writer thread's
 * connection, which makes nearly every commit, leaves the copies to the
 * checkpoint thread and only sets a far higher bound (WAL_BEHIND_PAGES,
 * writer.worker.ts); this one is for the other connections' rare writes. A
 * checkpoint copies each page once however many commits wrote it, and creates
 * of many owners each write index pages of their own owner: with 1000,
 * checkpoints took a fifth of the writer thread's time in the bench's
 * 300-owner mix, and 4000 (16 MB of log with 4 kB pages) served about 13 %
 * more requests there.
 */
export const WAL_CHECKPOINT_PAGES = 4000;

/** The mode of store files and backups, and of the folders created for them. */
export const PRIVATE_FILE = 0o600;
export const PRIVATE_FOLDER = 0o700;

/**
 * The store holds token hashes, the cursor key and every plant: its file is
 * created readable by its owner only (0600) whatever the umask, and SQLite
 * gives its WAL and shared-memory files the database file's mode. A file an
 * older version left group- or world-readable is narrowed to 0600 too.
 */
export function createPrivately(path: string): void {
  try {
    closeSync(openSync(path, 'wx', PRIVATE_FILE));
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return; // new Database() says what is wrong
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, PRIVATE_FILE);
    } catch {
      // Missing, or not ours to change: the store still works as before.
    }
  }
}

/**
 * Creates the folder of a database file level by level, naming the level that
 * fails. Not mkdirSync(recursive): on Node 20 it loops forever when a parent
 * exists but refuses new entries (/proc/foo/x.db).
 */
function makeFolder(folder: string, file: string): void {
  const missing: string[] = [];
  let at = folder;
  while (!existsSync(at)) {
    missing.unshift(at);
    const parent = dirname(at);
    if (parent === at) break;
    at = parent;
  }
  const fail = (what: string, error?: unknown): never => {
    const why = (error as { code?: string } | undefined)?.code;
    throw new Error(`cannot use ${file} as the SQLite database: ${what}${why ? ` (${why})` : ''}`, { cause: error });
  };
  if (!statSync(at).isDirectory()) fail(`${at} is not a folder`);
  for (const dir of missing) {
    try {
      mkdirSync(dir, { mode: PRIVATE_FOLDER });
    } catch (error) {
      fail(`cannot create the folder ${dir}`, error);
    }
  }
  try {
    accessSync(folder, constants.W_OK);
  } catch (error) {
    fail(`the folder ${folder} is not writable`, error);
  }
}

type Operations = Record<string, Operation<readonly unknown[], unknown>>;

/** The statements of a set of operations, under the same names. */
export type Prepared<Ops extends Operations> = {
  readonly [K in keyof Ops]: Ops[K] extends Operation<infer P, infer R> ? Database.Statement<P & unknown[], R> : never;
};

/** The statements of `ops`, each prepared once on `db`, under the same names; typed by the operations. */
export function prepareAll<Ops extends Operations>(db: Database.Database, ops: Ops): Prepared<Ops> {
  const prepared: Record<string, Database.Statement> = {};
  for (const [key, op] of Object.entries(ops)) {
    const statement = db.prepare(op.text);
    if (op.rowMode === 'array') statement.raw(true);
    else if (op.rowMode === 'value') statement.pluck(true);
    if (op.bigints) statement.safeIntegers(true);
    prepared[key] = statement;
  }
  return prepared as never;
}
