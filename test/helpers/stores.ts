// The list of stores every contract and HTTP suite runs against (one suite,
// looped over the stores). PostgreSQL comes from PLANTS_TEST_PG_URL; when it
// cannot be reached its suites are reported as skipped, except under CI=true,
// where that is a failure.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';

export const PG_URL = process.env.PLANTS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const IN_CI = process.env.CI === 'true';

export type StoreKind = 'sqlite' | 'postgres';

export interface StoreFixture {
  kind: StoreKind;
  /** The value of --db / DATABASE_URL for this suite's fresh database. */
  readonly db: string;
  /** A full config for this suite's database; overrides win. */
  config(overrides?: Partial<Config>): Config;
  /** Opens (and migrates) another store on this suite's database; closed after the suite. */
  open(overrides?: Partial<Config>): Promise<Store>;
}

async function postgresReachable(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

const pgProblem = await postgresReachable();

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export function baseConfig(db: string, overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({ db, 'log-level': 'silent' }, {}), ...overrides };
}

function makeFixture(kind: StoreKind): StoreFixture & { setup(): Promise<void>; teardown(): Promise<void> } {
  let db = '';
  let dir = '';
  let database = '';
  const opened: Store[] = [];
  return {
    kind,
    get db() {
      return db;
    },
    config(overrides = {}) {
      return baseConfig(db, overrides);
    },
    async open(overrides = {}) {
      const store = await openStore(baseConfig(db, overrides));
      opened.push(store);
      return store;
    },
    async setup() {
      if (kind === 'sqlite') {
        dir = mkdtempSync(join(tmpdir(), 'plant-store-test-'));
        db = join(dir, 'plants.db');
      } else {
        database = `plants_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
        await adminQuery(`CREATE DATABASE ${database}`);
        db = withDatabase(PG_URL, database);
      }
    },
    async teardown() {
      for (const s of opened.splice(0)) await s.close().catch(() => {});
      if (kind === 'sqlite') rmSync(dir, { recursive: true, force: true });
      else await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    },
  };
}

/** Runs `body` once per store, each run on its own fresh database. */
export function describeEachStore(
  title: string,
  body: (fx: StoreFixture) => void,
  kinds: StoreKind[] = ['sqlite', 'postgres'],
): void {
  for (const kind of kinds) describeOnStore(kind, title, body);
}

export function describeOnStore(kind: StoreKind, title: string, body: (fx: StoreFixture) => void): void {
  const name = `${title} [${kind}]`;
  if (kind === 'postgres' && pgProblem) {
    if (IN_CI) {
      describe(name, () => {
        it('needs PostgreSQL', () => {
          throw new Error(`PostgreSQL at ${PG_URL} is unreachable and CI=true: ${pgProblem}`);
        });
      });
    } else {
      describe(
        name,
        { skip: `PostgreSQL at ${PG_URL} is unreachable (${pgProblem}); set PLANTS_TEST_PG_URL` },
        () => {},
      );
    }
    return;
  }
  describe(name, () => {
    const fx = makeFixture(kind);
    before(() => fx.setup());
    after(() => fx.teardown());
    body(fx);
  });
}
