// Webhook deliveries fan out from the one event log (plant_events), on each
// store: a write logs one event row whatever its owner's endpoints, pruning
// never removes an event a delivery still needs, and the upgrade from the
// schema with a second table of webhook events (migration 0008) keeps every
// waiting event, delivered signed, in order, after it.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { DeliveryLoop } from '../../src/outbox/delivery-loop.js';
import { newSigningSecret, readOrCreateKeyFile } from '../../src/outbox/secret-box.js';
import { migrateUpTo } from '../../src/store/migrate.js';
import { postgresMigrations } from '../../src/store/postgres/migrations.postgres.js';
import { sqliteMigrations } from '../../src/store/sqlite/migrations.sqlite.js';
import type { Store } from '../../src/store/store.js';
import { eventually } from '../helpers/eventually.js';
import { fanOutWithoutDelivering } from '../helpers/outbox.js';
import { query } from '../helpers/pg.js';
import { after, afterEach, it } from '../helpers/requirements.js';
import { describeEachStore, type StoreFixture } from '../helpers/stores.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const LIMIT = { timeout: 60_000 };
const dir = mkdtempSync(join(tmpdir(), 'plant-store-one-event-log-'));
const keyPath = join(dir, 'webhook.key');
after(() => rmSync(dir, { recursive: true, force: true }));

/** One statement straight on the suite's database (`?` placeholders on both). */
async function sql<R>(fx: StoreFixture, text: string, values: unknown[] = []): Promise<R[]> {
  if (fx.kind === 'sqlite') {
    const db = new Database(fx.db);
    try {
      db.pragma('busy_timeout = 5000');
      const statement = db.prepare(text);
      return (statement.reader ? statement.all(...values) : (statement.run(...values), [])) as R[];
    } finally {
      db.close();
    }
  }
  let n = 0;
  return query(
    fx.directDb,
    text.replace(/\?/g, () => `$${++n}`),
    values,
  ) as Promise<R[]>;
}

const count = async (fx: StoreFixture, table: string, where = 'true', values: unknown[] = []) =>
  Number((await sql<{ n: number }>(fx, `SELECT count(*) AS n FROM ${table} WHERE ${where}`, values))[0]!.n);

async function register(store: Store, owner: string, url: string): Promise<{ id: string; secret: string }> {
  const { box } = readOrCreateKeyFile(keyPath);
  const id = `wh_${Math.random().toString(16).slice(2, 18)}`;
  const secret = newSigningSecret();
  await store.webhooks.add(
    { id, owner, url, events: ['plant.created', 'plant.deleted'], createdAt: new Date(), keyId: box.keyId },
    box.seal(secret.key, id),
  );
  return { id, secret: secret.text };
}

async function pendingOf(store: Store, id: string): Promise<number> {
  return (await store.webhooks.list()).find((e) => e.id === id)!.pending;
}

/** Prunes as the event feed does, to the end: everything older than now, each owner down to `keep`. */
async function pruneAll(store: Store, keep: number): Promise<void> {
  while ((await store.events.prune(Date.now() + 60_000, keep)).more);
}

const ownerEvents = async (store: Store, owner: string) => {
  const { newest } = await store.events.bounds(owner);
  return (await store.events.ownerAfter(owner, 0n, newest, 1000)).map((e) => e.name ?? `deleted ${e.plantId}`);
};

/** A started delivery loop on the store, with the real retry schedule unless given one. */
function deliveryLoop(store: Store, retryDelayMs?: (attempt: number) => number | undefined): DeliveryLoop {
  const loop = new DeliveryLoop({
    outbox: store.outbox,
    webhooks: store.webhooks,
    keyPath,
    allowPrivate: true,
    timeoutMs: 2_000,
    log: pino({ level: 'silent' }),
    pollMs: 20,
    ...(retryDelayMs ? { retryDelayMs } : {}),
  });
  loop.start();
  return loop;
}

