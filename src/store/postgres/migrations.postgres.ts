import { randomBytes } from 'node:crypto';
import { sql, type Kysely, type Migration } from 'kysely';

// Append-only: a released migration is never edited, a change is a new entry.
export const postgresMigrations: Record<string, Migration> = {
  '0001_plants_and_tokens': {
    async up(db: Kysely<unknown>) {
      // Keyed by owner first so the table can be distributed by owner
      // (Citus-style): every statement names one owner and stays on one node.
      // Insertion order comes from created_at, not a sequence, because a
      // global sequence would serialise writers across nodes; id breaks ties
      // between rows stamped in the same microsecond.
      await sql`CREATE TABLE plants (
        owner      text        NOT NULL,
        id         bigint      NOT NULL,
        name       text        NOT NULL,
        tag        text,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (owner, id)
      )`.execute(db);
      await sql`CREATE INDEX plants_owner_created_id ON plants (owner, created_at, id)`.execute(db);
      await sql`CREATE TABLE tokens (
        id         text        PRIMARY KEY,
        hash       bytea       NOT NULL UNIQUE,
        owner      text        NOT NULL,
        scopes     text        NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at timestamptz,
        revoked_at timestamptz
      )`.execute(db);
    },
  },
  '0002_cursor_key': {
    async up(db: Kysely<unknown>) {
      // List cursors are encrypted and authenticated with this key (see
      // cursor.postgres.ts). It lives in the database, written once by the
      // migration (which runs under the migrator's lock), so every instance
      // sharing the database accepts the cursors any of them issued.
      await sql`CREATE TABLE secrets (name text PRIMARY KEY, value bytea NOT NULL)`.execute(db);
      await sql`INSERT INTO secrets (name, value) VALUES ('cursor_key', ${randomBytes(32)})`.execute(db);
    },
  },
  '0003_webhooks': {
    async up(db: Kysely<unknown>) {
      // secret is the signing secret sealed with a key kept outside the
      // database (outbox/secret-box.ts); key_id names that key.
      await sql`CREATE TABLE webhook_endpoints (
        id              text        PRIMARY KEY,
        owner           text        NOT NULL,
        url             text        NOT NULL,
        events          text        NOT NULL,
        secret          bytea       NOT NULL,
        key_id          text        NOT NULL,
        created_at      timestamptz NOT NULL,
        disabled_at     timestamptz,
        disabled_reason text
      )`.execute(db);
      await sql`CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner)`.execute(db);
      // The outbox: one row per event and endpoint, written by the same
      // statement as the plant write, deleted once delivered. next_attempt_at
      // is also the lease: a claim moves it past the attempt, so no other
      // instance takes the row until the claim is settled or runs out. No
      // sequence: rows are ordered by time, like plants.
      await sql`CREATE TABLE webhook_deliveries (
        event_id        text        PRIMARY KEY,
        endpoint_id     text        NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        owner           text        NOT NULL,
        type            text        NOT NULL,
        plant_id        bigint      NOT NULL,
        name            text,
        tag             text,
        occurred_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
        attempts        integer     NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        claim           text,
        last_error      text
      )`.execute(db);
      // A claim walks the endpoints and takes each one's oldest due rows.
      await sql`CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at)`.execute(
        db,
      );
    },
  },
  '0004_webhook_event_log': {
    async up(db: Kysely<unknown>) {
      // One row per event, whatever the number of endpoints: a plant write's
      // cost does not grow with them. Claims fan the events out into
      // webhook_deliveries, off the request path.
      await sql`CREATE TABLE webhook_events (
        event_id    text        PRIMARY KEY,
        owner       text        NOT NULL,
        type        text        NOT NULL,
        plant_id    bigint      NOT NULL,
        name        text,
        tag         text,
        occurred_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`.execute(db);
      await sql`CREATE INDEX webhook_events_occurred ON webhook_events (occurred_at)`.execute(db);
      // Per endpoint: its waiting deliveries (bounded by --webhooks-max-pending),
      // when it may be claimed next (a lease while claimed, a backoff after a
      // failure), its failures in a row, and the claim that holds it.
      await sql`ALTER TABLE webhook_endpoints
        ADD COLUMN pending  integer     NOT NULL DEFAULT 0,
        ADD COLUMN retry_at timestamptz NOT NULL DEFAULT '-infinity',
        ADD COLUMN failures integer     NOT NULL DEFAULT 0,
        ADD COLUMN claim    text`.execute(db);
      await sql`UPDATE webhook_endpoints e SET pending =
        (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id)`.execute(db);
      await sql`CREATE INDEX webhook_endpoints_due ON webhook_endpoints (retry_at)
        WHERE disabled_at IS NULL AND pending > 0`.execute(db);
    },
  },
  '0005_plant_events': {
    async up(db: Kysely<unknown>) {
      // The log behind live streams, one row per plant event of any owner,
      // written by the plant write's own statement.
      await sql`CREATE TABLE plant_events (
        id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        owner       text        NOT NULL,
        type        text        NOT NULL,
        plant_id    bigint      NOT NULL,
        name        text,
        tag         text,
        occurred_at timestamptz NOT NULL DEFAULT clock_timestamp()
      )`.execute(db);
      await sql`CREATE INDEX plant_events_owner_id ON plant_events (owner, id)`.execute(db);
    },
  },
  '0006_plant_event_ids_by_transaction': {
    async up(db: Kysely<unknown>) {
      // Event ids come from the writing transaction's id from now on
      // (event-log.postgres.ts), so writers no longer queue for a sequence
      // under a lock. Without the identity, an insert that does not give the
      // id fails instead of drawing a small one that readers would skip.
      // The ids given out so far are at most the number of events ever
      // logged, and every event was logged by a writing transaction of at
      // most 256 events (the largest create batch), so they lie far below
      // (current transaction id << 20), where the new ids begin. Checked
      // all the same: a log copied in from another cluster could break it.
      await sql`DO $$
        BEGIN
          IF (SELECT max(id) FROM plant_events) >= (pg_current_xact_id()::text::int8 << 20) THEN
            RAISE EXCEPTION 'plant_events holds ids above where transaction-based ids begin; empty it (live streams then reset) and migrate again';
          END IF;
        END
      $$`.execute(db);
      await sql`ALTER TABLE plant_events ALTER COLUMN id DROP IDENTITY`.execute(db);
      // The largest id ever pruned: a Last-Event-ID below it missed removed
      // events. Ids skip numbers now, so the oldest id kept cannot tell.
      // Until now ids were drawn in order, so all below the oldest kept were
      // pruned (or never used, which a reset answers just as well).
      await sql`CREATE TABLE plant_events_pruned (
        one   boolean PRIMARY KEY DEFAULT true CHECK (one),
        up_to bigint  NOT NULL
      )`.execute(db);
      await sql`INSERT INTO plant_events_pruned (up_to) SELECT coalesce(min(id) - 1, 0) FROM plant_events`.execute(db);
    },
  },
  '0007_plants_by_tag': {
    async up(db: Kysely<unknown>) {
      // GET /plants?tag=: one owner's plants with one tag, in (created_at, id)
      // order, read as a range of this index. Built inside the migration's
      // transaction (CREATE INDEX CONCURRENTLY cannot be), so writes to
      // plants wait while it is built: on a large table, migrate at a quiet
      // time (docs/guides/postgresql.md).
      await sql`CREATE INDEX plants_owner_tag_created_id ON plants (owner, tag, created_at, id)`.execute(db);
    },
  },
  '0008_plant_events_owner_pruned': {
    async up(db: Kysely<unknown>) {
      // The largest event id pruned of one owner by its cap on kept events
      // (rows only above the mark of pruning by age, which covers every owner).
      await sql`CREATE TABLE plant_events_owner_pruned (
        owner text   PRIMARY KEY,
        up_to bigint NOT NULL
      )`.execute(db);
    },
  },
  '0009_webhook_deliveries_failed': {
    async up(db: Kysely<unknown>) {
      // A delivery whose last attempt failed is kept, marked failed, for
      // `webhook redeliver` (and POST /admin/webhooks/{id}/redeliver) to queue
      // again; no claim takes it, as its next attempt is 'infinity'. Failed
      // ones are removed with the event log's pruning by age.
      await sql`ALTER TABLE webhook_deliveries ADD COLUMN failed_at timestamptz`.execute(db);
      await sql`CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (failed_at)
        WHERE failed_at IS NOT NULL`.execute(db);
    },
  },
  '0010_one_event_log': {
    async up(db: Kysely<unknown>) {
      // Webhook deliveries fan out from plant_events, the one event log, from
      // the position kept here: every readable event up to it has been given
      // to the endpoints subscribed (see event-log.postgres.ts for readable).
      await sql`CREATE TABLE webhook_fan_out (
        one   boolean PRIMARY KEY DEFAULT true CHECK (one),
        up_to bigint  NOT NULL
      )`.execute(db);
      await sql`INSERT INTO webhook_fan_out (up_to) SELECT coalesce(max(id), 0) FROM plant_events`.execute(db);
      // An endpoint gets the events logged after it was registered.
      await sql`ALTER TABLE webhook_endpoints ADD COLUMN from_event bigint NOT NULL DEFAULT 0`.execute(db);
      // The events not yet fanned out are fanned out now, as a claim would.
      await sql`INSERT INTO webhook_deliveries
          (event_id, endpoint_id, owner, type, plant_id, name, tag, occurred_at, next_attempt_at)
        SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, w.owner, w.type, w.plant_id, w.name, w.tag,
          w.occurred_at, w.occurred_at
        FROM webhook_events w JOIN webhook_endpoints e ON e.owner = w.owner
        WHERE e.disabled_at IS NULL AND w.type = ANY (string_to_array(e.events, ' '))`.execute(db);
      await sql`UPDATE webhook_endpoints e SET pending =
        (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.failed_at IS NULL)`.execute(db);
      // Each waiting delivery's event, logged below id 0: below every id a
      // live stream reads (Last-Event-ID is never negative), so streams do
      // not see these copies again, in the order they were written.
      await sql`INSERT INTO plant_events (id, owner, type, plant_id, name, tag, occurred_at)
        SELECT row_number() OVER (ORDER BY occurred_at, first) - count(*) OVER () - 1,
          owner, type, plant_id, name, tag, occurred_at
        FROM (
          SELECT min(event_id) AS first, owner, type, plant_id, name, tag, occurred_at
          FROM webhook_deliveries GROUP BY owner, type, plant_id, name, tag, occurred_at
        ) AS waiting`.execute(db);
      // The outbox keeps a reference to the event, not a copy of it.
      await sql`ALTER TABLE webhook_deliveries ADD COLUMN event bigint`.execute(db);
      await sql`UPDATE webhook_deliveries d SET event = p.id FROM plant_events p
        WHERE p.id < 0 AND p.owner = d.owner AND p.type = d.type AND p.plant_id = d.plant_id
          AND p.name IS NOT DISTINCT FROM d.name AND p.tag IS NOT DISTINCT FROM d.tag
          AND p.occurred_at = d.occurred_at`.execute(db);
      await sql`ALTER TABLE webhook_deliveries
        ALTER COLUMN event SET NOT NULL,
        DROP COLUMN owner, DROP COLUMN type, DROP COLUMN plant_id, DROP COLUMN name, DROP COLUMN tag,
        DROP COLUMN occurred_at`.execute(db);
      // What pruning looks up: the oldest event a delivery still needs.
      await sql`CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event)`.execute(db);
      await sql`DROP TABLE webhook_events`.execute(db);
    },
  },
};
