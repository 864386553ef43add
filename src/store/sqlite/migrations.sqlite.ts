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
};
