import type Database from 'better-sqlite3';
import { StoreUnavailableError, type Scope, type TokenRecord, type TokenStore } from '../store.js';
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

const tokenValues = (t: TokenRecord, hash: Buffer): [string, Buffer, string, string, number, number | null] => [
  t.id,
  hash,
  t.owner,
  t.scopes.join(' '),
  t.createdAt.getTime(),
  t.expiresAt?.getTime() ?? null,
];

export class SqliteTokenStore implements TokenStore {
  readonly #insert: Database.Statement<[string, Buffer, string, string, number, number | null]>;
  readonly #insertFirst: Database.Statement<[string, Buffer, string, string, number, number | null]>;
  readonly #byHash: Database.Statement<[Buffer], TokenRow>;
  readonly #byIds: Database.Statement<[string], TokenRow>;
  readonly #all: Database.Statement<[], TokenRow>;
  readonly #revokeById: Database.Statement<[number, string]>;
  readonly #revokeByHash: Database.Statement<[number, Buffer]>;

  constructor(private readonly db: Database.Database) {
    this.#insert = db.prepare(
      'INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#insertFirst = db.prepare(
      'INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at) SELECT ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM tokens)',
    );
    this.#byHash = db.prepare(
      'SELECT id, owner, scopes, created_at, expires_at, revoked_at FROM tokens WHERE hash = ?',
    );
    // One parameter, a JSON array, however many ids: no statement per count, no limit on variables.
    this.#byIds = db.prepare(
      'SELECT id, owner, scopes, created_at, expires_at, revoked_at FROM tokens WHERE id IN (SELECT value FROM json_each(?))',
    );
    this.#all = db.prepare(
      'SELECT id, owner, scopes, created_at, expires_at, revoked_at FROM tokens ORDER BY created_at, id',
    );
    this.#revokeById = db.prepare('UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?');
    this.#revokeByHash = db.prepare('UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE hash = ?');
  }

  async insert(t: TokenRecord, hash: Buffer): Promise<void> {
    this.#insert.run(...tokenValues(t, hash));
  }

  // One statement, so the "no token yet" check and the insert happen under
  // the same write lock.
  async insertFirst(t: TokenRecord, hash: Buffer): Promise<boolean> {
    return this.#insertFirst.run(...tokenValues(t, hash)).changes === 1;
  }

  // A closed store (shutting down) is unavailable, like an unreachable database.
  #ensureOpen(): void {
    if (!this.db.open) throw new StoreUnavailableError(new Error('the SQLite store is closed'));
  }

  async findByHash(hash: Buffer): Promise<TokenRecord | undefined> {
    this.#ensureOpen();
    const row = this.#byHash.get(hash);
    return row && toRecord(row);
  }

  async findByIds(ids: readonly string[]): Promise<TokenRecord[]> {
    this.#ensureOpen();
    return this.#byIds.all(JSON.stringify(ids)).map(toRecord);
  }

  async list(): Promise<TokenRecord[]> {
    return this.#all.all().map(toRecord);
  }

  async revoke(idOrHash: string | Buffer, at: Date): Promise<boolean> {
    const r =
      typeof idOrHash === 'string'
        ? this.#revokeById.run(at.getTime(), idOrHash)
        : this.#revokeByHash.run(at.getTime(), idOrHash);
    return r.changes > 0;
  }
}
