// The event log behind live streams (Store.events), on each store: readers
// see a final prefix of the log and never skip an event, writers do not wait
// for one another, and pruning keeps the newest events by count and marks
// what it removed. On PostgreSQL a raw connection holds a writing
// transaction open, as a slow request on any instance could.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { migrateUpTo } from '../../src/store/migrate.js';
import { postgresMigrations } from '../../src/store/postgres/migrations.postgres.js';
import type { PlantEvent, Store } from '../../src/store/store.js';
import { it } from '../helpers/requirements.js';
import {
  closeEventWriter as closeWriter,
  openEventWriter,
  RAW_CREATE,
  RAW_DELETE,
} from '../helpers/open-event-writer.js';
import { describeEachStore, describeOnStore } from '../helpers/stores.js';
import { listPlants } from '../helpers/list-plants.js';

const T = { timeout: 30_000 };
const INT64_MAX = 9223372036854775807n;

/** Settles like `work`, or rejects once `ms` have passed. */
async function within<T>(ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The events of these owners once there are `n` of them. Any writing
 * transaction in the PostgreSQL cluster (other suites' and other databases'
 * too) holds events back while it runs, so the test waits a little rather
 * than reading once, and looks only at its own owners.
 */
async function eventsOf(store: Store, owners: string[], n: number): Promise<PlantEvent[]> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const events = (await store.events.after(0n, 1000)).filter((e) => owners.includes(e.owner));
    if (events.length >= n || performance.now() > deadline) return events;
    await delay(20);
  }
}

describeEachStore(
  'event log',
  (fx) => {
    it('prunes to the newest events by count, never the newest, and marks the largest id removed', T, async () => {
      const store = await fx.open();
      for (let i = 1n; i <= 5n; i++)
        assert.equal(await store.plants.create('pruned', { id: i, name: `p${i}` }), 'created');
      const ids = (await eventsOf(store, ['pruned'], 5)).map((e) => e.id);
      assert.equal(ids.length, 5);

      // Nothing is older than the epoch: only the count removes.
      assert.deepEqual(await store.events.prune(0, 2), { removed: 3, more: false });
      assert.deepEqual(
        (await store.events.after(0n, 100)).map((e) => e.id),
        ids.slice(3),
      );
      assert.deepEqual(await store.events.bounds('pruned'), { pruned: ids[2], newest: ids[4] });
      assert.deepEqual(await store.events.bounds(), { pruned: 0n, newest: ids[4] }, "only this owner's mark moved");
      assert.equal((await store.events.prune(0, 2)).removed, 0, 'the newest two are kept');
      assert.equal((await store.events.prune(0, 100)).removed, 0);

      // Past the retention, all go but the newest.
      assert.equal((await store.events.prune(Date.now() + 60_000, 0)).removed, 1);
      assert.deepEqual(
        (await store.events.after(0n, 100)).map((e) => e.id),
        [ids[4]],
      );
      assert.deepEqual(await store.events.bounds(), { pruned: ids[3], newest: ids[4] });
      assert.deepEqual(await store.events.bounds('pruned'), { pruned: ids[3], newest: ids[4] });
    });
  },
  ['sqlite', 'postgres', 'pgbouncer'],
);

