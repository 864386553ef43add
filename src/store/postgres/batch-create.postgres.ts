import type pg from 'pg';
import { TooManyPlantsError, type BatchOutcome, type NewPlantRecord } from '../store.js';
import { operation } from '../operation.js';
import type { ColumnTuple } from '../rows.js';
import { inTransaction, run, writeWithClient } from './db-connect.postgres.js';
import { lockOwner, logEvent } from './event-log.postgres.js';
import { raceError } from './insert-batcher.postgres.js';
import type { PostgresRow } from './tables.postgres.js';

type Plant = PostgresRow<'plants'>;

// A batch is one transaction of a few statements. Locks: the owner's
// advisory lock comes first, in a statement of its own (lock): every plant
// write of the owner takes it, so each later statement, with a snapshot
// taken after the lock was granted, sees every plant of the owner there will
// be until the commit. Whether the batch conflicts, and the owner's count,
// are then exact, and the insert cannot collide; the insert takes its rows'
// locks as well. The lock is held to the commit (transaction-scoped).
const SQL = {
  lock: operation<[owner: string], { locks: bigint }>('plants_batch_lock', lockOwner('$1::text')),
  // The plants the owner has already among the batch's ids: the place in
  // the batch (from 1) and the stored content of each, read through the
  // (owner, id) key (a LATERAL with a LIMIT, as in insert-batcher.postgres.ts:
  // never a hash join planned while the table was small).
  stored: operation<[owner: string, ids: string[]], [n: number, ...ColumnTuple<Plant, ['name', 'tag']>]>(
    'plants_batch_stored',
    `SELECT i.n::int4, p.name, p.tag FROM unnest($2::int8[]) WITH ORDINALITY AS i(id, n)
    CROSS JOIN LATERAL (SELECT name, tag FROM plants WHERE owner = $1::text AND id = i.id LIMIT 1) p`,
    { rowMode: 'array' },
  ),
  // Counted only up to the cap, so a check costs at most the cap's rows of the
  // index; exactly only for the message of a refusal.
  countUpTo: operation<[owner: string, upTo: number], { n: number }>(
    'plants_owner_count_up_to',
    'SELECT count(*)::int4 AS n FROM (SELECT FROM plants WHERE owner = $1::text LIMIT $2::int4) AS upto',
  ),
  count: operation<[owner: string], { n: string }>(
    'plants_owner_count',
    'SELECT count(*)::int8::text AS n FROM plants WHERE owner = $1::text',
  ),
  // The new plants, in the batch's order (created_at and the events' ids follow it), with their events.
  insert: operation<[owner: string, ids: string[], names: string[], tags: (string | null)[]], { n: number }>(
    'plants_batch_insert',
    `WITH input AS (
      SELECT * FROM unnest($2::int8[], $3::text[], $4::text[]) WITH ORDINALITY AS i(id, name, tag, n)
    ), inserted AS (
      INSERT INTO plants (owner, id, name, tag) SELECT $1::text, id, name, tag FROM input ORDER BY n
      ON CONFLICT (owner, id) DO NOTHING
      RETURNING id, name, tag
    ), logged AS (${logEvent('plant.created', 'inserted JOIN input i USING (id)', '$1::text', 'i.id', 'i.name', 'i.tag', 'ORDER BY i.n')}
    )
    SELECT count(*)::int4 AS n FROM inserted`,
  ),
};

/** Thrown inside the transaction to roll it back with an answer; caught before it reaches the pool (which would drop the connection). */
class Refused {
  constructor(readonly outcome: BatchOutcome | TooManyPlantsError) {}
}

/**
 * Stores `plants` (no id twice) for `owner` in one transaction, or nothing:
 * see PlantStore.createMany.
 */
export async function createBatch(
  pool: pg.Pool,
  owner: string,
  plants: readonly NewPlantRecord[],
  maxPlants: number | undefined,
): Promise<BatchOutcome> {
  const result = await writeWithClient(pool, (client) =>
    inTransaction(client, async (): Promise<BatchOutcome> => {
      await run(client, SQL.lock, [owner]);
      const ids = plants.map((p) => p.id.toString());
      const { rows } = await run(client, SQL.stored, [owner, ids]);
      const outcomes: ('created' | 'replayed')[] = new Array(plants.length).fill('created');
      let conflict = plants.length;
      for (const [n, name, tag] of rows) {
        const plant = plants[n - 1]!;
        if (name === plant.name && tag === (plant.tag ?? null)) outcomes[n - 1] = 'replayed';
        else conflict = Math.min(conflict, n - 1);
      }
      if (conflict < plants.length) throw new Refused({ kind: 'conflict', index: conflict });
      const added = plants.filter((_, i) => outcomes[i] === 'created');
      if (added.length === 0) return { kind: 'stored', outcomes };
      if (maxPlants !== undefined) {
        const { rows: upTo } = await run(client, SQL.countUpTo, [owner, maxPlants]);
        if (upTo[0]!.n + added.length > maxPlants) {
          const { rows: counted } = await run(client, SQL.count, [owner]);
          throw new Refused(new TooManyPlantsError(Number(counted[0]!.n), maxPlants, added.length));
        }
      }
      const { rows: inserted } = await run(client, SQL.insert, [
        owner,
        added.map((p) => p.id.toString()),
        added.map((p) => p.name),
        added.map((p) => p.tag ?? null),
      ]);
      // Only a writer that skips the owner's lock (an import) can have stored one of these ids meanwhile.
      if (inserted[0]!.n !== added.length) throw raceError();
      return { kind: 'stored', outcomes };
    }).catch((error: unknown) => {
      if (error instanceof Refused) return error;
      throw error;
    }),
  );
  if (!(result instanceof Refused)) return result;
  if (result.outcome instanceof TooManyPlantsError) throw result.outcome;
  return result.outcome;
}
