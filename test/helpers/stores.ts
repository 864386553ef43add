// The list of stores every contract and HTTP suite runs against (one suite,
// looped over the stores). PostgreSQL comes from PLANTS_TEST_PG_URL; when it
// cannot be reached, every test of its suites is reported as skipped with the
// reason (failing under CI=true), so suite bodies declare their tests and
// hooks with it/describe/before/... from ./requirements.js, not node:test.
//
// 'pgbouncer' is the same PostgreSQL seen through a private PgBouncer in
// transaction pooling mode (helpers/pgbouncer.ts), with --pg-pooler
// transaction; suites opt in by naming it in describeEachStore's kinds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { PgBouncer, pgbouncerProbe } from './pgbouncer.js';
import { after, before, describe, needs, requirement } from './requirements.js';

export const PG_URL = process.env.PLANTS_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export type StoreKind = 'sqlite' | 'postgres' | 'pgbouncer';

export interface StoreFixture {
  kind: StoreKind;
  /** The value of --db / DATABASE_URL for this suite's fresh database. */
  readonly db: string;
  /** 'pgbouncer' only: the suite's PgBouncer, which tests may stop and resume. */
  readonly bouncer: PgBouncer | undefined;
  /** 'pgbouncer' only: the suite's database directly, not through PgBouncer. */
  readonly directDb: string;
  /** A full config for this suite's database; overrides win. */
  config(overrides?: Partial<Config>): Config;
  /** Opens (and migrates) another store on this suite's database; closed after the suite. */
  open(overrides?: Partial<Config>): Promise<Store>;
}

/** PG_URL without its password, fit for a skip reason. */
function shown(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

const pgMissing = await requirement(`PostgreSQL at ${shown(PG_URL)} (set PLANTS_TEST_PG_URL)`, async () => {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } finally {
    await client.end().catch(() => {});
  }
});

const pgbouncerMissing = await requirement('pgbouncer', pgbouncerProbe);

/** Why suites on `kind` cannot run here, or undefined when they can. */
function missingFor(kind: StoreKind): string | undefined {
  if (kind === 'sqlite') return undefined;
  return pgMissing ?? (kind === 'pgbouncer' ? pgbouncerMissing : undefined);
}

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
  let bouncer: PgBouncer | undefined;
  const opened: Store[] = [];
  // Through a transaction pooler the store must be told so.
  const kindConfig: Partial<Config> = kind === 'pgbouncer' ? { pgPooler: 'transaction' } : {};
  return {
    kind,
    get db() {
      return db;
    },
    get bouncer() {
      return bouncer;
    },
    get directDb() {
      return withDatabase(PG_URL, database);
    },
    config(overrides = {}) {
      return baseConfig(db, { ...kindConfig, ...overrides });
    },
    async open(overrides = {}) {
      const store = await openStore(baseConfig(db, { ...kindConfig, ...overrides }));
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
        if (kind === 'pgbouncer') {
          bouncer = await PgBouncer.start({ upstream: PG_URL });
          db = bouncer.urlFor(db);
        }
      }
    },
    async teardown() {
      for (const s of opened.splice(0)) await s.close().catch(() => {});
      await bouncer?.destroy();
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

/**
 * An HTTP-layer suite: what it tests sits above the store interface, which the
 * contract suite checks on every store, so it runs on one store (SQLite).
 */
export function describeHttpLayer(title: string, body: (fx: StoreFixture) => void): void {
  describeOnStore('sqlite', title, body);
}

export function describeOnStore(kind: StoreKind, title: string, body: (fx: StoreFixture) => void): void {
  needs(missingFor(kind), () =>
    describe(`${title} [${kind}]`, () => {
      const fx = makeFixture(kind);
      before(() => fx.setup());
      after(() => fx.teardown());
      body(fx);
    }),
  );
}
