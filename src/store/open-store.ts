import { storeConfig, type Config } from '../config.js';
import type { MigrationReport } from './migrate.js';
import type { Store } from './store.js';

/** The settings that say which store to open and how to connect to it. */
export type StoreSettings = Pick<Config, 'db' | 'durability' | 'pgPoolSize' | 'pgStatementTimeoutMs'> &
  Partial<Pick<Config, 'pgPooler' | 'listCacheBytes'>>;

export interface OpenOptions {
  /** Refuse to create a new SQLite file (tools that manage an existing store: a typo must not create an empty one). */
  mustExist?: boolean;
  /**
   * Use the schema as it is, and refuse a database without it instead of
   * creating it (tools that only read or change tokens: a database they are
   * pointed at by mistake is left untouched).
   */
  existingSchema?: boolean;
}

// Each store module is loaded only when it is used, so a SQLite deployment
// never loads pg and a PostgreSQL one never loads the SQLite native addon.

/** Opens the store the config names (postgres:// URL or SQLite path), migrating it to the latest schema first unless told to use it as it is. */
export async function openStore(settings: StoreSettings, options: OpenOptions = {}): Promise<Store> {
  const config = storeConfig(settings);
  if (config.kind === 'postgres') {
    const { openPostgresStore } = await import('./postgres/store.postgres.js');
    return openPostgresStore({ ...config.postgres, migrate: options.existingSchema ? 'require' : true });
  }
  const { openSqliteStore } = await import('./sqlite/store.sqlite.js');
  return openSqliteStore({
    ...config.sqlite,
    mustExist: (options.mustExist ?? false) || (options.existingSchema ?? false),
    migrate: options.existingSchema ? 'require' : true,
  });
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

/**
 * Refuses (ConfigError) a configuration whose `processes` could together open
 * more PostgreSQL connections than the server has room for. Nothing to check
 * on SQLite.
 */
export async function checkStoreConnections(settings: StoreSettings, processes: number): Promise<void> {
  const config = storeConfig(settings);
  if (config.kind !== 'postgres') return;
  const { checkConnectionBudget } = await import('./postgres/connection-budget.postgres.js');
  await checkConnectionBudget(config.postgres, processes);
}
