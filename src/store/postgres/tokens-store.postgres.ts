import type pg from 'pg';
import type { Scope, TokenRecord, TokenStore } from '../store.js';
import { operation } from '../operation.js';
import { inTransaction, run, withClient, writeWithClient } from './db-connect.postgres.js';
import type { PostgresRow } from './tables.postgres.js';

/** A token as read, without its hash. */
export type TokenRow = Omit<PostgresRow<'tokens'>, 'hash'>;

export const toRecord = (row: TokenRow): TokenRecord => ({
  id: row.id,
  owner: row.owner,
  scopes: row.scopes.split(' ') as Scope[],
  createdAt: row.created_at,
  expiresAt: row.expires_at ?? undefined,
  revokedAt: row.revoked_at ?? undefined,
});

type TokenValues = [id: string, hash: Buffer, owner: string, scopes: string, createdAt: Date, expiresAt: Date | null];

const tokenValues = (t: TokenRecord, hash: Buffer): TokenValues => [
  t.id,
  hash,
  t.owner,
  t.scopes.join(' '),
  t.createdAt,
  t.expiresAt ?? null,
];

const COLUMNS = 'id, owner, scopes, created_at, expires_at, revoked_at';

// The token operations. Locks: reads take none (a snapshot); a write takes
// the row locks of the rows it writes, and the unique id and hash make a
// second insert of either fail.
const SQL = {
  insert: operation<TokenValues>(
    'tokens_insert',
    `INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at)
    VALUES ($1::text, $2::bytea, $3::text, $4::text, $5::timestamptz, $6::timestamptz)`,
  ),
  /** Run after firstTokenLock, in its transaction. */
  insertFirst: operation<TokenValues>(
    'tokens_insert_first',
    `INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at)
    SELECT $1::text, $2::bytea, $3::text, $4::text, $5::timestamptz, $6::timestamptz
    WHERE NOT EXISTS (SELECT 1 FROM tokens)`,
  ),
  /**
   * A transaction-scoped advisory lock of its own: under READ COMMITTED two
   * transactions could both find the table empty; this makes the second one
   * wait and then see the first one's token.
   */
  firstTokenLock: operation<[]>(
    'tokens_first_lock',
    "SELECT pg_advisory_xact_lock(hashtext('plant-store first token'))",
  ),
  byHash: operation<[hash: Buffer], TokenRow>('tokens_by_hash', `SELECT ${COLUMNS} FROM tokens WHERE hash = $1::bytea`),
  byIds: operation<[ids: readonly string[]], TokenRow>(
    'tokens_by_ids',
    `SELECT ${COLUMNS} FROM tokens WHERE id = ANY ($1::text[])`,
  ),
  all: operation<[], TokenRow>('tokens_all', `SELECT ${COLUMNS} FROM tokens ORDER BY created_at, id`),
  /** coalesce keeps the first revocation time when a token is revoked twice. */
  revokeById: operation<[at: Date, id: string]>(
    'tokens_revoke_by_id',
    'UPDATE tokens SET revoked_at = coalesce(revoked_at, $1::timestamptz) WHERE id = $2::text',
  ),
  revokeByHash: operation<[at: Date, hash: Buffer]>(
    'tokens_revoke_by_hash',
    'UPDATE tokens SET revoked_at = coalesce(revoked_at, $1::timestamptz) WHERE hash = $2::bytea',
  ),
};

export class PostgresTokenStore implements TokenStore {
  constructor(private readonly pool: pg.Pool) {}

  async insert(t: TokenRecord, hash: Buffer): Promise<void> {
    await writeWithClient(this.pool, (client) => run(client, SQL.insert, tokenValues(t, hash)));
  }

  async insertFirst(t: TokenRecord, hash: Buffer): Promise<boolean> {
    const values = tokenValues(t, hash);
    return writeWithClient(this.pool, (client) =>
      inTransaction(client, async () => {
        await run(client, SQL.firstTokenLock, []);
        const { rowCount } = await run(client, SQL.insertFirst, values);
        return rowCount === 1;
      }),
    );
  }

  async findByHash(hash: Buffer): Promise<TokenRecord | undefined> {
    const { rows } = await withClient(this.pool, (client) => run(client, SQL.byHash, [hash]));
    const row = rows[0];
    return row && toRecord(row);
  }

  async findByIds(ids: readonly string[]): Promise<TokenRecord[]> {
    const { rows } = await withClient(this.pool, (client) => run(client, SQL.byIds, [ids]));
    return rows.map(toRecord);
  }

  async list(): Promise<TokenRecord[]> {
    const { rows } = await withClient(this.pool, (client) => run(client, SQL.all, []));
    return rows.map(toRecord);
  }

  async revoke(idOrHash: string | Buffer, at: Date): Promise<boolean> {
    const { rowCount } = await writeWithClient(this.pool, (client) =>
      typeof idOrHash === 'string'
        ? run(client, SQL.revokeById, [at, idOrHash])
        : run(client, SQL.revokeByHash, [at, idOrHash]),
    );
    return (rowCount ?? 0) > 0;
  }
}
