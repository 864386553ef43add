import { Migrator, type Kysely, type Migration, type MigrationResult } from 'kysely';

export interface MigrationReport {
  applied: string[];
}

function migrator(db: Kysely<unknown>, migrations: Record<string, Migration>): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
}

/** Thrown by tools that use a schema as it is, on a database without it (or with an older one). */
export class SchemaMissingError extends Error {
  override name = 'SchemaMissingError';
}

/**
 * Checks, reading only, that `where` has the whole schema: a tool pointed at
 * the wrong database must not create tables there.
 */
export async function requireSchema(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
  where: string,
): Promise<void> {
  const all = await migrator(db, migrations).getMigrations();
  const pending = all.filter((m) => m.executedAt === undefined).map((m) => m.name);
  if (pending.length === all.length) {
    throw new SchemaMissingError(
      `${where} has no Plant Store schema; point --db at a Plant Store database (or create the schema there with "plant-store migrate")`,
    );
  }
  if (pending.length > 0) {
    throw new SchemaMissingError(
      `${where} has an older Plant Store schema (missing ${pending.join(', ')}); run "plant-store migrate" first`,
    );
  }
}

/** Brings the schema to the latest version; Kysely's migrator takes a lock, so concurrent starts are safe. */
export async function migrateToLatest(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
): Promise<MigrationReport> {
  const { error, results } = await migrator(db, migrations).migrateToLatest();
  if (error) {
    const failed = results?.find((r: MigrationResult) => r.status === 'Error');
    // No migration ran (the database could not be reached, or refused us):
    // that is not a migration failure, so the caller sees the error itself.
    if (!failed) throw error;
    throw new Error(`migration ${failed.migrationName} failed: ${String((error as Error).message ?? error)}`, {
      cause: error,
    });
  }
  return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
}

/** Applies the migrations up to and including `last`, in order (to rebuild the schema of an older version). */
export async function migrateUpTo(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
  last: string,
): Promise<void> {
  const { error } = await migrator(db, migrations).migrateTo(last);
  if (error) throw error;
}
