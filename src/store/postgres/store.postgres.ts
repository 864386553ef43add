import { Kysely, PostgresDialect } from 'kysely';
import type pg from 'pg';
import { StoreUnavailableError } from '../store.js';
import { migrateToLatest, requireSchema, type MigrationReport } from '../migrate.js';
import type { Store } from '../store.js';
import { assertWritable, createPgPool, withClient } from './db-connect.postgres.js';
import { startupError } from './errors.postgres.js';
import type { PostgresConfig } from '../../config.js';
import { hostPort, postgresTarget } from '../../db-url.js';
import { postgresMigrations } from './migrations.postgres.js';
import { MigrationDialect } from './migration-lock.postgres.js';
import { PostgresEventLog } from './event-log.postgres.js';
import { PostgresEventSignal } from './event-signal.postgres.js';
import { PostgresPlantStore } from './plants-store.postgres.js';
import { PostgresTokenStore } from './tokens-store.postgres.js';
import { PostgresTransfer } from './transfer.postgres.js';
import { PostgresOutboxStore, PostgresWebhookStore } from './webhooks-store.postgres.js';

export async function migratePostgres(config: PostgresConfig): Promise<MigrationReport> {
  // No statement timeout: a second instance starting at the same time waits
  // on the migration lock (bounded by its own lock_timeout) for as long as
  // the first one's DDL takes.
  const db = new Kysely<unknown>({
    dialect: new MigrationDialect({ pool: createPgPool(config, { max: 2, statementTimeoutMs: 0 }) }),
  });
  try {
    return await migrateToLatest(db, postgresMigrations);
  } catch (error) {
    // Start-up is where a pooler that refuses our startup parameters shows
    // first: fail with the setting that fixes it rather than "unavailable".
    throw startupError(error);
  } finally {
    await db.destroy();
  }
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  readonly plants: PostgresPlantStore;
  readonly tokens: PostgresTokenStore;
  readonly transfer: PostgresTransfer;
  readonly webhooks: PostgresWebhookStore;
  readonly outbox: PostgresOutboxStore;
  readonly events: PostgresEventLog;
  #closed: Promise<void> | undefined;

  /** `eventSignal`: none behind a transaction pooler, where LISTEN cannot work. */
  constructor(
    private readonly pool: pg.Pool,
    readonly eventSignal: PostgresEventSignal | undefined = undefined,
  ) {
    this.plants = new PostgresPlantStore(pool);
    this.tokens = new PostgresTokenStore(pool);
    this.transfer = new PostgresTransfer(pool);
    this.webhooks = new PostgresWebhookStore(pool);
    this.outbox = new PostgresOutboxStore(pool);
    this.events = new PostgresEventLog(pool);
  }

  /** Resolves when the database answers and takes writes: a standby cannot. */
  async ping(): Promise<void> {
    try {
      await withClient(this.pool, assertWritable);
    } catch (error) {
      throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error);
    }
  }

  /** Ends the pool once; in-flight queries finish first, later calls answer StoreUnavailableError. */
  close(): Promise<void> {
    this.#closed ??= Promise.all([this.pool.end(), this.eventSignal?.close()]).then(() => {});
    return this.#closed;
  }
}

/** The database a URL names, for messages: never its password. */
function databaseName(url: string): string {
  try {
    const target = postgresTarget(url);
    const database = target.database === undefined ? 'named after the user' : `"${target.database}"`;
    return `the PostgreSQL database ${database} at ${hostPort(target)}`;
  } catch {
    return 'the PostgreSQL database';
  }
}

/** Refuses a database without the whole Plant Store schema, changing nothing. */
export async function requirePostgresSchema(config: PostgresConfig): Promise<void> {
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: createPgPool(config, { max: 1 }) }) });
  try {
    await requireSchema(db, postgresMigrations, databaseName(config.url));
  } catch (error) {
    throw startupError(error);
  } finally {
    await db.destroy();
  }
}

/** migrate: bring the schema up to date (the default); 'require': refuse a database without it. */
export async function openPostgresStore(
  config: PostgresConfig & { migrate?: boolean | 'require' },
): Promise<PostgresStore> {
  if (config.migrate === 'require') await requirePostgresSchema(config);
  else if (config.migrate !== false) await migratePostgres(config);
  const store = new PostgresStore(
    createPgPool(config),
    config.pooler === 'none' ? new PostgresEventSignal(config) : undefined,
  );
  // One connection with the pool's own startup parameters (the migrator
  // sends none), so a pooler that refuses them stops the start with the
  // setting that fixes it instead of failing every request later.
  try {
    await store.ping();
  } catch (error) {
    await store.close();
    throw startupError(error);
  }
  return store;
}
