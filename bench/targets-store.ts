// The databases the service runs on during a bench run. Each scenario gets a
// store holding exactly its preload, filled before the server starts.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from './options.js';
import { backendPids, type BenchDatabase } from './postgres.js';
import { preloadSqlite } from './preload.js';

export interface StoreTarget {
  kind: Backend;
  /** A store holding `rows` bench plants; returns the service's --db value and a token for them. */
  prepare(label: string, rows: number): Promise<{ db: string; token: string }>;
  release(db: string): void;
  /** Local processes doing the database's work for the service (PostgreSQL backends); none for SQLite, which runs inside the service. */
  databasePids(db: string): Promise<number[]>;
}

export function sqliteTarget(dir: string, durability: 'full' | 'normal', keep: boolean): StoreTarget {
  let n = 0;
  return {
    kind: 'sqlite',
    async prepare(label, rows) {
      const path = join(dir, `${String(++n).padStart(2, '0')}-${label}.db`);
      return { db: path, token: await preloadSqlite(path, durability, rows, `preload ${label}`) };
    },
    databasePids: async () => [],
    release(db) {
      if (keep) return;
      for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
    },
  };
}

export function postgresTarget(database: BenchDatabase, token: string): StoreTarget {
  return {
    kind: 'postgres',
    async prepare(label, rows) {
      await database.reset(rows, `preload ${label} (pg)`);
      return { db: database.url, token };
    },
    release() {},
    // Not fatal: a remote server's backends are simply not on this machine.
    databasePids: (db) => backendPids(db).catch(() => []),
  };
}
