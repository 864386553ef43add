import { isPostgresUrl } from './rules/db-url.js';
import type { Config, Durability, PgPooler } from './schema.js';

/** What the SQLite store needs from the settings. */
export interface SqliteConfig {
  path: string;
  durability: Durability;
  /** Memory for reusing unchanged list pages (--list-cache-bytes); 0: none. */
  listCacheBytes: number;
}

/** What the PostgreSQL store needs from the settings. */
export interface PostgresConfig {
  url: string;
  poolSize: number;
  /** 0 disables the timeout. */
  statementTimeoutMs: number;
  durability: Durability;
  /**
   * transaction: a transaction pooler (PgBouncer pool_mode=transaction) sits in
   * front, so no named prepared statements and no startup parameters.
   */
  pooler: PgPooler;
}

export type StoreConfig = { kind: 'sqlite'; sqlite: SqliteConfig } | { kind: 'postgres'; postgres: PostgresConfig };

/** The store that --db names, with the settings that store uses. */
export function storeConfig(
  config: Pick<Config, 'db' | 'durability' | 'pgPoolSize' | 'pgStatementTimeoutMs'> &
    Partial<Pick<Config, 'pgPooler' | 'listCacheBytes'>>,
): StoreConfig {
  if (isPostgresUrl(config.db)) {
    return {
      kind: 'postgres',
      postgres: {
        url: config.db,
        poolSize: config.pgPoolSize,
        statementTimeoutMs: config.pgStatementTimeoutMs,
        durability: config.durability,
        pooler: config.pgPooler ?? 'none',
      },
    };
  }
  // A store opened without the setting (a tool that serves no lists) keeps no pages.
  return {
    kind: 'sqlite',
    sqlite: { path: config.db, durability: config.durability, listCacheBytes: config.listCacheBytes ?? 0 },
  };
}

/**
 * The file holding the key that seals webhook secrets: --webhook-key-file, or
 * else next to the SQLite file (so a copy of the database alone does not carry
 * it), or ./data/webhook.key with PostgreSQL.
 */
export function webhookKeyPath(config: Pick<Config, 'db' | 'webhookKeyFile'>): string {
  if (config.webhookKeyFile) return config.webhookKeyFile;
  return isPostgresUrl(config.db) ? './data/webhook.key' : `${config.db}.webhook-key`;
}
