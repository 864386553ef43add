import type pg from 'pg';
import { EVENT_PRUNE_CHUNK, type EventLog, type PlantEvent, type WebhookEventType } from '../store.js';
import { withClient, writeWithClient } from './db-connect.postgres.js';

/**
 * Every transaction that logs a plant event takes this transaction-scoped
 * advisory lock first, so event ids are drawn and committed one transaction
 * at a time: ids increase in commit order, and a reader that saw id n has
 * seen every id below it. (A bare sequence gives no such promise: two
 * transactions can commit in the other order than they drew their ids, and a
 * reader past the later id would skip the earlier one for good.) It is held
 * only from the event's insert to the commit; transaction-scoped, it works
 * through a transaction-pooling PgBouncer too.
 */
const EVENT_LOCK = 0x706c616e745f6576n; // "plant_ev"

/**
 * A CTE body logging one event per row of `changed` (a CTE of the write), in
 * the write's own statement and so in its transaction. The other arguments
 * are SQL expressions over `changed` or the statement's parameters; `order`
 * an ORDER BY over them (ids follow it), or ''.
 */
export const logEvent = (
  type: string,
  changed: string,
  owner: string,
  plantId: string,
  name: string,
  tag: string,
  order = '',
) => `
    INSERT INTO plant_events (owner, type, plant_id, name, tag)
    SELECT ${owner}, '${type}', ${plantId}, ${name}, ${tag}
    FROM ${changed} CROSS JOIN (SELECT pg_advisory_xact_lock(${EVENT_LOCK})) AS event_lock ${order}`;

type EventRow = [
  id: string,
  owner: string,
  type: WebhookEventType,
  plantId: string,
  name: string | null,
  tag: string | null,
  at: string,
];

// Ordered by plant_events.id: a bare "id" in ORDER BY would name the text column below.
const COLUMNS = `id::text, owner, type, plant_id::text, name, tag, (extract(epoch FROM occurred_at) * 1000)::int8::text`;

const AFTER = {
  name: 'plant_events_after',
  text: `SELECT ${COLUMNS} FROM plant_events WHERE id > $1::int8 ORDER BY plant_events.id LIMIT $2::int4`,
  rowMode: 'array',
} as const;
const OWNER_AFTER = {
  name: 'plant_events_owner_after',
  text: `SELECT ${COLUMNS} FROM plant_events WHERE owner = $1::text AND id > $2::int8 AND id <= $3::int8 ORDER BY plant_events.id LIMIT $4::int4`,
  rowMode: 'array',
} as const;
const BOUNDS = {
  name: 'plant_events_bounds',
  text: 'SELECT min(id)::text AS oldest, max(id)::text AS newest FROM plant_events',
} as const;
// A prefix of at most EVENT_PRUNE_CHUNK rows, never the newest event (whose id
// tells new streams and resuming clients where the log is).
const PRUNE = {
  name: 'plant_events_prune',
  text: `WITH head AS (
      SELECT id, occurred_at FROM plant_events ORDER BY id LIMIT ${EVENT_PRUNE_CHUNK}
    ), newest AS (
      SELECT max(id) AS id FROM plant_events
    ), cut AS (
      SELECT LEAST(
        (SELECT max(head.id) FROM head),
        newest.id - 1,
        GREATEST((SELECT max(head.id) FROM head WHERE occurred_at < to_timestamp($1::float8 / 1000)), newest.id - $2::int8)
      ) AS id FROM newest
    )
    DELETE FROM plant_events WHERE id <= (SELECT id FROM cut)`,
} as const;

const toEvent = ([id, owner, type, plantId, name, tag, at]: EventRow): PlantEvent => ({
  id: BigInt(id),
  owner,
  type,
  plantId: BigInt(plantId),
  name,
  tag,
  occurredAt: Number(at),
});

export class PostgresEventLog implements EventLog {
  constructor(private readonly pool: pg.Pool) {}

  async after(after: bigint, limit: number): Promise<PlantEvent[]> {
    const { rows } = await withClient(this.pool, (c) =>
      c.query<EventRow>({ ...AFTER, values: [after.toString(), limit] }),
    );
    return rows.map(toEvent);
  }

  async ownerAfter(owner: string, after: bigint, upTo: bigint, limit: number): Promise<PlantEvent[]> {
    const { rows } = await withClient(this.pool, (c) =>
      c.query<EventRow>({ ...OWNER_AFTER, values: [owner, after.toString(), upTo.toString(), limit] }),
    );
    return rows.map(toEvent);
  }

  async bounds(): Promise<{ oldest: bigint | undefined; newest: bigint }> {
    const { rows } = await withClient(this.pool, (c) =>
      c.query<{ oldest: string | null; newest: string | null }>(BOUNDS),
    );
    const { oldest, newest } = rows[0]!;
    return { oldest: oldest === null ? undefined : BigInt(oldest), newest: BigInt(newest ?? 0) };
  }

  async prune(before: number, keep: number): Promise<number> {
    const { rowCount } = await writeWithClient(this.pool, (c) =>
      c.query({ ...PRUNE, values: [before, keep.toString()] }),
    );
    return rowCount ?? 0;
  }
}
