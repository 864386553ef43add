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
};
