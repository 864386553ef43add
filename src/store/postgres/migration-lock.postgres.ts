import {
  CompiledQuery,
  PostgresAdapter,
  PostgresDialect,
  PostgresDriver,
  type DatabaseConnection,
  type Driver,
  type DialectAdapter,
  type PostgresDialectConfig,
  type TransactionSettings,
} from 'kysely';
import { operation } from '../operation.js';

// Any constant shared by every Plant Store version; it names the lock.
const MIGRATION_LOCK_ID = 7_311_425_460_118_203_001n;

/**
 * How long a start waits for another instance's migration before it gives
 * up. Migrations are small DDL; minutes mean something is stuck.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 120_000;

const SQL = {
  // Locks: the migration's advisory lock, transaction-level: held to the
  // migration's COMMIT or ROLLBACK (or a lost connection), waiting at most
  // lock_timeout, set for this transaction only, for another start's migration.
  lock: operation<[]>(
    'migration_lock',
    `SELECT set_config('lock_timeout', '${MIGRATION_LOCK_TIMEOUT_MS}', true), pg_advisory_xact_lock(${MIGRATION_LOCK_ID})`,
  ),
};

/**
 * Kysely's PostgreSQL migrator takes a session-level advisory lock and
 * releases it with a later statement. Behind a transaction pooler
 * (PgBouncer pool_mode=transaction) those two statements can run on
 * different server connections: the lock then stays on a pooled server
 * connection and every later start waits on it. Here the lock is
 * transaction-level instead: the first statement of the migration's own
 * transaction takes it, and the commit or rollback (or a lost connection)
 * releases it, on whatever server connection the transaction ran.
 */
class TransactionLockAdapter extends PostgresAdapter {
  override async acquireMigrationLock(): Promise<void> {}
  override async releaseMigrationLock(): Promise<void> {}
}

class TransactionLockDriver extends PostgresDriver {
  override async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    await super.beginTransaction(connection, settings);
    // Sent by Kysely, as the migration's other statements are.
    await connection.executeQuery(CompiledQuery.raw(SQL.lock.text));
  }
}

/** The dialect for a Kysely instance that only runs the migrator: every transaction holds the migration lock. */
export class MigrationDialect extends PostgresDialect {
  readonly #config: PostgresDialectConfig;

  constructor(config: PostgresDialectConfig) {
    super(config);
    this.#config = config;
  }

  override createDriver(): Driver {
    return new TransactionLockDriver(this.#config);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionLockAdapter();
  }
}
