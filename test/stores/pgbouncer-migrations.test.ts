// Many instances starting at once through PgBouncer in transaction pooling
// mode, each migrating the same fresh database. The migration lock must be
// held by the migration's own transaction: a session-level advisory lock,
// taken and released by two statements that PgBouncer may send to two
// different server connections, would stay behind on one of them, and every
// later start would wait on it.
import assert from 'node:assert/strict';
import { it } from '../helpers/requirements.js';
import { query } from '../helpers/pg.js';
import { describeOnStore } from '../helpers/stores.js';

const INSTANCES = 8;
const TIMEOUT = 60_000;

describeOnStore('pgbouncer', 'migrations through PgBouncer', (fx) => {
  const advisoryLocks = async () => {
    const database = new URL(fx.directDb).pathname.slice(1);
    const [row] = await query<{ n: number }>(
      fx.directDb,
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database
       WHERE l.locktype = 'advisory' AND d.datname = $1`,
      [database],
    );
    return row!.n;
  };

  it(
    `${INSTANCES} instances starting at once all migrate, and leave no lock behind`,
    { timeout: TIMEOUT },
    async () => {
      for (let round = 0; round < 3; round++) {
        const started = performance.now();
        // Each open migrates on its own pool, as a starting instance does.
        const stores = await Promise.all(Array.from({ length: INSTANCES }, () => fx.open({ pgPoolSize: 2 })));
        const took = performance.now() - started;
        assert.equal(stores.length, INSTANCES);
        // A leaked lock would make the next round wait; none may be held now.
        assert.equal(await advisoryLocks(), 0, `advisory locks held after round ${round}`);
        assert.ok(took < 20_000, `round ${round}: ${INSTANCES} starts took ${Math.round(took)} ms`);
        for (const s of stores) await s.close();
      }
      const [applied] = await query<{ n: number }>(fx.directDb, 'SELECT count(*)::int AS n FROM schema_migrations');
      assert.ok(applied!.n >= 3, `each migration recorded once: ${applied!.n}`);
      const names = await query<{ name: string }>(fx.directDb, 'SELECT name FROM schema_migrations');
      assert.equal(new Set(names.map((r) => r.name)).size, names.length, 'no migration applied twice');
    },
  );
});