/** Receivers and delivery loops a suite starts, each stopped after its test. */
function stoppedAfterEach() {
  const loops: DeliveryLoop[] = [];
  const receivers: WebhookReceiver[] = [];
  const stopLoops = async () => {
    for (const loop of loops.splice(0)) await loop.stop();
  };
  afterEach(async () => {
    await stopLoops();
    for (const r of receivers.splice(0)) await r.stop();
  });
  return {
    stopLoops,
    receiver: async () => {
      const r = await new WebhookReceiver().start();
      receivers.push(r);
      return r;
    },
    startLoop: (store: Store, retryDelayMs?: (attempt: number) => number | undefined) => {
      const loop = deliveryLoop(store, retryDelayMs);
      loops.push(loop);
      return loop;
    },
  };
}

describeEachStore('webhooks: one event log', (fx) => {
  const { receiver, startLoop, stopLoops } = stoppedAfterEach();

  it('a write logs one event row, with or without endpoints, and no other row for webhooks', LIMIT, async () => {
    const store = await fx.open();
    const rx = await receiver();
    await register(store, 'hooked', rx.url());
    const before = { events: await count(fx, 'plant_events'), deliveries: await count(fx, 'webhook_deliveries') };
    assert.equal(await store.plants.create('solo', { id: 1n, name: 'fern' }), 'created');
    assert.equal(await store.plants.create('hooked', { id: 1n, name: 'moss' }), 'created');
    assert.equal(await count(fx, 'plant_events'), before.events + 2, 'one event row per write');
    assert.equal(await count(fx, 'webhook_deliveries'), before.deliveries, 'the write itself adds no delivery');
    startLoop(store);
    await rx.waitFor((all) => all.some((r) => r.status === 204), 10_000, "the hooked owner's event");
    assert.equal(rx.requests.length, 1, 'only the hooked owner has an endpoint');
    assert.match(rx.requests[0]!.body, /"name":"moss"/);
  });

  it('pruning keeps every event a delivery still needs, and prunes the rest', LIMIT, async () => {
    const store = await fx.open();
    const rx = await receiver();
    const { id, secret } = await register(store, 'held', rx.url());
    for (let i = 1; i <= 5; i++) {
      await store.plants.create('held', { id: BigInt(i), name: `held ${i}` });
      await store.plants.create('free', { id: BigInt(i), name: `free ${i}` });
    }
    await eventually(async () => (await fanOutWithoutDelivering(store), (await pendingOf(store, id)) === 5), 10_000, {
      what: 'the 5 events fanned out',
    });
    // Every event is past the age limit, and each owner's cap is 1.
    await pruneAll(store, 1);
    assert.deepEqual(await ownerEvents(store, 'free'), ['free 5'], 'an owner without deliveries is pruned');
    assert.deepEqual(
      await ownerEvents(store, 'held'),
      ['held 1', 'held 2', 'held 3', 'held 4', 'held 5'],
      'the events waiting for delivery are kept',
    );

    startLoop(store);
    await rx.waitFor((all) => all.filter((r) => r.status === 204).length === 5, 10_000, 'the 5 events');
    const names = rx.requests.map((r) => new Webhook(secret).verify(r.body, r.headers) as { data: { name: string } });
    assert.deepEqual(
      names.map((e) => e.data.name),
      ['held 1', 'held 2', 'held 3', 'held 4', 'held 5'],
      'signed, in order',
    );
    await eventually(async () => (await pendingOf(store, id)) === 0, 10_000, { what: 'the deliveries settled' });
    await store.plants.create('held', { id: 6n, name: 'held 6' });
    await eventually(async () => (await pendingOf(store, id)) === 0 && rx.requests.length === 6, 10_000, {
      what: 'the sixth delivered',
    });
    // Delivered: nothing holds them any more.
    await pruneAll(store, 1);
    assert.deepEqual(await ownerEvents(store, 'held'), ['held 6']);
  });

  it(
    'a failed delivery keeps its event for redeliver, until it is forgotten with the events of its age',
    LIMIT,
    async () => {
      const store = await fx.open();
      const rx = await receiver();
      rx.answer = () => ({ status: 500 });
      const { id } = await register(store, 'failing', rx.url());
      for (let i = 1; i <= 3; i++) await store.plants.create('failing', { id: BigInt(i), name: `failing ${i}` });
      // One attempt each, then given up.
      const first = startLoop(store, () => undefined);
      await rx.waitFor((all) => all.length === 3, 10_000, 'three failed attempts');
      await eventually(async () => (await pendingOf(store, id)) === 0, 10_000, { what: 'the three given up' });
      await first.stop();
      // Nothing is old yet; the cap alone would keep one event.
      while ((await store.events.prune(Date.now() - 3_600_000, 1)).more);
      assert.deepEqual(await ownerEvents(store, 'failing'), ['failing 1', 'failing 2', 'failing 3']);

      rx.answer = () => ({ status: 204 });
      assert.equal(await store.webhooks.redeliver(id), 3);
      startLoop(store);
      await rx.waitFor((all) => all.filter((r) => r.status === 204).length === 3, 10_000, 'the three redelivered');
      const ids = (status: number) =>
        rx.requests.filter((r) => r.status === status).map((r) => r.headers['webhook-id']);
      assert.deepEqual(ids(204), ids(500), 'the same events, in the same order, with the same webhook-ids');

      // Failed again, then past the age limit: forgotten, with their events.
      await eventually(async () => (await pendingOf(store, id)) === 0, 10_000, { what: 'the deliveries settled' });
      await stopLoops();
      rx.answer = () => ({ status: 500 });
      await store.plants.create('failing', { id: 4n, name: 'failing 4' });
      const again = startLoop(store, () => undefined);
      await rx.waitFor((all) => all.length === 7, 10_000, 'the fourth failed');
      await eventually(async () => (await pendingOf(store, id)) === 0, 10_000, { what: 'the fourth given up' });
      await again.stop();
      await pruneAll(store, 1);
      assert.equal(await store.webhooks.redeliver(id), 0, 'forgotten');
    },
  );
});

