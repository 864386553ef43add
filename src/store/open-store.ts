import { isPostgresUrl, type Config } from '../config.js';
import type { MigrationReport } from './migrate.js';
import type { Store } from './store.js';

export type StoreConfig = Pick<Config, 'db' | 'durability' | 'pgPoolSize' | 'pgStatementTimeoutMs'>;

export interface OpenOptions {
  /** Refuse to create a new SQLite file (tools that manage an existing store: a typo must not create an empty one). */
  mustExist?: boolean;
}

/** Opens the store the config names (postgres:// URL or SQLite path), migrating it to the latest schema first. */
export async function openStore(config: StoreConfig, options: OpenOptions = {}): Promise<Store> {
  if (isPostgresUrl(config.db)) {
    const { openPostgresStore } = await import('./postgres/store.postgres.js');
    return openPostgresStore(config);
  }
  const { openSqliteStore } = await import('./sqlite/store.sqlite.js');
  return openSqliteStore({ path: config.db, durability: config.durability, mustExist: options.mustExist ?? false });
}

export async function migrateStore(config: StoreConfig): Promise<MigrationReport> {
  if (isPostgresUrl(config.db)) {
    const { migratePostgres } = await import('./postgres/store.postgres.js');
    return migratePostgres(config);
  }
  const { migrateSqlite } = await import('./sqlite/store.sqlite.js');
  return migrateSqlite({ path: config.db, durability: config.durability });
}
