// Fills a store before its server starts: straight through the store's bulk
// insert, one transaction per batch, never over HTTP (a million POSTs would
// take longer than the whole benchmark).
import { issueToken } from '../src/auth/tokens.js';
import { openStore } from '../src/store/open-store.js';
import { openSqliteStore } from '../src/store/sqlite/store.sqlite.js';
import type { NewPlantRecord, Store } from '../src/store/store.js';
import { BENCH_OWNER, plantsUpTo } from './plant-data.js';
import { progressBar } from './progress.js';

const BATCH = 50_000;

/** The bulk insert both stores offer beyond the PlantStore interface; sync for SQLite, async for PostgreSQL. */
type BulkInsert = (owner: string, plants: Iterable<NewPlantRecord>) => number | Promise<number>;

export function bulkInsertOf(store: Store): BulkInsert | undefined {
  const fn = (store.plants as { insertMany?: unknown }).insertMany;
  return typeof fn === 'function' ? (fn.bind(store.plants) as BulkInsert) : undefined;
}

function* records(count: number, from: number): Generator<NewPlantRecord> {
  for (const p of plantsUpTo(count, from)) yield { id: BigInt(p.id), name: p.name, tag: p.tag };
}

export async function insertPlants(store: Store, rows: number, label: string): Promise<void> {
  const insert = bulkInsertOf(store);
  if (!insert) throw new Error(`the ${store.kind} store has no insertMany`);
  const bar = rows >= BATCH ? progressBar(label, rows) : undefined;
  for (let done = 0; done < rows; done += BATCH) {
    const n = Math.min(BATCH, rows - done);
    const inserted = await insert(BENCH_OWNER, records(n, done + 1));
    if (inserted !== n)
      throw new Error(`preload inserted ${inserted} of ${n} plants (ids ${done + 1}..): was the store empty?`);
    bar?.update(done + n);
  }
  bar?.finish();
}

/** A new SQLite file with `rows` plants and a token for them; returns the token. */
export async function preloadSqlite(
  path: string,
  durability: 'full' | 'normal',
  rows: number,
  label: string,
): Promise<string> {
  const store = await openSqliteStore({ path, durability });
  try {
    const { token } = await issueToken(store.tokens, { owner: BENCH_OWNER });
    await insertPlants(store, rows, label);
    return token;
  } finally {
    await store.close();
  }
}

/** Opens the PostgreSQL store the way the service does (migrating it), without a statement timeout for the bulk load. */
export function openPostgres(url: string, durability: 'full' | 'normal'): Promise<Store> {
  return openStore({ db: url, durability, pgPoolSize: 2, pgStatementTimeoutMs: 0 });
}
