import {
  checkStoreConnections,
  migrateStore,
  openStore,
  type OpenOptions,
  type StoreSettings,
} from '../store/open-store.js';
import type { MigrationReport } from '../store/migrate.js';
import type { Store } from '../store/store.js';
import { StoreFileMissingError } from '../store/sqlite/store-file.js';
import { ConfigError } from '../config.js';
import { CliError, explainPostgresFailure } from './store-errors.js';
import { storeLocation } from './store-location.js';

/** A failure to reach the store, said in one line when it is one of the usual mistakes. */
function explained(error: unknown, db: string, mustExist: boolean): unknown {
  // Already names the setting to change (a pooler refusing startup parameters).
  if (error instanceof ConfigError) return error;
  const where = storeLocation(db);
  if (where.store === 'postgres') {
    const line = explainPostgresFailure(error, where);
    return line ? new CliError(line, { cause: error }) : error;
  }
  if (mustExist && error instanceof StoreFileMissingError) {
    return new CliError(
      `no SQLite database at ${where.path}; check --db (or PLANTS_DB), or create it with: plant-store migrate --db ${db}`,
      { cause: error },
    );
  }
  return error;
}

/** openStore for the commands: migrates, and explains the usual connection mistakes. */
export async function openCommandStore(config: StoreSettings, options: OpenOptions = {}): Promise<Store> {
  try {
    return await openStore(config, options);
  } catch (error) {
    throw explained(error, config.db, options.mustExist ?? false);
  }
}

export async function migrateCommandStore(config: StoreSettings): Promise<MigrationReport> {
  try {
    return await migrateStore(config);
  } catch (error) {
    throw explained(error, config.db, false);
  }
}

/** checkStoreConnections for serve, with the usual connection mistakes explained. */
export async function checkCommandConnections(config: StoreSettings, processes: number): Promise<void> {
  try {
    await checkStoreConnections(config, processes);
  } catch (error) {
    throw explained(error, config.db, false);
  }
}
