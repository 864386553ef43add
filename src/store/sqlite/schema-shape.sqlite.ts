// The exact schema a SQLite store has after a given list of migrations: what
// restore compares a backup with, so that a backup cannot bring in a table,
// index, trigger or view of its own.
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { migrateUpTo } from '../migrate.js';
import { sqliteMigrations } from './migrations.sqlite.js';

/** One entry of sqlite_master. */
export interface SchemaObject {
  type: string;
  name: string;
  tbl_name: string;
  sql: string | null;
}

// SQLite's own tables (ANALYZE statistics, AUTOINCREMENT counters): content
// for the query planner, no code; a backup may hold them or not.
const INTERNAL = /^sqlite_(stat\d|sequence)$/;

/** The schema objects of the database, SQLite's internal tables left out, sorted by type and name. */
export function schemaObjects(db: Database.Database): SchemaObject[] {
  return db
    .prepare<[], SchemaObject>('SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name')
    .all()
    .filter((o) => !(o.type === 'table' && INTERNAL.test(o.name)));
}

/** The names of this version's migrations, in order. */
export const SQLITE_MIGRATIONS: readonly string[] = Object.keys(sqliteMigrations).sort();

/** The schema of a new store after the migrations up to and including `last`. */
export async function expectedSchema(last: string): Promise<SchemaObject[]> {
  const memory = new Database(':memory:');
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: memory }) });
  try {
    await migrateUpTo(db, sqliteMigrations, last);
    return schemaObjects(memory);
  } finally {
    await db.destroy();
  }
}
