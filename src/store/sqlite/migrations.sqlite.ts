import { sql, type Kysely, type Migration } from 'kysely';

// Append-only: a released migration is never edited, a change is a new entry.
export const sqliteMigrations: Record<string, Migration> = {
  '0001_plants_and_tokens': {
    async up(db: Kysely<unknown>) {
      // seq is the rowid: the insertion order that keyset pages follow.
      await sql`CREATE TABLE plants (
        seq   INTEGER PRIMARY KEY,
        owner TEXT    NOT NULL,
        id    INTEGER NOT NULL,
        name  TEXT    NOT NULL,
        tag   TEXT,
        UNIQUE (owner, id)
      )`.execute(db);
      await sql`CREATE INDEX plants_owner_seq ON plants (owner, seq)`.execute(db);
      await sql`CREATE TABLE tokens (
        id         TEXT    PRIMARY KEY,
        hash       BLOB    NOT NULL UNIQUE,
        owner      TEXT    NOT NULL,
        scopes     TEXT    NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        revoked_at INTEGER
      )`.execute(db);
    },
  },
  '0002_cursor_key': {
    async up(db: Kysely<unknown>) {
      // List cursors are encrypted with this key, so they do not reveal the
      // global row position (and with it how much other owners insert).
      // Kept in the database: every process serving this file must agree on it.
      await sql`CREATE TABLE secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL)`.execute(db);
      await sql`INSERT INTO secrets (name, value) VALUES ('cursor_key', randomblob(16))`.execute(db);
    },
  },
  '0003_webhooks': {
    async up(db: Kysely<unknown>) {
      // secret is the signing secret sealed with a key kept outside the
      // database (outbox/secret-box.ts); key_id names that key.
      await sql`CREATE TABLE webhook_endpoints (
        id              TEXT    PRIMARY KEY,
        owner           TEXT    NOT NULL,
        url             TEXT    NOT NULL,
        events          TEXT    NOT NULL,
        secret          BLOB    NOT NULL,
        key_id          TEXT    NOT NULL,
        created_at      INTEGER NOT NULL,
        disabled_at     INTEGER,
        disabled_reason TEXT
      )`.execute(db);
      await sql`CREATE INDEX webhook_endpoints_owner ON webhook_endpoints (owner)`.execute(db);
      // The outbox: one row per event and endpoint, written in the plant
      // write's transaction, deleted once delivered. event_id is random
      // (128 bits) and found by seq, so it needs no index of its own, which
      // would cost every insert a write at a random place. next_attempt_at is also
      // the lease: a claim moves it past the attempt, so no other process
      // takes the row until the claim is settled or runs out.
      await sql`CREATE TABLE webhook_deliveries (
        seq             INTEGER PRIMARY KEY,
        event_id        TEXT    NOT NULL,
        endpoint_id     TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        type            TEXT    NOT NULL,
        plant_id        INTEGER NOT NULL,
        name            TEXT,
        tag             TEXT,
        occurred_at     INTEGER NOT NULL,
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        claim           TEXT,
        last_error      TEXT
      )`.execute(db);
      await sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)`.execute(db);
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
        seq         INTEGER PRIMARY KEY,
        owner       TEXT    NOT NULL,
        type        TEXT    NOT NULL,
        plant_id    INTEGER NOT NULL,
        name        TEXT,
        tag         TEXT,
        occurred_at INTEGER NOT NULL
      )`.execute(db);
      // Per endpoint: its waiting deliveries (bounded by --webhooks-max-pending),
      // when it may be claimed next (a lease while claimed, a backoff after a
      // failure), its failures in a row, and the claim that holds it.
      await sql`ALTER TABLE webhook_endpoints ADD COLUMN pending INTEGER NOT NULL DEFAULT 0`.execute(db);
      await sql`ALTER TABLE webhook_endpoints ADD COLUMN retry_at INTEGER NOT NULL DEFAULT 0`.execute(db);
      await sql`ALTER TABLE webhook_endpoints ADD COLUMN failures INTEGER NOT NULL DEFAULT 0`.execute(db);
      await sql`ALTER TABLE webhook_endpoints ADD COLUMN claim TEXT`.execute(db);
      await sql`UPDATE webhook_endpoints SET pending =
        (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = webhook_endpoints.id)`.execute(db);
      // What a claim and an idle poll look for: active endpoints with work, by when they are due.
      await sql`CREATE INDEX webhook_endpoints_due ON webhook_endpoints (retry_at)
        WHERE disabled_at IS NULL AND pending > 0`.execute(db);
      // Polls read the endpoints now, not the deliveries.
      await sql`DROP INDEX webhook_deliveries_due`.execute(db);
    },
  },
  '0005_plant_events': {
    async up(db: Kysely<unknown>) {
      // The log behind live streams, one row per plant event of any owner,
      // written in the plant write's transaction. AUTOINCREMENT: an id is never
      // reused, even after the newest rows are pruned, so a client's
      // Last-Event-ID can never point at a different event.
      await sql`CREATE TABLE plant_events (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        owner       TEXT    NOT NULL,
        type        TEXT    NOT NULL,
        plant_id    INTEGER NOT NULL,
        name        TEXT,
        tag         TEXT,
        occurred_at INTEGER NOT NULL
      )`.execute(db);
      await sql`CREATE INDEX plant_events_owner_id ON plant_events (owner, id)`.execute(db);
    },
  },
  '0006_plant_events_pruned': {
    async up(db: Kysely<unknown>) {
      // The largest event id ever pruned: a Last-Event-ID below it missed
      // removed events (see EventLog). Ids here are drawn in order and a
      // rolled-back one is drawn again, so until now all ids below the
      // oldest kept were pruned.
      await sql`CREATE TABLE plant_events_pruned (
        one   INTEGER PRIMARY KEY CHECK (one = 1),
        up_to INTEGER NOT NULL
      )`.execute(db);
      await sql`INSERT INTO plant_events_pruned (one, up_to) SELECT 1, coalesce(min(id) - 1, 0) FROM plant_events`.execute(
        db,
      );
    },
  },
  '0007_plants_by_tag': {
    async up(db: Kysely<unknown>) {
      // GET /plants?tag=: one owner's plants with one tag, in seq order, read
      // as a range of this index. Without it, a filtered page would walk the
      // owner's whole list. Plants without a tag (NULL) are in it too, as
      // they are in every SQLite index; they cost only their entries.
      await sql`CREATE INDEX plants_owner_tag_seq ON plants (owner, tag, seq)`.execute(db);
    },
  },
  '0008_plant_events_owner_pruned': {
    async up(db: Kysely<unknown>) {
      // The largest event id pruned of one owner by its cap on kept events
      // (rows only above the mark of pruning by age, which covers every owner).
      await sql`CREATE TABLE plant_events_owner_pruned (
        owner TEXT    PRIMARY KEY,
        up_to INTEGER NOT NULL
      )`.execute(db);
    },
  },
  '0009_webhook_deliveries_failed': {
    async up(db: Kysely<unknown>) {
      // A delivery whose last attempt failed is kept, marked failed, for
      // `webhook redeliver` (and POST /admin/webhooks/{id}/redeliver) to queue
      // again; no claim takes it, as its next attempt is set past every
      // clock. Failed ones are removed with the event log's pruning by age.
      await sql`ALTER TABLE webhook_deliveries ADD COLUMN failed_at INTEGER`.execute(db);
      await sql`CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (failed_at)
        WHERE failed_at IS NOT NULL`.execute(db);
    },
  },
  '0010_one_event_log': {
    async up(db: Kysely<unknown>) {
      // Webhook deliveries fan out from plant_events, the one event log, from
      // the position kept here: every event up to it has been given to the
      // endpoints subscribed. (SQLite has one writer: ids are given out in
      // commit order, so an event below the newest one can no longer appear.)
      await sql`CREATE TABLE webhook_fan_out (
        one   INTEGER PRIMARY KEY CHECK (one = 1),
        up_to INTEGER NOT NULL
      )`.execute(db);
      await sql`INSERT INTO webhook_fan_out (one, up_to) SELECT 1, coalesce(max(id), 0) FROM plant_events`.execute(db);
      // An endpoint gets the events logged after it was registered.
      await sql`ALTER TABLE webhook_endpoints ADD COLUMN from_event INTEGER NOT NULL DEFAULT 0`.execute(db);
      // The events not yet fanned out are fanned out now, as a claim would.
      await sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, type, plant_id, name, tag, occurred_at, next_attempt_at)
        SELECT 'msg_' || lower(hex(randomblob(16))), e.id, w.type, w.plant_id, w.name, w.tag, w.occurred_at, w.occurred_at
        FROM webhook_events w JOIN webhook_endpoints e ON e.owner = w.owner
        WHERE e.disabled_at IS NULL AND instr(' ' || e.events || ' ', ' ' || w.type || ' ') > 0
        ORDER BY w.seq`.execute(db);
      await sql`UPDATE webhook_endpoints SET pending =
        (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = webhook_endpoints.id AND d.failed_at IS NULL)`.execute(
        db,
      );
      // Each waiting delivery's event, logged below id 0: below every id a
      // live stream reads (Last-Event-ID is never negative), so streams do
      // not see these copies again, in the order they were written.
      await sql`INSERT INTO plant_events (id, owner, type, plant_id, name, tag, occurred_at)
        SELECT row_number() OVER (ORDER BY first) - count(*) OVER () - 1, owner, type, plant_id, name, tag, occurred_at
        FROM (
          SELECT min(d.seq) AS first, e.owner, d.type, d.plant_id, d.name, d.tag, d.occurred_at
          FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          GROUP BY e.owner, d.type, d.plant_id, d.name, d.tag, d.occurred_at
        )`.execute(db);
      // The outbox keeps a reference to the event, not a copy of it.
      await sql`CREATE TABLE webhook_deliveries_next (
        seq             INTEGER PRIMARY KEY,
        event_id        TEXT    NOT NULL,
        endpoint_id     TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
        event           INTEGER NOT NULL,
        attempts        INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        claim           TEXT,
        last_error      TEXT,
        failed_at       INTEGER
      )`.execute(db);
      // Each delivery finds its event through this index, for the copy below only.
      await sql`CREATE INDEX plant_events_upgrade ON plant_events (owner, plant_id, occurred_at) WHERE id < 0`.execute(
        db,
      );
      await sql`INSERT INTO webhook_deliveries_next
          (seq, event_id, endpoint_id, event, attempts, next_attempt_at, claim, last_error, failed_at)
        SELECT d.seq, d.event_id, d.endpoint_id,
          (SELECT p.id FROM plant_events p
           WHERE p.id < 0 AND p.owner = e.owner AND p.type = d.type AND p.plant_id = d.plant_id
             AND p.name IS d.name AND p.tag IS d.tag AND p.occurred_at = d.occurred_at),
          d.attempts, d.next_attempt_at, d.claim, d.last_error, d.failed_at
        FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id`.execute(db);
      await sql`DROP INDEX plant_events_upgrade`.execute(db);
      await sql`DROP TABLE webhook_deliveries`.execute(db);
      await sql`ALTER TABLE webhook_deliveries_next RENAME TO webhook_deliveries`.execute(db);
      await sql`CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at)`.execute(
        db,
      );
      await sql`CREATE INDEX webhook_deliveries_failed ON webhook_deliveries (failed_at)
        WHERE failed_at IS NOT NULL`.execute(db);
      // What pruning looks up: the oldest event a delivery still needs.
      await sql`CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event)`.execute(db);
      await sql`DROP TABLE webhook_events`.execute(db);
    },
  },
};
