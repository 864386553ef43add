import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateToLatest, requireSchema, type MigrationReport } from '../migrate.js';
import { StoreUnavailableError, type Store } from '../store.js';
import {
  CONNECTION_SQL,
  TRANSACTION_SQL,
  openSqlite,
  prepareAll,
  type Prepared,
  type SqliteOptions,
} from './db-connect.sqlite.js';
import { ChangeEpoch } from './change-epoch.js';
import { SqliteEventLog } from './event-log.sqlite.js';
import { SqliteEventSignal } from './event-signal.sqlite.js';
import { isDiskFull } from './errors.sqlite.js';
import { fileIdentity, storeFileProblem, type FileIdentity } from './store-file.js';
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
  const sql = prepareAll(database, TRANSACTION_SQL);
  try {
    // Busy after busy_timeout while another process holds the write lock.
    sql.begin.run();
  } catch (error) {
    database.close();
    throw error;
  }
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
  try {
    const report = await migrateToLatest(db, sqliteMigrations);
    sql.commit.run();
    return report;
  } finally {
    if (database.inTransaction) sql.rollback.run();
    await db.destroy();
  }
}

/** What readiness reads on the serving connection (their locks: CONNECTION_SQL). */
const READINESS_SQL = { ping: CONNECTION_SQL.ping, dataVersion: CONNECTION_SQL.dataVersion };

/** Below this much free space, a store whose last write failed with "disk full" is not ready. */
const LOW_SPACE_BYTES = 1024 * 1024;

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  readonly plants: SqlitePlantStore;
  readonly tokens: SqliteTokenStore;
  readonly transfer: SqliteTransfer;
  readonly webhooks: SqliteWebhookStore;
  readonly outbox: SqliteOutboxStore;
  readonly events: SqliteEventLog;
  readonly eventSignal: SqliteEventSignal;
  readonly #writer: WriterThread;
  readonly #sql: Prepared<typeof READINESS_SQL>;
  /** This connection's data_version when readiness first saw writes failing. */
  #versionAtFailure: unknown;
  readonly #path: string;
  readonly #opened: FileIdentity;

  /** `listCacheBytes`: memory for reusing unchanged list pages (--list-cache-bytes; 0 or absent: none). */
  constructor(
    private readonly db: Database.Database,
    options: SqliteOptions,
    listCacheBytes = 0,
  ) {
    const changes = new ChangeEpoch(db);
    this.#path = options.path;
    this.#opened = fileIdentity(options.path);
    this.#writer = new WriterThread({ ...options, opened: this.#opened }, changes);
    this.plants = new SqlitePlantStore(db, this.#writer, changes, listCacheBytes);
    this.tokens = new SqliteTokenStore(db);
    this.transfer = new SqliteTransfer(db);
    this.webhooks = new SqliteWebhookStore(db);
    this.outbox = new SqliteOutboxStore(db, this.#writer);
    this.events = new SqliteEventLog(db, this.#writer);
    this.#sql = prepareAll(db, READINESS_SQL);
    // Every process on the file, workers and separate instances alike.
    this.eventSignal = new SqliteEventSignal(options.path);
  }

  /**
   * Ready when the database answers, its file is still the one opened, and
   * writes work: after a write failed for a reason that was not its own (disk
   * full, read-only), a probe write must commit first.
   */
  async ping(): Promise<void> {
    try {
      this.#sql.ping.get();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
    const moved = storeFileProblem(this.#path, this.#opened);
    if (moved !== undefined) throw new StoreUnavailableError(new Error(moved));
    const problem = this.#writer.problem;
    if (problem === undefined) {
      this.#versionAtFailure = undefined;
      return;
    }
    // A failed write may leave room in the write-ahead log for a small probe
    // while real writes still fail: after "disk full", wait for free space
    // first, or for a write of another process (another worker) to commit.
    // This connection's data_version changes with every commit of another.
    if (isDiskFull(problem.code) && !this.#committedSinceFailure()) {
      const { bavail, bsize } = statfsSync(dirname(this.#path));
      if (bavail * bsize < LOW_SPACE_BYTES) throw new StoreUnavailableError(new Error(problem.message));
    }
    await this.#writer.probe();
  }

  /** Whether another connection has committed since readiness first saw writes failing. */
  #committedSinceFailure(): boolean {
    const version = this.#sql.dataVersion.get();
    this.#versionAtFailure ??= version;
    return version !== this.#versionAtFailure;
  }

  async close(): Promise<void> {
    await this.eventSignal.close();
    await this.#writer.close();
    if (this.db.open) this.db.close();
  }
}

/** Refuses a SQLite file without the whole Plant Store schema, changing nothing. */
export async function requireSqliteSchema(options: SqliteOptions): Promise<void> {
  const db = new Kysely<unknown>({
    dialect: new SqliteDialect({ database: openSqlite({ ...options, mustExist: true }) }),
  });
  try {
    await requireSchema(db, sqliteMigrations, `the SQLite file ${options.path}`);
  } finally {
    await db.destroy();
  }
}

/**
 * migrate: bring the schema up to date (the default); 'require': refuse a
 * file without it. listCacheBytes: memory for list page reuse (absent: none).
 */
export async function openSqliteStore(
  options: SqliteOptions & { migrate?: boolean | 'require'; listCacheBytes?: number },
): Promise<SqliteStore> {
  if (options.migrate === 'require') await requireSqliteSchema(options);
  else if (options.migrate !== false) await migrateSqlite(options);
  const { path, durability, listCacheBytes } = options;
  return new SqliteStore(openSqlite(options), { path, durability }, listCacheBytes);
}
