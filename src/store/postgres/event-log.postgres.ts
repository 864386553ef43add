import type pg from 'pg';
import { EVENT_PRUNE_CHUNK, type EventLog, type PlantEvent } from '../store.js';
import { toPlantEvent, type ColumnTuple } from '../rows.js';
import type { PostgresRow } from './tables.postgres.js';
import { operation } from '../operation.js';
import { run, withClient, writeWithClient } from './db-connect.postgres.js';

/**
 * Event ids on PostgreSQL are (writing transaction's id << ORDINAL_BITS) +
 * the row's place in its statement, so no writer waits for another to draw
 * one. Readers see only ids below READABLE (the horizon): every transaction
 * with an id below the snapshot's xmin has ended, so no event can appear
 * below it any more, while events of younger transactions wait until the
 * horizon passes them. Ids thus increase in the order readers get them,
 * which is the order the writing transactions got their ids: a write made
 * after another was answered comes after it, while writes in flight together
 * may come in another order than they committed. Events logged before
 * migration 0006 keep their smaller sequence ids, below all of these (that
 * migration checks it).
 *
 * What this costs: a transaction that has written anything, anywhere in the
 * cluster (any database), holds the horizon, and with it the delivery of
 * every later event, until it ends; a transaction left open stops live
 * events until it is closed. Read-only transactions have no id and hold
 * nothing. Both are plain expressions in one statement, with no session
 * state, so they work as well through PgBouncer in transaction mode.
 *
 * The int8 id overflows once transaction ids reach 2^(63 - ORDINAL_BITS) =
 * 2^43 (pg_current_xact_id() is the 64-bit id, which never wraps): about
 * 27 years at 10 000 writing transactions a second.
 */
export const ORDINAL_BITS = 20;
/** Events one statement can log; see logEvent. */
export const MAX_EVENTS_PER_STATEMENT = 2 ** ORDINAL_BITS;

/** The id of the first event of every transaction not yet ended, or above; the ids below it are final. */
export const READABLE = `(pg_snapshot_xmin(pg_current_snapshot())::text::int8 << ${ORDINAL_BITS})`;

/**
 * A CTE body logging one event per row of `changed` (a CTE of the write), in
 * the write's own statement and so in its transaction. The other arguments
 * are SQL expressions over `changed` or the statement's parameters; `order`
 * an ORDER BY over them (ids follow it), or ''.
 *
 * Every event-writing transaction must be this one statement: a second one
 * in the same transaction would draw the same ids again. It then fails on
 * the primary key, loudly, rather than having its events share a place. A
 * statement with more than MAX_EVENTS_PER_STATEMENT rows would reach into
 * the next transaction's ids; its id is then NULL, and it fails too.
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
    INSERT INTO plant_events (id, owner, type, plant_id, name, tag)
    SELECT (pg_current_xact_id()::text::int8 << ${ORDINAL_BITS})
        + CASE WHEN row_number() OVER (${order}) <= ${MAX_EVENTS_PER_STATEMENT} THEN row_number() OVER (${order}) - 1 END,
      ${owner}, '${type}', ${plantId}, ${name}, ${tag}
    FROM ${changed} ${order}`;

/** The owner locks' hash seed, so their keys are not the plain hashes other code might lock. */
const OWNER_LOCK_SEED = 0x706c616e74;

/**
 * A CTE body that takes, in one fixed order, a transaction-scoped advisory
 * lock per owner in `owners` (an SQL expression over `source`). A write
 * statement's first write must depend on it (join it, or test it in the
 * WHERE), so the lock is held before the transaction writes anything and so
 * before it gets its transaction id, and until it ends. Two transactions
 * writing for the same owner then get their ids, and so their events' ids,
 * in the order they commit: a create that would wait on a concurrent delete
 * of the same plant waits here instead, and its events come after the
 * delete's, as it committed. Writes of different owners never wait for each
 * other (two owners may share a lock key; they then only take turns).
 */
export const lockOwners = (owners: string, source: string) => `
    SELECT count(pg_advisory_xact_lock(k)) AS locks
    FROM (SELECT DISTINCT hashtextextended(${owners}, ${OWNER_LOCK_SEED}) AS k FROM ${source} ORDER BY k) AS keys`;

/** lockOwners for a statement that writes for one owner, given as an SQL expression (a parameter). */
export const lockOwner = (owner: string) => lockOwners(owner, '(VALUES (1)) AS one');

const EVENT_COLUMNS = ['id', 'owner', 'type', 'plant_id', 'name', 'tag'] as const;
/** The event's columns, and when it happened in milliseconds since the epoch. */
type EventRow = [...ColumnTuple<PostgresRow<'plant_events'>, typeof EVENT_COLUMNS>, occurredAtMs: bigint];
const COLUMNS = `${EVENT_COLUMNS.join(', ')}, (extract(epoch FROM occurred_at) * 1000)::int8`;

