// The PostgreSQL store answers concurrent creates with one multi-row
// statement and concurrent list pages with one read. Batching must never
// show: each create keeps its own outcome and its own error, each page is
// exactly what a lone read would return (a page asked for twice at once is
// read once), and each created plant writes the webhook events of its own
// owner only.
import assert from 'node:assert/strict';
import { before, it } from '../helpers/requirements.js';
import pg from 'pg';
import { query } from '../helpers/pg.js';
import { SQL as BATCHED_CREATES } from '../../src/store/postgres/insert-batcher.postgres.js';
import type { Store } from '../../src/store/store.js';
import { describeEachStore } from '../helpers/stores.js';
import { listPlants } from '../helpers/list-plants.js';

describeEachStore(
  'PostgreSQL batches',
  (fx) => {
    let store: Store;
    const direct = () => (fx.kind === 'pgbouncer' ? fx.directDb : fx.db);
    before(async () => {
      store = await fx.open();
    });

    it('keeps each create its own outcome within one batch, across owners', async () => {
      const p = store.plants;
      assert.equal(await p.create('b1', { id: 1n, name: 'kept', tag: 't' }), 'created');
      const outcomes = await Promise.all([
        p.create('b1', { id: 1n, name: 'kept', tag: 't' }), // replay
        p.create('b1', { id: 1n, name: 'kept' }), // conflict: tag differs
        p.create('b1', { id: 2n, name: 'two' }),
        p.create('b2', { id: 1n, name: 'other owner' }),
        p.create('b2', { id: 2n, name: 'same twice' }),
        p.create('b2', { id: 2n, name: 'same twice' }),
        p.create('b2', { id: 3n, name: 'rival a' }),
        p.create('b2', { id: 3n, name: 'rival b' }),
      ]);
      assert.deepEqual(outcomes.slice(0, 4), ['replayed', 'conflict', 'created', 'created']);
      assert.deepEqual(outcomes.slice(4, 6).sort(), ['created', 'replayed']);
      assert.deepEqual(outcomes.slice(6).sort(), ['conflict', 'created']);
      const b2 = (await listPlants(p, 'b2', 10)).plants.map((x) => x.name);
      assert.deepEqual(b2.slice(0, 2), ['other owner', 'same twice']);
      assert.equal(b2[2], outcomes[6] === 'created' ? 'rival a' : 'rival b');
    });

    it('reads a replayed create through the index, even in a plan made while the table was empty', async () => {
      // The driver prepares the statement once per connection, and PostgreSQL
      // may keep a generic plan made before it has analyzed the table (a new
      // deployment). The plan must not scan every plant per batch.
      const client = new pg.Client({ connectionString: direct(), application_name: 'plant-store-tests' });
      await client.connect();
      const batch = `'{o,o}', '{1,2}', '{a,b}', '{NULL,NULL}'`;
      try {
        await client.query('BEGIN');
        await client.query('CREATE SCHEMA plan_check');
        await client.query('CREATE TABLE plan_check.plants (LIKE public.plants INCLUDING ALL)');
        await client.query('SET LOCAL search_path = plan_check, public');
        await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
        await client.query(
          `PREPARE create_batch (text[], int8[], text[], text[]) AS ${BATCHED_CREATES.createBatch.text}`,
        );
        await client.query(`EXECUTE create_batch (${batch})`);
        await client.query(
          "INSERT INTO plan_check.plants (owner, id, name) SELECT 'o', g, 'p' FROM generate_series(3, 100000) g",
        );
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE create_batch (${batch})`,
        );
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        assert.match(plan, /Index Scan using plants_pkey on plants/, plan);
        assert.doesNotMatch(plan, /Seq Scan on plants/, plan);
      } finally {
        await client.query('ROLLBACK').catch(() => {});
        await client.end();
      }
    });

    it('fails only the create whose statement fails, not the others of its batch', async () => {
      const p = store.plants;
      // A create the database refuses, for a reason the HTTP layer would not let through.
      await query(direct(), "ALTER TABLE plants ADD CONSTRAINT plants_test_refuses CHECK (name <> 'refused')");
      try {
        const settled = await Promise.allSettled(
          Array.from({ length: 30 }, (_, i) =>
            p.create('mixed', { id: BigInt(i), name: i === 7 ? 'refused' : `m${i}` }),
          ),
        );
        for (const [i, s] of settled.entries()) {
          if (i === 7) {
            assert.equal(s.status, 'rejected');
            assert.match(String((s as PromiseRejectedResult).reason), /plants_test_refuses/);
          } else assert.deepEqual(s, { status: 'fulfilled', value: 'created' }, `create ${i}`);
        }
        // NUL cannot be stored as text: refused alone, next to creates that succeed.
        const [bad, good] = await Promise.allSettled([
          p.create('mixed', { id: 100n, name: 'nul\0name' }),
          p.create('mixed', { id: 101n, name: 'fine' }),
        ]);
        assert.equal(bad.status, 'rejected');
        assert.deepEqual(good, { status: 'fulfilled', value: 'created' });
        const names = (await listPlants(p, 'mixed', 100)).plants.map((x) => x.name);
        assert.equal(names.length, 30);
        assert.ok(!names.includes('refused'));
      } finally {
        await query(direct(), 'ALTER TABLE plants DROP CONSTRAINT plants_test_refuses');
      }
    });

    it('logs one event per created plant, for its own owner, whether the owner has an endpoint or not', async () => {
      for (const owner of ['hooked-a', 'hooked-b']) {
        await query(
          direct(),
          `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at)
           VALUES ($1, $2, 'https://example.com/hook', 'plant.created plant.deleted', '\\x00', 'k', now())`,
          [`wh_${owner}`, owner],
        );
      }
      const p = store.plants;
      const owners = ['hooked-a', 'hooked-b', 'unhooked'];
      const outcomes = await Promise.all(
        Array.from({ length: 60 }, (_, i) => p.create(owners[i % 3]!, { id: BigInt(i % 30), name: `e${i % 30}` })),
      );
      // Each owner got ids 0, 3, ... (30 % 3 == 0, so each id twice): one create and one replay each.
      assert.equal(outcomes.filter((o) => o === 'created').length, 30);
      // One event row per create, in the one event log; deliveries fan it out to the owner's endpoints later.
      const rows = await query<{ owner: string; plant_id: string }>(
        direct(),
        `SELECT owner, plant_id::text FROM plant_events
         WHERE type = 'plant.created' AND owner = ANY ($1) ORDER BY owner, plant_id`,
        [owners],
      );
      for (const owner of owners) {
        const mine = rows.filter((r) => r.owner === owner);
        assert.equal(new Set(mine.map((r) => r.plant_id)).size, 10, `one event per plant of ${owner}`);
        assert.equal(mine.length, 10, `one event per plant of ${owner}`);
      }
      const deliveries = await query<{ n: number }>(direct(), 'SELECT count(*)::int AS n FROM webhook_deliveries');
      assert.equal(deliveries[0]!.n, 0, 'no per-endpoint row is written by the creates');
    });

    it('reads concurrent pages exactly as lone reads would, whatever their sizes and cursors', async () => {
      const p = store.plants;
      for (const [owner, count] of [
        ['pages-a', 25],
        ['pages-b', 3],
        ['pages-c', 0],
      ] as const) {
        for (let i = 0; i < count; i++)
          await p.create(owner, { id: BigInt(1000 - i), name: `${owner}-${i}`, tag: i % 2 ? 't' : undefined });
      }
      const asks: [string, number, string | undefined][] = [];
      for (const owner of ['pages-a', 'pages-b', 'pages-c']) {
        for (const limit of [1, 2, 5, 24, 25, 26, 1000]) {
          asks.push([owner, limit, undefined]);
          const first = await listPlants(p, owner, limit);
          if (first.next) asks.push([owner, limit, first.next]);
        }
      }
      const alone: Awaited<ReturnType<typeof listPlants>>[] = [];
      for (const [owner, limit, cursor] of asks) alone.push(await listPlants(p, owner, limit, cursor));
      const together = await Promise.all(asks.map(([owner, limit, cursor]) => listPlants(p, owner, limit, cursor)));
      assert.deepEqual(together, alone);
      // Every page asked for three times at once, interleaved: the copies are
      // read once and each request still gets its own page.
      const thrice = [...asks, ...asks.slice().reverse(), ...asks];
      const alike = await Promise.all(thrice.map(([owner, limit, cursor]) => listPlants(p, owner, limit, cursor)));
      assert.deepEqual(alike, [...alone, ...alone.slice().reverse(), ...alone]);
      assert.deepEqual(
        alone[0]!.plants,
        [{ name: 'pages-a-0' }],
        'a page of one: the first plant, without a tag it never had',
      );
    });

    it('answers the pages that need no cursor when the cursor key cannot be read', async () => {
      // A store that has not read the key yet, and a key that is not there.
      const fresh = await fx.open();
      await query(direct(), "UPDATE secrets SET name = 'cursor_key_moved' WHERE name = 'cursor_key'");
      try {
        // Asked in one tick: one batch, where pages-a (25 plants) needs a cursor and pages-b (3) does not.
        const [long, short] = await Promise.allSettled([
          listPlants(fresh.plants, 'pages-a', 10),
          listPlants(fresh.plants, 'pages-b', 10),
        ]);
        assert.equal(short.status, 'fulfilled');
        assert.deepEqual(
          short.value.plants.map((x) => x.name),
          ['pages-b-0', 'pages-b-1', 'pages-b-2'],
        );
        assert.equal(short.value.next, undefined);
        assert.equal(long.status, 'rejected');
        assert.match(String(long.reason), /cursor_key/);
      } finally {
        await query(direct(), "UPDATE secrets SET name = 'cursor_key' WHERE name = 'cursor_key_moved'");
      }
      assert.equal(
        (await listPlants(fresh.plants, 'pages-a', 10)).plants.length,
        10,
        'the key is read again once it is back',
      );
    });
  },
  ['postgres', 'pgbouncer'],
);