// A database of its own: the schema of migration 0008, with data in both tables.
describeEachStore('webhooks: the upgrade to one event log', (fx) => {
  const { receiver, startLoop } = stoppedAfterEach();

  it('upgrades from the schema with a separate webhook event table, keeping what waited', LIMIT, async () => {
    const { box } = readOrCreateKeyFile(keyPath);
    const secret = newSigningSecret();
    const endpoint = 'wh_0123456789abcdef';
    const waitingId = `msg_${'ab'.repeat(16)}`;
    const rx = await receiver();
    const now = Date.now();
    const sealed = box.seal(secret.key, endpoint);
    if (fx.kind === 'sqlite') {
      const database = new Database(fx.db);
      const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
      try {
        await migrateUpTo(db, sqliteMigrations, '0008_plant_events_owner_pruned');
        const events = database.prepare(
          'INSERT INTO plant_events (owner, type, plant_id, name, tag, occurred_at) VALUES (?, ?, ?, ?, ?, ?)',
        );
        events.run('up', 'plant.created', 1, 'old 1', null, now - 3000);
        events.run('up', 'plant.created', 2, 'old 2', null, now - 2000);
        events.run('up', 'plant.created', 3, 'old 3', 'green', now - 1000);
        events.run('other', 'plant.created', 1, 'other 1', null, now - 500);
        database
          .prepare(
            `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at, pending)
             VALUES (?, 'up', ?, 'plant.created plant.deleted', ?, ?, ?, 1)`,
          )
          .run(endpoint, rx.url(), sealed, box.keyId, now - 10_000);
        // Fanned out, its first attempt failed: its retry is due.
        database
          .prepare(
            `INSERT INTO webhook_deliveries (event_id, endpoint_id, type, plant_id, name, tag, occurred_at, attempts,
               next_attempt_at, last_error)
             VALUES (?, ?, 'plant.created', 2, 'old 2', NULL, ?, 1, ?, 'answered 503')`,
          )
          .run(waitingId, endpoint, now - 2000, now - 1500);
        // Not fanned out yet.
        database
          .prepare(
            `INSERT INTO webhook_events (owner, type, plant_id, name, tag, occurred_at)
             VALUES ('up', 'plant.created', 3, 'old 3', 'green', ?)`,
          )
          .run(now - 1000);
      } finally {
        await db.destroy();
      }
    } else {
      const pool = new pg.Pool({ connectionString: fx.directDb, max: 1 });
      const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
      try {
        await migrateUpTo(db, postgresMigrations, '0008_plant_events_owner_pruned');
        const at = (ms: number) => new Date(now - ms);
        for (const [id, owner, plant, name, tag, ago] of [
          [1, 'up', 1, 'old 1', null, 3000],
          [2, 'up', 2, 'old 2', null, 2000],
          [3, 'up', 3, 'old 3', 'green', 1000],
          [4, 'other', 1, 'other 1', null, 500],
        ] as const) {
          await pool.query(
            `INSERT INTO plant_events (id, owner, type, plant_id, name, tag, occurred_at)
             VALUES ($1, $2, 'plant.created', $3, $4, $5, $6)`,
            [id, owner, plant, name, tag, at(ago)],
          );
        }
        await pool.query(
          `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at, pending)
           VALUES ($1, 'up', $2, 'plant.created plant.deleted', $3, $4, $5, 1)`,
          [endpoint, rx.url(), sealed, box.keyId, at(10_000)],
        );
        await pool.query(
          `INSERT INTO webhook_deliveries (event_id, endpoint_id, owner, type, plant_id, name, tag, occurred_at,
             attempts, next_attempt_at, last_error)
           VALUES ($1, $2, 'up', 'plant.created', 2, 'old 2', NULL, $3, 1, $4, 'answered 503')`,
          [waitingId, endpoint, at(2000), at(1500)],
        );
        await pool.query(
          `INSERT INTO webhook_events (event_id, owner, type, plant_id, name, tag, occurred_at)
           VALUES ('ev_1', 'up', 'plant.created', 3, 'old 3', 'green', $1)`,
          [at(1000)],
        );
      } finally {
        await db.destroy();
      }
    }

    const store = await fx.open();
    const table =
      fx.kind === 'sqlite'
        ? "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'webhook_events'"
        : "SELECT tablename AS name FROM pg_tables WHERE tablename = 'webhook_events'";
    assert.deepEqual(await sql(fx, table), [], 'the second table is gone');
    assert.equal(await pendingOf(store, endpoint), 2, 'the waiting delivery and the event not fanned out yet');
    // Live streams read the log as it was: the copies the deliveries refer to are below every id they read.
    assert.deepEqual(
      (await store.events.after(0n, 100)).map((e) => e.name),
      ['old 1', 'old 2', 'old 3', 'other 1'],
    );
    assert.equal((await store.events.bounds()).newest, 4n);
    // Pruning keeps what the deliveries need.
    await pruneAll(store, 1);

    startLoop(store);
    await rx.waitFor((all) => all.filter((r) => r.status === 204).length === 2, 10_000, 'the two waiting events');
    const got = rx.requests.map((r) => ({
      id: r.headers['webhook-id'],
      event: new Webhook(secret.text).verify(r.body, r.headers) as { data: { name: string; tag?: string } },
    }));
    assert.deepEqual(
      got.map((g) => g.event.data.name),
      ['old 2', 'old 3'],
      'in order',
    );
    assert.equal(got[0]!.id, waitingId, 'the waiting delivery keeps its webhook-id');
    assert.equal(got[1]!.event.data.tag, 'green');

    assert.equal(await store.plants.create('up', { id: 4n, name: 'new 4' }), 'created');
    await rx.waitFor((all) => all.length === 3, 10_000, 'the event written after the upgrade');
    assert.match(rx.requests[2]!.body, /"name":"new 4"/);
    assert.equal(await count(fx, 'plant_events', 'plant_id = ? AND owner = ?', [4, 'up']), 1);
  });
});