/**
 * The oldest event webhook delivery still needs, or NULL: the first not yet
 * fanned out (while an endpoint is active), and every event a delivery
 * refers to, pending or failed. Pruning stops below it.
 */
const DELIVERY_NEEDS = `SELECT LEAST(
    (SELECT up_to + 1 FROM webhook_fan_out WHERE EXISTS (SELECT FROM webhook_endpoints WHERE disabled_at IS NULL)),
    (SELECT min(event) FROM webhook_deliveries))`;
/** DELIVERY_NEEDS for one owner's events ($1). */
const OWNER_DELIVERY_NEEDS = `SELECT LEAST(
    (SELECT up_to + 1 FROM webhook_fan_out
     WHERE EXISTS (SELECT FROM webhook_endpoints WHERE owner = $1::text AND disabled_at IS NULL)),
    (SELECT min(d.event) FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id
     WHERE e.owner = $1::text))`;

// The event log's operations. Locks: reads take none, and see only ids
// below READABLE, so no commit can add an event below what they return.
// Pruning takes the row locks of the rows it deletes and of the mark it
// raises (one row, or the owner's), so two instances pruning at once take
// turns on the same rows and the second finds them gone.
const SQL = {
  after: operation<[after: string, limit: number], EventRow>(
    'plant_events_after',
    `SELECT ${COLUMNS} FROM plant_events WHERE id > $1::int8 AND id < ${READABLE} ORDER BY plant_events.id LIMIT $2::int4`,
    { rowMode: 'array' },
  ),
  ownerAfter: operation<[owner: string, after: string, upTo: string, limit: number], EventRow>(
    'plant_events_owner_after',
    `SELECT ${COLUMNS} FROM plant_events
    WHERE owner = $1::text AND id > $2::int8 AND id <= $3::int8 AND id < ${READABLE}
    ORDER BY plant_events.id LIMIT $4::int4`,
    { rowMode: 'array' },
  ),
  bounds: operation<[owner: string | null], { pruned: bigint; newest: bigint | null }>(
    'plant_events_bounds',
    `SELECT GREATEST((SELECT up_to FROM plant_events_pruned),
        (SELECT up_to FROM plant_events_owner_pruned WHERE owner = $1::text)) AS pruned,
      (SELECT GREATEST(max(id), 0) FROM plant_events WHERE id < ${READABLE}) AS newest`,
  ),
  // By age: a prefix of at most EVENT_PRUNE_CHUNK readable rows, never the
  // newest readable event (whose id tells new streams and resuming clients
  // where the log is), and the mark of the largest id removed, in one
  // statement; owners' marks it passes are forgotten. (LEAST passes over
  // NULLs: with no old event, the cut is 0, removing nothing.) Locks: the
  // rows it deletes, and the mark's one row when it removed any.
  pruneByAge: operation<[before: number], { n: number }>(
    'plant_events_prune_by_age',
    `WITH readable AS (
      SELECT ${READABLE} AS below
    ), head AS (
      SELECT id, occurred_at FROM plant_events WHERE id < (SELECT below FROM readable) ORDER BY id LIMIT ${EVENT_PRUNE_CHUNK}
    ), newest AS (
      SELECT max(id) AS id FROM plant_events WHERE id < (SELECT below FROM readable)
    ), cut AS (
      SELECT LEAST(
        newest.id - 1,
        coalesce((SELECT max(head.id) FROM head WHERE occurred_at < to_timestamp($1::float8 / 1000)), 0),
        (${DELIVERY_NEEDS}) - 1
      ) AS id FROM newest
    ), removed AS (
      DELETE FROM plant_events WHERE id <= (SELECT id FROM cut) RETURNING id
    ), marked AS (
      UPDATE plant_events_pruned SET up_to = GREATEST(up_to, (SELECT max(id) FROM removed))
      WHERE EXISTS (SELECT FROM removed)
      RETURNING up_to
    ), forgotten AS (
      DELETE FROM plant_events_owner_pruned WHERE up_to <= (SELECT up_to FROM marked)
    )
    SELECT count(*)::int AS n FROM removed`,
  ),
  // The owners of the readable events after $1 (at most $2 of them looked at).
  loggedOwners: operation<[after: string, limit: number], { owner: string; last: string; n: number }>(
    'plant_events_logged_owners',
    `SELECT owner, max(id)::text AS last, count(*)::int AS n FROM (
      SELECT owner, id FROM plant_events WHERE id > $1::int8 AND id < ${READABLE} ORDER BY id LIMIT $2::int4
    ) AS logged GROUP BY owner`,
  ),
  // By count, for one owner: its events up to the newest beyond its newest $2
  // (counted, as ids skip numbers), at most EVENT_PRUNE_CHUNK of them, and its
  // mark, in one statement. `more`: it has more beyond its cap. Locks: the
  // rows it deletes and the owner's mark; other owners' writes go on.
  pruneOwner: operation<[owner: string, keep: string], { n: number; more: boolean }>(
    'plant_events_prune_owner',
    `WITH wanted AS (
      SELECT (SELECT id FROM plant_events WHERE owner = $1::text AND id < ${READABLE}
        ORDER BY id DESC OFFSET $2::int8 LIMIT 1) AS id
    ), chunk AS (
      SELECT max(id) AS id FROM (SELECT id FROM plant_events WHERE owner = $1::text ORDER BY id LIMIT ${EVENT_PRUNE_CHUNK}) AS h
    ), needs AS (
      ${OWNER_DELIVERY_NEEDS} AS id
    ), cut AS (
      SELECT CASE
          WHEN wanted.id IS NULL THEN NULL
          WHEN needs.id IS NULL OR needs.id > LEAST(wanted.id, chunk.id) THEN LEAST(wanted.id, chunk.id)
          ELSE (SELECT max(id) FROM plant_events WHERE owner = $1::text AND id < needs.id)
        END AS id,
        -- Held by webhook delivery: not more to remove now (looked at again when the owner logs more).
        CASE WHEN needs.id IS NULL OR needs.id > LEAST(wanted.id, chunk.id) THEN wanted.id END AS wanted
      FROM wanted, chunk, needs
    ), removed AS (
      DELETE FROM plant_events WHERE owner = $1::text AND id <= (SELECT id FROM cut) RETURNING id
    ), marked AS (
      INSERT INTO plant_events_owner_pruned (owner, up_to)
      SELECT $1::text, max(id) FROM removed HAVING count(*) > 0
      ON CONFLICT (owner) DO UPDATE SET up_to = GREATEST(plant_events_owner_pruned.up_to, excluded.up_to)
    )
    SELECT count(*)::int AS n, coalesce((SELECT id < wanted FROM cut), false) AS more FROM removed`,
  ),

  // Failed deliveries go with the events of their age (the partial index
  // webhook_deliveries_failed). Locks: the rows it deletes; no claim holds a
  // failed delivery (its next attempt is 'infinity').
  forgetFailed: operation<[before: number]>(
    'webhook_deliveries_forget_failed',
    'DELETE FROM webhook_deliveries WHERE failed_at < to_timestamp($1::float8 / 1000)',
  ),
};

