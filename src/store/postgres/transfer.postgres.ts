import type pg from 'pg';
import type { PlantDump, StoreTransfer, TokenDump } from '../store.js';
import { withClient } from './db-connect.postgres.js';
import { toRecord } from './tokens-store.postgres.js';
import type { PostgresRow } from './tables.postgres.js';

const BATCH = 1000;

/** owner, created_at as UTC text with microseconds (a Date would drop them), id, name, tag. */
type Plant = PostgresRow<'plants'>;
type PlantRow = [owner: Plant['owner'], at: string, id: Plant['id'], name: Plant['name'], tag: Plant['tag']];

const AT_TEXT = `to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

export class PostgresTransfer implements StoreTransfer {
  constructor(private readonly pool: pg.Pool) {}

  async *tokens(): AsyncIterable<TokenDump> {
    const { rows } = await withClient(this.pool, (c) =>
      c.query<PostgresRow<'tokens'>>(
        'SELECT id, hash, owner, scopes, created_at, expires_at, revoked_at FROM tokens ORDER BY created_at, id',
      ),
    );
    for (const r of rows) {
      yield { ...toRecord(r), hash: r.hash };
    }
  }

  async *plants(): AsyncIterable<PlantDump> {
    let after: [string, string, string] | undefined;
    for (;;) {
      const { rows } = await withClient(this.pool, (c) =>
        c.query<PlantRow>({
          text: `SELECT owner, ${AT_TEXT}, id, name, tag FROM plants
            ${after ? `WHERE (owner, created_at, id) > ($2::text, $3::timestamp AT TIME ZONE 'UTC', $4::int8)` : ''}
            ORDER BY owner, created_at, id LIMIT $1::int8`,
          values: after ? [BATCH, ...after] : [BATCH],
          rowMode: 'array',
        }),
      );
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
      c.query({
        // Without a conflict target, DO NOTHING covers both the id and the hash.
        text: `INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at, revoked_at)
          SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::timestamptz[])
          ON CONFLICT DO NOTHING`,
        values: [
          tokens.map((t) => t.id),
          tokens.map((t) => t.hash),
          tokens.map((t) => t.owner),
          tokens.map((t) => t.scopes.join(' ')),
          tokens.map((t) => t.createdAt),
          tokens.map((t) => t.expiresAt ?? null),
          tokens.map((t) => t.revokedAt ?? null),
        ],
      }),
    );
    return rowCount ?? 0;
  }
}
