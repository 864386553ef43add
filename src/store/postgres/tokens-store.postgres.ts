import type pg from 'pg';
import type { Scope, TokenRecord, TokenStore } from '../store.js';
import { withClient, writeWithClient } from './db-connect.postgres.js';
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

const COLUMNS = 'id, owner, scopes, created_at, expires_at, revoked_at';

const INSERT = {
  name: 'tokens_insert',
  text: `INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at)
    VALUES ($1::text, $2::bytea, $3::text, $4::text, $5::timestamptz, $6::timestamptz)`,
} as const;
const INSERT_FIRST = {
  name: 'tokens_insert_first',
  text: `INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at)
    SELECT $1::text, $2::bytea, $3::text, $4::text, $5::timestamptz, $6::timestamptz
    WHERE NOT EXISTS (SELECT 1 FROM tokens)`,
} as const;
// Under READ COMMITTED two transactions could both find the table empty:
// this lock makes the second one wait and then see the first one's token.
const FIRST_TOKEN_LOCK = {
  name: 'tokens_first_lock',
  text: "SELECT pg_advisory_xact_lock(hashtext('plant-store first token'))",
} as const;
const BY_HASH = { name: 'tokens_by_hash', text: `SELECT ${COLUMNS} FROM tokens WHERE hash = $1::bytea` } as const;
const BY_IDS = {
  name: 'tokens_by_ids',
  text: `SELECT ${COLUMNS} FROM tokens WHERE id = ANY ($1::text[])`,
} as const;
const ALL = { name: 'tokens_all', text: `SELECT ${COLUMNS} FROM tokens ORDER BY created_at, id` } as const;
// coalesce keeps the first revocation time when a token is revoked twice.
const REVOKE_BY_ID = {
  name: 'tokens_revoke_by_id',
  text: 'UPDATE tokens SET revoked_at = coalesce(revoked_at, $1::timestamptz) WHERE id = $2::text',
} as const;
const REVOKE_BY_HASH = {
  name: 'tokens_revoke_by_hash',
  text: 'UPDATE tokens SET revoked_at = coalesce(revoked_at, $1::timestamptz) WHERE hash = $2::bytea',
} as const;

const tokenValues = (t: TokenRecord, hash: Buffer) => [
  t.id,
  hash,
  t.owner,
  t.scopes.join(' '),
  t.createdAt,
  t.expiresAt ?? null,
];

export class PostgresTokenStore implements TokenStore {
  constructor(private readonly pool: pg.Pool) {}

  async insert(t: TokenRecord, hash: Buffer): Promise<void> {
    await writeWithClient(this.pool, (client) => client.query({ ...INSERT, values: tokenValues(t, hash) }));
  }

  async insertFirst(t: TokenRecord, hash: Buffer): Promise<boolean> {
    const values = tokenValues(t, hash);
    return writeWithClient(this.pool, async (client) => {
      await client.query('BEGIN');
      try {
        await client.query(FIRST_TOKEN_LOCK);
        const { rowCount } = await client.query({ ...INSERT_FIRST, values });
        await client.query('COMMIT');
        return rowCount === 1;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    });
  }

  async findByHash(hash: Buffer): Promise<TokenRecord | undefined> {
    const { rows } = await withClient(this.pool, (client) => client.query<TokenRow>({ ...BY_HASH, values: [hash] }));
    const row = rows[0];
    return row && toRecord(row);
  }

  async findByIds(ids: readonly string[]): Promise<TokenRecord[]> {
    const { rows } = await withClient(this.pool, (client) => client.query<TokenRow>({ ...BY_IDS, values: [ids] }));
    return rows.map(toRecord);
  }

  async list(): Promise<TokenRecord[]> {
    const { rows } = await withClient(this.pool, (client) => client.query<TokenRow>(ALL));
    return rows.map(toRecord);
  }

  async revoke(idOrHash: string | Buffer, at: Date): Promise<boolean> {
    const query = typeof idOrHash === 'string' ? REVOKE_BY_ID : REVOKE_BY_HASH;
    const { rowCount } = await writeWithClient(this.pool, (client) =>
      client.query({ ...query, values: [at, idOrHash] }),
    );
    return (rowCount ?? 0) > 0;
  }
}
