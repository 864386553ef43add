import type Database from 'better-sqlite3';
import type { PlantDump, StoreTransfer, TokenDump } from '../store.js';
import { toRecord } from './tokens-store.sqlite.js';
import { boundLimit } from './bound-limit.js';
import type { ColumnTuple } from '../rows.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';

const BATCH = 1000;

const PLANT_COLUMNS = ['owner', 'seq', 'id', 'name', 'tag'] as const;
type PlantRow = ColumnTuple<SafeIntegers<SqliteRow<'plants'>>, typeof PLANT_COLUMNS>;

export class SqliteTransfer implements StoreTransfer {
  constructor(private readonly db: Database.Database) {}

  async *tokens(): AsyncIterable<TokenDump> {
    const rows = this.db
      .prepare<[], SqliteRow<'tokens'>>(
        'SELECT id, hash, owner, scopes, created_at, expires_at, revoked_at FROM tokens ORDER BY created_at, id',
      )
      .all();
    for (const r of rows) {
      yield { ...toRecord(r), hash: r.hash };
    }
  }

  async *plants(): AsyncIterable<PlantDump> {
    // Keyset over the (owner, seq) index: each batch is one short read, so
    // an export never holds a read transaction (and the WAL) for long.
    const page = this.db
      .prepare<[string, bigint, number]>(
        `SELECT ${PLANT_COLUMNS.join(', ')} FROM plants WHERE (owner, seq) > (?, ?) ORDER BY owner, seq ${boundLimit('?')}`,
      )
      .raw(true)
      .safeIntegers(true);
    let after: [string, bigint] = ['', -1n];
    for (;;) {
      const rows = page.all(after[0], after[1], BATCH) as PlantRow[];
      for (const [owner, , id, name, tag] of rows)
        yield { owner, plant: tag === null ? { id, name } : { id, name, tag } };
      if (rows.length < BATCH) return;
      const last = rows[rows.length - 1]!;
      after = [last[0], last[1]];
    }
  }

  async importTokens(tokens: readonly TokenDump[]): Promise<number> {
    // Without a conflict target, DO NOTHING covers both the id and the hash.
    const insert = this.db.prepare(
      'INSERT INTO tokens (id, hash, owner, scopes, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
    );
    let n = 0;
    this.db.transaction(() => {
      for (const t of tokens) {
        n += insert.run(
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
