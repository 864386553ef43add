// A writing transaction left open on PostgreSQL, as a slow request on any
// instance could hold one: it has logged the event of one create, through
// the store's own event SQL, and not committed yet.
import assert from 'node:assert/strict';
import pg from 'pg';
import { lockOwners, logEvent } from '../../src/store/postgres/event-log.postgres.js';

/** A create in the shape of the store's own statement: the owner's lock, the plant and its event, in one statement. */
export const RAW_CREATE = `WITH locked AS MATERIALIZED (${lockOwners('$1::text', '(VALUES (1)) AS one')}
  ), inserted AS (
    INSERT INTO plants (owner, id, name) SELECT $1::text, $2::int8, $3::text FROM locked RETURNING owner, id, name
  ), logged AS (${logEvent('plant.created', 'inserted', 'inserted.owner', 'inserted.id', 'inserted.name', 'NULL::text')}
  )
  SELECT count(*)::int AS n FROM inserted`;

/** A delete in the shape of the store's own statement. */
export const RAW_DELETE = `WITH locked AS MATERIALIZED (${lockOwners('$1::text', '(VALUES (1)) AS one')}
  ), deleted AS (
    DELETE FROM plants WHERE owner = $1::text AND id = $2::int8 AND EXISTS (SELECT FROM locked) RETURNING owner, id
  ), logged AS (${logEvent('plant.deleted', 'deleted', 'deleted.owner', 'deleted.id', 'NULL::text', 'NULL::text')}
  )
  SELECT count(*)::int AS n FROM deleted`;

/** Connects to `db` (directly, not through a pooler), begins, and creates the plant with its event. */
export async function openEventWriter(db: string, owner: string, id: bigint, name: string): Promise<pg.Client> {
  const raw = new pg.Client({ connectionString: db });
  await raw.connect();
  await raw.query('BEGIN');
  const { rows } = await raw.query<{ n: number }>(RAW_CREATE, [owner, id.toString(), name]);
  assert.equal(rows[0]!.n, 1);
  return raw;
}

/** Rolls back whatever is still open, and disconnects. */
export async function closeEventWriter(raw: pg.Client): Promise<void> {
  await raw.query('ROLLBACK').catch(() => {});
  await raw.end();
}
