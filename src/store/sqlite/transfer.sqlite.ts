import type Database from 'better-sqlite3';
import type { PlantDump, StoreTransfer, TokenDump } from '../store.js';
import { operation } from '../operation.js';
import type { ColumnTuple } from '../rows.js';
import { toRecord, type TokenValues } from './tokens-store.sqlite.js';
import { boundLimit } from './bound-limit.js';
import { prepareAll, type Prepared } from './db-connect.sqlite.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';

const BATCH = 1000;

const PLANT_COLUMNS = ['owner', 'seq', 'id', 'name', 'tag'] as const;
type PlantRow = ColumnTuple<SafeIntegers<SqliteRow<'plants'>>, typeof PLANT_COLUMNS>;

type ImportedToken = [...TokenValues, revokedAt: number | null];

// The operations of export and import. Locks: each read is one statement
// (a WAL snapshot of its own, no lock), so an export never holds a read
// transaction, and with it the WAL, for long; it sees what was committed
// before each batch. The import of tokens is one transaction on the main
// thread's connection, holding the write lock from its first insert.
const SQL = {
  tokens: operation<[], SqliteRow<'tokens'>>(
    'transfer_tokens',
    'SELECT id, hash, owner, scopes, created_at, expires_at, revoked_at FROM tokens ORDER BY created_at, id',
  ),
  /** Keyset over the (owner, seq) index: each batch one short read. */
  plantsAfter: operation<[owner: string, seq: bigint, limit: number], PlantRow>(
    'transfer_plants_after',
    `SELECT ${PLANT_COLUMNS.join(', ')} FROM plants WHERE (owner, seq) > (?, ?) ORDER BY owner, seq ${boundLimit('?')}`,
    { rowMode: 'array', bigints: true },
  ),
  /** Without a conflict target, DO NOTHING covers both the id and the hash. */
  importToken: operation<ImportedToken>(
    'transfer_import_token',
    'INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  ),
};

export class SqliteTransfer implements StoreTransfer {
  readonly #sql: Prepared<typeof SQL>;

  constructor(private readonly db: Database.Database) {
    this.#sql = prepareAll(db, SQL);
  }

  async *tokens(): AsyncIterable<TokenDump> {
    for (const r of this.#sql.tokens.all()) {
      yield { ...toRecord(r), hash: r.hash };
    }
  }

  async *plants(): AsyncIterable<PlantDump> {
    let after: [string, bigint] = ['', -1n];
    for (;;) {
      const rows = this.#sql.plantsAfter.all(after[0], after[1], BATCH);
      for (const [owner, , id, name, tag] of rows)
        yield { owner, plant: tag === null ? { id, name } : { id, name, tag } };
      if (rows.length < BATCH) return;
      const last = rows[rows.length - 1]!;
      after = [last[0], last[1]];
    }
  }

  async importTokens(tokens: readonly TokenDump[]): Promise<number> {
    let n = 0;
    this.db.transaction(() => {
      for (const t of tokens) {
        n += this.#sql.importToken.run(
          t.id,
          t.hash,
          t.owner,
          t.scopes.join(' '),
          t.createdAt.getTime(),
          t.expiresAt?.getTime() ?? null,
          t.revokedAt?.getTime() ?? null,
        ).changes;
      }
    })();
    return n;
  }
}
