// The PostgreSQL side of a run: a database of its own, created at the start
// and dropped at the end, so a run never touches data it did not make.
import pg from 'pg';
import type { Store } from '../src/store/store.js';
import { bulkInsertOf, insertPlants, openPostgres } from './preload.js';

export interface BenchDatabase {
  url: string;
  /** Empties the plants table (tokens stay) and loads `rows` plants. */
  reset(rows: number, label: string): Promise<void>;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function adminQuery(adminUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/**
 * Creates the run's database, migrates it through the service's own code and
 * checks that the store offers a bulk insert. Returns the database and a
 * token, or throws with the reason PostgreSQL cannot be benchmarked.
 */
export async function createBenchDatabase(
  adminUrl: string,
  durability: 'full' | 'normal',
  issue: (store: Store) => Promise<string>,
): Promise<{ db: BenchDatabase; token: string }> {
  const name = `plant_bench_${process.pid}_${Date.now()}`;
  await adminQuery(adminUrl, `CREATE DATABASE ${name}`);
  const url = withDatabase(adminUrl, name);
  const drop = () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  let store: Store | undefined;
  try {
    store = await openPostgres(url, durability);
    if (!bulkInsertOf(store)) throw new Error('the PostgreSQL store has no insertMany yet');
    const token = await issue(store);
    const opened = store;
    const db: BenchDatabase = {
      url,
      async reset(rows, label) {
        await adminQuery(url, 'TRUNCATE plants');
        await insertPlants(opened, rows, label);
        // Fresh statistics, so the planner sees the table as it now is.
        await adminQuery(url, 'VACUUM ANALYZE plants');
      },
      async drop() {
        await opened.close().catch(() => {});
        await drop();
      },
    };
    return { db, token };
  } catch (error) {
    await store?.close().catch(() => {});
    await drop().catch(() => {});
    throw error;
  }
}

/**
 * The PostgreSQL backend processes serving `url`'s database, when the server
 * runs on this machine (their CPU is then the database's share of a round).
 */
export async function backendPids(url: string): Promise<number[]> {
  const database = new URL(url).pathname.slice(1);
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [database],
    );
    return rows.map((r) => r.pid);
  } finally {
    await client.end();
  }
}