export class PostgresEventLog implements EventLog {
  constructor(private readonly pool: pg.Pool) {}

  async after(after: bigint, limit: number): Promise<PlantEvent[]> {
    const { rows } = await withClient(this.pool, (c) => run(c, SQL.after, [after.toString(), limit]));
    return rows.map(toPlantEvent);
  }

  async ownerAfter(owner: string, after: bigint, upTo: bigint, limit: number): Promise<PlantEvent[]> {
    const { rows } = await withClient(this.pool, (c) =>
      run(c, SQL.ownerAfter, [owner, after.toString(), upTo.toString(), limit]),
    );
    return rows.map(toPlantEvent);
  }

  async bounds(owner?: string): Promise<{ pruned: bigint; newest: bigint }> {
    const { rows } = await withClient(this.pool, (c) => run(c, SQL.bounds, [owner ?? null]));
    const { pruned, newest } = rows[0]!;
    return { pruned, newest: newest ?? 0n };
  }

  /** Every owner of the events up to this id has been looked at, by this process. */
  #lookedUpTo = 0n;

  async prune(before: number, keep: number): Promise<{ removed: number; more: boolean }> {
    await writeWithClient(this.pool, (c) => run(c, SQL.forgetFailed, [before]));
    const { rows } = await writeWithClient(this.pool, (c) => run(c, SQL.pruneByAge, [before]));
    const aged = rows[0]!.n;
    const logged = await withClient(this.pool, (c) =>
      run(c, SQL.loggedOwners, [this.#lookedUpTo.toString(), EVENT_PRUNE_CHUNK]),
    );
    let capped = 0;
    let scanned = 0;
    let last = this.#lookedUpTo;
    let ownerLeft = false;
    for (const { owner, last: id, n } of logged.rows) {
      scanned += n;
      if (BigInt(id) > last) last = BigInt(id);
      const { rows: cut } = await writeWithClient(this.pool, (c) =>
        // Each owner keeps its newest event at least, so the log's newest stays.
        run(c, SQL.pruneOwner, [owner, Math.max(1, keep).toString()]),
      );
      capped += cut[0]!.n;
      if (cut[0]!.more) ownerLeft = true;
    }
    // An owner with more to remove is looked at again next round.
    if (!ownerLeft) this.#lookedUpTo = last;
    return {
      removed: aged + capped,
      more: aged >= EVENT_PRUNE_CHUNK || ownerLeft || scanned >= EVENT_PRUNE_CHUNK,
    };
  }
}
