import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { StoreUnavailableError } from '../../app/errors.js';
import { migrateToLatest, type MigrationReport } from '../migrate.js';
import type { Store } from '../store.js';
import { openSqlite, type SqliteOptions } from './db-connect.sqlite.js';
import { GroupCommit } from './group-commit.js';
import { sqliteMigrations } from './migrations.sqlite.js';
import { SqlitePlantStore } from './plants-store.sqlite.js';
import { SqliteTokenStore } from './tokens-store.sqlite.js';

export async function migrateSqlite(options: SqliteOptions): Promise<MigrationReport> {
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: openSqlite(options) }) });
  try {
    return await migrateToLatest(db, sqliteMigrations);
  } finally {
    await db.destroy();
  }
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly plants: SqlitePlantStore;
  readonly tokens: SqliteTokenStore;
  readonly #writes: GroupCommit;
  readonly #ping: Database.Statement;

  constructor(private readonly db: Database.Database) {
    this.#writes = new GroupCommit(db);
    this.plants = new SqlitePlantStore(db, this.#writes);
    this.tokens = new SqliteTokenStore(db);
    this.#ping = db.prepare('SELECT 1');
  }

  async ping(): Promise<void> {
    try {
      this.#ping.get();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
  }

  async close(): Promise<void> {
    await this.#writes.drain();
    if (this.db.open) this.db.close();
  }
}

export async function openSqliteStore(options: SqliteOptions & { migrate?: boolean }): Promise<SqliteStore> {
  if (options.migrate !== false) await migrateSqlite(options);
  return new SqliteStore(openSqlite(options));
}
