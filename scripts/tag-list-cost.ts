// node dist/scripts/tag-list-cost.js [--pg URL] [--plants N]
// What a page of GET /plants?tag= costs the store with a million plants: one owner's N plants in 100 tags
// (and untagged ones), read through the store interface a page of 100 at a time, first pages and pages deep
// into the list (by cursor), next to the unfiltered list. SQLite in a temporary file; PostgreSQL in a scratch
// database next to --pg's, dropped afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openStore } from '../src/store/open-store.js';
import type { PlantFilter, Store } from '../src/store/store.js';

const { values: o } = parseArgs({
  options: { pg: { type: 'string' }, plants: { type: 'string', default: '1000000' } },
});
const PLANTS = Number(o.plants);
const OWNER = 'tag-cost';
const PAGE = 100;

async function fill(store: Store): Promise<number> {
  const started = performance.now();
  for (let from = 0; from < PLANTS; from += 50_000) {
    const batch = Array.from({ length: Math.min(50_000, PLANTS - from) }, (_, i) => {
      const n = from + i;
      return { id: BigInt(n), name: `plant ${n}`, ...(n % 11 === 0 ? {} : { tag: `tag${n % 100}` }) };
    });
    await store.plants.insertMany(OWNER, batch);
  }
  return (performance.now() - started) / 1000;
}

/** Milliseconds per page: `pages` pages from the start, following cursors; the median and the slowest. */
async function walk(store: Store, filter: PlantFilter | undefined, pages: number): Promise<string> {
  const times: number[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < pages; i++) {
    const started = performance.now();
    const page = await store.plants.page(OWNER, PAGE, cursor, filter);
    times.push(performance.now() - started);
    cursor = page.next;
    if (cursor === undefined) break;
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  return `${median.toFixed(3)} ms median, ${times.at(-1)!.toFixed(3)} ms slowest over ${times.length} pages`;
}

async function measure(kind: string, db: string): Promise<void> {
  const store = await openStore({ db, durability: 'full', pgPoolSize: 4, pgStatementTimeoutMs: 0 });
  try {
    console.log(`${kind}: ${PLANTS} plants stored in ${(await fill(store)).toFixed(1)} s`);
    if (kind === 'postgres') {
      const client = new pg.Client({ connectionString: db });
      await client.connect();
      await client.query('ANALYZE plants');
      await client.end();
    }
    // Warm up, then measure: the first page again and again, and a walk of 100 pages deep into the list.
    await walk(store, { tag: 'tag7' }, 20);
    for (const [what, filter] of [
      ['tag list (~9,100 of 1M match)', { tag: 'tag7' }],
      ['tag list, no match', { tag: 'nothing' }],
      ['unfiltered list', undefined],
    ] as const) {
      console.log(`${kind}: ${what}, walk of 100 pages of ${PAGE}: ${await walk(store, filter, 100)}`);
    }
  } finally {
    await store.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'tag-cost-'));
try {
  await measure('sqlite', join(dir, 'plants.db'));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (o.pg) {
  const database = `tag_cost_${process.pid}`;
  const admin = new pg.Client({ connectionString: o.pg });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  try {
    const url = new URL(o.pg);
    url.pathname = `/${database}`;
    await measure('postgres', url.toString());
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  }
}
