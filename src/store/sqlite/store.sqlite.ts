import type Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest, type MigrationReport } from '../migrate.js';
import { StoreUnavailableError, type Store } from '../store.js';
import { openSqlite, type SqliteOptions } from './db-connect.sqlite.js';
import { ChangeEpoch } from './change-epoch.js';
import { WriterThread } from './writer-thread.js';
import { sqliteMigrations } from './migrations.sqlite.js';
import { SqlitePlantStore } from './plants-store.sqlite.js';
import { SqliteTokenStore } from './tokens-store.sqlite.js';
import { SqliteTransfer } from './transfer.sqlite.js';
import { SqliteOutboxStore, SqliteWebhookStore } from './webhooks-store.sqlite.js';

/**
 * Kysely's SQLite migrator takes no lock across processes, and two servers
 * starting at once on a new file could both create the tables. So the whole
 * migration runs in one BEGIN IMMEDIATE transaction: it holds SQLite's write
 * lock, the others wait on busy_timeout and then find nothing left to do, and
 * a failed migration leaves no half-applied schema. (Kysely runs SQLite
 * migrations without a transaction of its own, so they join this one.)
 */
export async function migrateSqlite(options: SqliteOptions): Promise<MigrationReport> {
  const database = openSqlite(options);
  database.exec('BEGIN IMMEDIATE');
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
  try {
    const report = await migrateToLatest(db, sqliteMigrations);
    database.exec('COMMIT');
    return report;
  } finally {
    if (database.inTransaction) database.exec('ROLLBACK');
    await db.destroy();
  }
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly plants: SqlitePlantStore;
  readonly tokens: SqliteTokenStore;
  readonly transfer: SqliteTransfer;
  readonly webhooks: SqliteWebhookStore;
  readonly outbox: SqliteOutboxStore;
  readonly #writer: WriterThread;
  readonly #ping: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    options: SqliteOptions,
  ) {
    const changes = new ChangeEpoch(db);
    this.#writer = new WriterThread(options, () => changes.bump());
    this.plants = new SqlitePlantStore(db, this.#writer, changes);
    this.tokens = new SqliteTokenStore(db);
    this.transfer = new SqliteTransfer(db);
    this.webhooks = new SqliteWebhookStore(db);
    this.outbox = new SqliteOutboxStore(db, this.#writer);
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
    await this.#writer.close();
    if (this.db.open) this.db.close();
  }
}

export async function openSqliteStore(options: SqliteOptions & { migrate?: boolean }): Promise<SqliteStore> {
  if (options.migrate !== false) await migrateSqlite(options);
  return new SqliteStore(openSqlite(options), { path: options.path, durability: options.durability });
}
