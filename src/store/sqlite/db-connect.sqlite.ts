import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

import type { SqliteConfig } from '../../config.js';

export interface SqliteOptions extends SqliteConfig {
  /** Fail instead of creating the file (and its folder) when it does not exist. */
  mustExist?: boolean;
}

// All connection setup for the SQLite store lives here, so every connection
// (the server's, the CLI's, the migrator's) gets the same pragmas.
export function openSqlite({ path, durability, mustExist = false }: SqliteOptions): Database.Database {
  if (mustExist && !existsSync(path)) throw new Error(`no database at ${path}`);
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
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
  db.pragma('mmap_size = 268435456');
  return db;
}
