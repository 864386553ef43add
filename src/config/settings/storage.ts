import { Type } from '@sinclair/typebox';
import { MAX_STATEMENT_TIMEOUT_MS, DURABILITIES, PG_POOLERS, type SettingSpec } from '../setting-spec.js';

/** The store: SQLite or PostgreSQL, and how it is used. */
export const STORAGE = {
  db: {
    group: 'storage',
    env: 'PLANTS_DB',
    fallbackEnv: 'DATABASE_URL',
    default: './data/plants.db',
    arg: 'PATH|URL',
    schema: Type.String({ minLength: 1 }),
    help: 'SQLite file path, or a postgres:// or postgresql:// URL',
  },
  'db-file': {
    group: 'storage',
    env: 'PLANTS_DB_FILE',
    default: '',
    arg: 'PATH',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'file holding the --db value, so that a PostgreSQL password stays out of the process list (instead of --db)',
  },
  durability: {
    group: 'storage',
    env: 'PLANTS_DURABILITY',
    default: 'full',
    arg: 'full|normal',
    schema: Type.Union(DURABILITIES.map((d) => Type.Literal(d))),
    help: 'full: a 2xx write survives power loss; normal: it survives a crash of the process',
  },
  'list-cache-bytes': {
    group: 'storage',
    env: 'PLANTS_LIST_CACHE_BYTES',
    default: '16777216',
    arg: 'BYTES',
    schema: Type.Integer({ minimum: 0, maximum: 2 ** 40 }),
    help: 'memory for reusing unchanged list pages (SQLite only); 0 turns it off',
  },
  'pg-pool-size': {
    group: 'storage',
    env: 'PLANTS_PG_POOL_SIZE',
    default: '10',
    arg: 'N',
    schema: Type.Integer({ minimum: 1, maximum: 1000 }),
    help: 'PostgreSQL connections per process',
  },
  'pg-statement-timeout-ms': {
    group: 'storage',
    env: 'PLANTS_PG_STATEMENT_TIMEOUT_MS',
    default: '5000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 0, maximum: MAX_STATEMENT_TIMEOUT_MS }),
    help: 'PostgreSQL statement timeout; 0 turns it off',
  },
  'pg-pooler': {
    group: 'storage',
    env: 'PLANTS_PG_POOLER',
    default: 'none',
    arg: 'none|transaction',
    schema: Type.Union(PG_POOLERS.map((p) => Type.Literal(p))),
    help: 'transaction: PostgreSQL is behind a transaction-pooling PgBouncer (no named prepared statements, no startup parameters)',
  },
} as const satisfies Record<string, SettingSpec>;
