import type pg from 'pg';
import type { PlantDump, StoreTransfer, TokenDump } from '../store.js';
import { operation } from '../operation.js';
import { run, withClient } from './db-connect.postgres.js';
import { toRecord } from './tokens-store.postgres.js';
import type { PostgresRow } from './tables.postgres.js';

const BATCH = 1000;

type Plant = PostgresRow<'plants'>;
/** owner, created_at as UTC text with microseconds (a Date would drop them), id, name, tag. */
type PlantRow = [owner: Plant['owner'], at: string, id: Plant['id'], name: Plant['name'], tag: Plant['tag']];

const AT_TEXT = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;
/** Before every plant: no owner is named '' (OWNER_SHAPE). */
const START: [owner: string, at: string, id: string] = ['', '1970-01-01T00:00:00', '0'];

// The operations of export and import. Locks: none held; each read is one
// statement with a snapshot of its own, so an export never holds a
// transaction (and the removal of old row versions) open for long; it sees
// what was committed before each batch. The import of tokens is one
// statement, taking the row locks of the rows it inserts.
const SQL = {
  tokens: operation<[], PostgresRow<'tokens'>>(
    'transfer_tokens',
    'SELECT id, hash, owner, scopes, created_at, expires_at, revoked_at FROM tokens ORDER BY created_at, id',
  ),
  /** Keyset over the (owner, created_at, id) index: each batch one short read. */
  plantsAfter: operation<[limit: number, owner: string, at: string, id: string], PlantRow>(
    'transfer_plants_after',
    `SELECT owner, ${AT_TEXT}, id, name, tag FROM plants
    WHERE (owner, created_at, id) > ($2::text, $3::timestamp AT TIME ZONE 'UTC', $4::int8)
    ORDER BY owner, created_at, id LIMIT $1::int8`,
    { rowMode: 'array' },
  ),
  /** Without a conflict target, DO NOTHING covers both the id and the hash. */
  importTokens: operation<
    [
      ids: string[],
      hashes: Buffer[],
      owners: string[],
      scopes: string[],
      createdAt: Date[],
      expiresAt: (Date | null)[],
      revokedAt: (Date | null)[],
    ]
  >(
    'transfer_import_tokens',
    `INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at, revoked_at)
    SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[])
    ON CONFLICT DO NOTHING`,
  ),
};

export class PostgresTransfer implements StoreTransfer {
  constructor(private readonly pool: pg.Pool) {}

  async *tokens(): AsyncIterable<TokenDump> {
    const { rows } = await withClient(this.pool, (c) => run(c, SQL.tokens, []));
    for (const r of rows) {
      yield { ...toRecord(r), hash: r.hash };
    }
  }

  async *plants(): AsyncIterable<PlantDump> {
    let after = START;
    for (;;) {
      const { rows } = await withClient(this.pool, (c) => run(c, SQL.plantsAfter, [BATCH, ...after]));
      for (const [owner, , id, name, tag] of rows)
        yield { owner, plant: tag === null ? { id, name } : { id, name, tag } };
      if (rows.length < BATCH) return;
      const last = rows[rows.length - 1]!;
      after = [last[0], last[1], last[2].toString()];
    }
  }

  async importTokens(tokens: readonly TokenDump[]): Promise<number> {
    if (tokens.length === 0) return 0;
    const { rowCount } = await withClient(this.pool, (c) =>
      run(c, SQL.importTokens, [
        tokens.map((t) => t.id),
        tokens.map((t) => t.hash),
        tokens.map((t) => t.owner),
        tokens.map((t) => t.scopes.join(' ')),
        tokens.map((t) => t.createdAt),
        tokens.map((t) => t.expiresAt ?? null),
        tokens.map((t) => t.revokedAt ?? null),
      ]),
    );
    return rowCount ?? 0;
  }
}
