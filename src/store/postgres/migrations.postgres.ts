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
};
