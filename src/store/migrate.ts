import { Migrator, type Kysely, type Migration, type MigrationResult } from 'kysely';

export interface MigrationReport {
  applied: string[];
}

/** Brings the schema to the latest version; Kysely's migrator takes a lock, so concurrent starts are safe. */
export async function migrateToLatest(
  db: Kysely<unknown>,
  migrations: Record<string, Migration>,
): Promise<MigrationReport> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
  const { error, results } = await migrator.migrateToLatest();
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
