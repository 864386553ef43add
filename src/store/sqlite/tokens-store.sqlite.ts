import type Database from 'better-sqlite3';
import { StoreUnavailableError, type Scope, type TokenRecord, type TokenStore } from '../store.js';
import { operation } from '../operation.js';
import { prepareAll, type Prepared } from './db-connect.sqlite.js';
import type { SqliteRow } from './tables.sqlite.js';

/** A token as read, without its hash. */
export type TokenRow = Omit<SqliteRow<'tokens'>, 'hash'>;

export const toRecord = (row: TokenRow): TokenRecord => ({
  id: row.id,
  owner: row.owner,
  scopes: row.scopes.split(' ') as Scope[],
  createdAt: new Date(row.created_at),
  expiresAt: row.expires_at === null ? undefined : new Date(row.expires_at),
  revokedAt: row.revoked_at === null ? undefined : new Date(row.revoked_at),
});

export type TokenValues = [
  id: string,
  hash: Buffer,
  owner: string,
  scopes: string,
  createdAt: number,
  expiresAt: number | null,
];

const tokenValues = (t: TokenRecord, hash: Buffer): TokenValues => [
  t.id,
  hash,
  t.owner,
  t.scopes.join(' '),
  t.createdAt.getTime(),
  t.expiresAt?.getTime() ?? null,
];

const COLUMNS = 'id, owner, scopes, created_at, expires_at, revoked_at';

// The token operations. Locks: a write here is a statement of its own on the
// main thread's connection (tokens are rare writes, not worth the writer
// thread's queue): it takes SQLite's write lock for that statement, waiting
// up to busy_timeout while another connection holds it. Reads take none (a
// WAL snapshot).
const SQL = {
  insert: operation<TokenValues>(
    'tokens_insert',
    'INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
  ),
  /** The "no token yet" check and the insert are one statement, so both happen under the same write lock. */
  insertFirst: operation<TokenValues>(
    'tokens_insert_first',
    'INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at) SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM tokens)',
  ),
  byHash: operation<[hash: Buffer], TokenRow>('tokens_by_hash', `SELECT ${COLUMNS} FROM tokens WHERE hash = ?`),
  /** One parameter, a JSON array, however many ids: no statement per count, no limit on variables. */
  byIds: operation<[ids: string], TokenRow>(
    'tokens_by_ids',
    `SELECT ${COLUMNS} FROM tokens WHERE id IN (SELECT value FROM json_each(?))`,
  ),
  all: operation<[], TokenRow>('tokens_all', `SELECT ${COLUMNS} FROM tokens ORDER BY created_at, id`),
  /** coalesce keeps the first revocation time when a token is revoked twice. */
  revokeById: operation<[at: number, id: string]>(
    'tokens_revoke_by_id',
    'UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?',
  ),
  revokeByHash: operation<[at: number, hash: Buffer]>(
    'tokens_revoke_by_hash',
    'UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE hash = ?',
  ),
};

export class SqliteTokenStore implements TokenStore {
  readonly #sql: Prepared<typeof SQL>;

  constructor(private readonly db: Database.Database) {
    this.#sql = prepareAll(db, SQL);
  }

  async insert(t: TokenRecord, hash: Buffer): Promise<void> {
    this.#sql.insert.run(...tokenValues(t, hash));
  }

  async insertFirst(t: TokenRecord, hash: Buffer): Promise<boolean> {
    return this.#sql.insertFirst.run(...tokenValues(t, hash)).changes === 1;
  }
  // A closed store (shutting down) is unavailable, like an unreachable database.
  #ensureOpen(): void {
    if (!this.db.open) throw new StoreUnavailableError(new Error('the SQLite store is closed'));
  }

  async findByHash(hash: Buffer): Promise<TokenRecord | undefined> {
    this.#ensureOpen();
    const row = this.#sql.byHash.get(hash);
    return row && toRecord(row);
  }

  async findByIds(ids: readonly string[]): Promise<TokenRecord[]> {
    this.#ensureOpen();
    return this.#sql.byIds.all(JSON.stringify(ids)).map(toRecord);
  }

  async list(): Promise<TokenRecord[]> {
    return this.#sql.all.all().map(toRecord);
  }

  async revoke(idOrHash: string | Buffer, at: Date): Promise<boolean> {
    const r =
      typeof idOrHash === 'string'
        ? this.#sql.revokeById.run(at.getTime(), idOrHash)
        : this.#sql.revokeByHash.run(at.getTime(), idOrHash);
    return r.changes > 0;
  }
}
