import { storeConfig, type Config } from '../config.js';
import type { MigrationReport } from './migrate.js';
import type { Store } from './store.js';

type StoreSettings = Pick<Config, 'db' | 'durability' | 'pgPoolSize' | 'pgStatementTimeoutMs'>;

export interface OpenOptions {
  /** Refuse to create a new SQLite file (tools that manage an existing store: a typo must not create an empty one). */
  mustExist?: boolean;
}

// Each store module is loaded only when it is used, so a SQLite deployment
// never loads pg and a PostgreSQL one never loads the SQLite native addon.

/** Opens the store the config names (postgres:// URL or SQLite path), migrating it to the latest schema first. */
export async function openStore(settings: StoreSettings, options: OpenOptions = {}): Promise<Store> {
  const config = storeConfig(settings);
  if (config.kind === 'postgres') {
    const { openPostgresStore } = await import('./postgres/store.postgres.js');
    return openPostgresStore(config.postgres);
  }
  const { openSqliteStore } = await import('./sqlite/store.sqlite.js');
  return openSqliteStore({ ...config.sqlite, mustExist: options.mustExist ?? false });
}

export async function migrateStore(settings: StoreSettings): Promise<MigrationReport> {
  const config = storeConfig(settings);
  if (config.kind === 'postgres') {
    const { migratePostgres } = await import('./postgres/store.postgres.js');
    return migratePostgres(config.postgres);
  }
  const { migrateSqlite } = await import('./sqlite/store.sqlite.js');
  return migrateSqlite(config.sqlite);
}