describeEachStore(
  'event log on PostgreSQL, with a writing transaction open',
  (fx) => {
    it(
      'reads no event at or after a transaction still open, then all of them in id order, none skipped',
      T,
      async () => {
        const store = await fx.open();
        const raw = await openEventWriter(fx.directDb, 'early', 1n, 'drawn first');
        try {
          const { newest } = await store.events.bounds();
          assert.equal(await store.plants.create('late', { id: 1n, name: 'committed first' }), 'created');
          // Committed, but behind the open transaction: not readable yet, by any read.
          await delay(100);
          assert.deepEqual(await eventsOf(store, ['early', 'late'], 0), []);
          assert.deepEqual(await store.events.after(newest, 10), []);
          assert.deepEqual(await store.events.ownerAfter('late', 0n, INT64_MAX, 10), []);
          assert.equal((await store.events.bounds()).newest, newest);
          await raw.query('COMMIT');
        } finally {
          await closeWriter(raw);
        }
        const events = await eventsOf(store, ['early', 'late'], 2);
        assert.deepEqual(
          events.map((e) => [e.owner, e.name]),
          [
            ['early', 'drawn first'],
            ['late', 'committed first'],
          ],
        );
        assert.ok(events[0]!.id < events[1]!.id);
        assert.equal((await store.events.bounds()).newest, events[1]!.id);
      },
    );

    it('lets other writers create and delete while a transaction holding an event is open', T, async () => {
      const store = await fx.open();
      const raw = await openEventWriter(fx.directDb, 'holder', 1n, 'held');
      try {
        // With writers queued behind one another, these would wait for the open transaction.
        await within(
          3000,
          'writes next to an open event-writing transaction',
          (async () => {
            const outcomes = await Promise.all(
              [1n, 2n, 3n].map((id) => store.plants.create('free', { id, name: `f${id}` })),
            );
            assert.deepEqual(outcomes, ['created', 'created', 'created']);
            assert.equal(await store.plants.delete('free', 2n), true);
          })(),
        );
      } finally {
        await closeWriter(raw);
      }
    });

    it(
      "keeps one owner's events in the order its writes committed, when a create batch waits and a delete overtakes it",
      T,
      async () => {
        const store = await fx.open();
        assert.equal(await store.plants.create('same', { id: 1n, name: 'old' }), 'created');
        const holder = await openEventWriter(fx.directDb, 'other', 9n, 'held');
        const deleter = new pg.Client({ connectionString: fx.directDb });
        await deleter.connect();
        let creates: Promise<unknown[]> | undefined;
        try {
          // One batch: a new plant of 'same', then one that waits for the open
          // transaction above, then plant 1 of 'same' again. Without the owners'
          // locks it would write (and get its transaction id) before waiting, and
          // the delete below, starting later but committing first, would get a
          // larger id: its event would come after the re-create, and a client
          // following the stream would think plant 1 gone.
          creates = Promise.all([
            store.plants.create('same', { id: 2n, name: 'new' }),
            store.plants.create('other', { id: 9n, name: 'mine' }),
            store.plants.create('same', { id: 1n, name: 'again' }),
          ]);
          await delay(150);
          await deleter.query('BEGIN');
          const deleted = deleter.query<{ n: number }>(RAW_DELETE, ['same', '1']);
          await delay(150);
          await holder.query('ROLLBACK');
          await deleted;
          await delay(150);
          await deleter.query('COMMIT');
          await creates;
        } finally {
          await closeWriter(deleter);
          await closeWriter(holder);
          await creates?.catch(() => {});
        }
        // Following the stream ends where the store is.
        const followed = new Map<bigint, string>();
        for (const e of await eventsOf(store, ['same'], 3))
          if (e.type === 'plant.created') followed.set(e.plantId, e.name!);
          else followed.delete(e.plantId);
        const stored = (await listPlants(store.plants, 'same', 10)).plants.map((p) => p.name);
        assert.deepEqual([...followed.values()].sort(), stored.sort());
      },
    );

    it('does not wait for a transaction that has only read', T, async () => {
      const store = await fx.open();
      const reader = new pg.Client({ connectionString: fx.directDb });
      await reader.connect();
      try {
        await reader.query('BEGIN');
        await reader.query('SELECT count(*) FROM plant_events');
        assert.equal(await store.plants.create('read-only', { id: 1n, name: 'seen' }), 'created');
        const events = await eventsOf(store, ['read-only'], 1);
        assert.deepEqual(
          events.map((e) => e.name),
          ['seen'],
        );
      } finally {
        await closeWriter(reader);
      }
    });

    it('fails a second event-writing statement in one transaction on the primary key', T, async () => {
      await fx.open();
      const raw = await openEventWriter(fx.directDb, 'twice', 1n, 'first');
      try {
        await assert.rejects(raw.query(RAW_CREATE, ['twice', '2', 'second']), (error: pg.DatabaseError) => {
          assert.equal(error.code, '23505');
          assert.equal(error.constraint, 'plant_events_pkey');
          return true;
        });
      } finally {
        await closeWriter(raw);
      }
    });
  },
  ['postgres', 'pgbouncer'],
);

describeOnStore('postgres', 'event log ids across the upgrade to transaction-based ids', (fx) => {
  it('keeps the events logged before it below every new one, and what was pruned marked', T, async () => {
    const pool = new pg.Pool({ connectionString: fx.directDb, max: 1 });
    const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
    try {
      await migrateUpTo(db, postgresMigrations, '0005_plant_events');
      await pool.query(`INSERT INTO plant_events (owner, type, plant_id, name)
        SELECT 'old', 'plant.created', n, 'old ' || n FROM generate_series(1, 4) AS n`);
      // The first one was pruned before the upgrade.
      await pool.query('DELETE FROM plant_events WHERE id = 1');
    } finally {
      await db.destroy();
    }
    const store = await fx.open();
    assert.deepEqual(await store.events.bounds(), { pruned: 1n, newest: 4n });
    assert.equal(await store.plants.create('new', { id: 1n, name: 'new 1' }), 'created');
    const events = await eventsOf(store, ['old', 'new'], 4);
    assert.deepEqual(
      events.map((e) => e.name),
      ['old 2', 'old 3', 'old 4', 'new 1'],
    );
    assert.ok(events[3]!.id > 1n << 20n, `${events[3]!.id}`);
    // An insert that does not draw its id the new way fails rather than slipping in below.
    const raw = new pg.Client({ connectionString: fx.directDb });
    await raw.connect();
    try {
      await assert.rejects(
        raw.query("INSERT INTO plant_events (owner, type, plant_id) VALUES ('x', 'plant.created', 1)"),
        /null value in column "id"/,
      );
    } finally {
      await raw.end();
    }
  });
});
