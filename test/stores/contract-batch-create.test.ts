// The batch create and the per-owner cap of the PlantStore contract, run
// against every store: all or nothing, replays, conflicts, repeated ids,
// events in order, and exact counts under concurrency.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, it } from '../helpers/requirements.js';
import { describeEachStore } from '../helpers/stores.js';
import { eventually } from '../helpers/eventually.js';
import { listPlants } from '../helpers/list-plants.js';
import { newSigningSecret, readOrCreateKeyFile } from '../../src/outbox/secret-box.js';
import {
  TooManyPlantsError,
  type NewPlantRecord,
  type PlantRecord,
  type PlantStore,
  type Store,
} from '../../src/store/store.js';

const TIMEOUT = 30_000;

async function listAll(plants: PlantStore, owner: string): Promise<PlantRecord[]> {
  const all: PlantRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await listPlants(plants, owner, 500, cursor);
    all.push(...page.plants);
    cursor = page.next;
  } while (cursor !== undefined);
  return all;
}

const plantsFrom = (from: number, n: number, prefix = 'p'): NewPlantRecord[] =>
  Array.from({ length: n }, (_, i) => ({ id: BigInt(from + i), name: `${prefix}${from + i}` }));

let owners = 0;
const newOwner = (what: string) => `${what}-${process.pid}-${++owners}`;

const dir = mkdtempSync(join(tmpdir(), 'plant-store-batch-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describeEachStore(
  'store contract: batch create and the per-owner cap',
  (fx) => {
    let store: Store;
    before(
      async () => {
        store = await fx.open();
      },
      { timeout: TIMEOUT },
    );

    it('stores a batch in order and answers each outcome', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('order');
      const batch = [
        { id: 2n ** 63n - 1n, name: 'max', tag: 't' },
        { id: -(2n ** 63n), name: 'min' },
        { id: 2n ** 53n + 1n, name: 'odd', tag: '' },
      ];
      assert.deepEqual(await store.plants.createMany(owner, batch), {
        kind: 'stored',
        outcomes: ['created', 'created', 'created'],
      });
      assert.deepEqual(await listAll(store.plants, owner), [
        { name: 'max', tag: 't' },
        { name: 'min' },
        { name: 'odd', tag: '' },
      ]);
    });

    it('takes identical stored plants as replays, storing only the new ones', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('replay');
      assert.equal(await store.plants.create(owner, { id: 2n, name: 'p2' }), 'created');
      const outcome = await store.plants.createMany(owner, plantsFrom(1, 3));
      assert.deepEqual(outcome, { kind: 'stored', outcomes: ['created', 'replayed', 'created'] });
      assert.deepEqual(
        (await listAll(store.plants, owner)).map((p) => p.name),
        ['p2', 'p1', 'p3'],
      );
      // The whole batch again: every plant a replay, nothing duplicated.
      assert.deepEqual(await store.plants.createMany(owner, plantsFrom(1, 3)), {
        kind: 'stored',
        outcomes: ['replayed', 'replayed', 'replayed'],
      });
      assert.equal((await listAll(store.plants, owner)).length, 3);
    });

    it('stores nothing when one plant conflicts, and names it', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('conflict');
      await store.plants.create(owner, { id: 5n, name: 'old', tag: 'x' });
      const batch = [...plantsFrom(1, 3), { id: 5n, name: 'old', tag: 'y' }, ...plantsFrom(10, 3)];
      assert.deepEqual(await store.plants.createMany(owner, batch), { kind: 'conflict', index: 3 });
      assert.deepEqual(await listAll(store.plants, owner), [{ name: 'old', tag: 'x' }]);
      // A missing tag is other content than an empty one.
      await store.plants.create(owner, { id: 6n, name: 'six', tag: '' });
      assert.deepEqual(
        await store.plants.createMany(owner, [
          { id: 7n, name: 'a' },
          { id: 6n, name: 'six' },
        ]),
        {
          kind: 'conflict',
          index: 1,
        },
      );
      assert.equal((await listAll(store.plants, owner)).length, 2);
    });

    it('refuses an id given twice in one batch, storing nothing', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('twice');
      const batch = [...plantsFrom(1, 3), { id: 2n, name: 'p2' }];
      assert.deepEqual(await store.plants.createMany(owner, batch), { kind: 'repeated', index: 3, first: 1 });
      assert.deepEqual(await listAll(store.plants, owner), []);
    });

    it('logs one live event per stored plant, in the batch order', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('events');
      await store.plants.create(owner, { id: 2n, name: 'p2' });
      // Read from its own event: on PostgreSQL the log's newest readable event may still be older.
      const mineSoFar = () => store.events.ownerAfter(owner, 0n, 2n ** 63n - 1n, 100);
      await eventually(async () => (await mineSoFar()).length === 1, 10_000, { what: 'the first event' });
      const newest = (await mineSoFar())[0]!.id;
      await store.plants.createMany(owner, plantsFrom(1, 5));
      // On PostgreSQL an event is shown once no older transaction in the cluster can still commit one below it.
      const logged = () => store.events.ownerAfter(owner, newest, 2n ** 63n - 1n, 100);
      await eventually(async () => (await logged()).length >= 4, 10_000, { what: "the batch's events" });
      const events = await logged();
      assert.deepEqual(
        events.map((e) => [e.type, e.plantId, e.name]),
        [1n, 3n, 4n, 5n].map((id) => ['plant.created', id, `p${id}`]),
      );
      // A batch that stored nothing logged nothing.
      await store.plants.createMany(owner, [
        { id: 9n, name: 'nine' },
        { id: 2n, name: 'other' },
      ]);
      assert.equal((await store.events.ownerAfter(owner, newest, 2n ** 63n - 1n, 100)).length, 4);
    });

    it('fans one webhook delivery out per stored plant, in the batch order', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('webhooks');
      const { box } = readOrCreateKeyFile(join(dir, `${fx.kind}.key`));
      const id = `wh_${Math.random().toString(16).slice(2, 18)}`;
      await store.webhooks.add(
        { id, owner, url: 'http://127.0.0.1:9/x', events: ['plant.created'], createdAt: new Date(), keyId: box.keyId },
        box.seal(newSigningSecret().key, id),
      );
      assert.equal(
        (await store.plants.createMany(owner, [{ id: 1n, name: 'x' }, ...plantsFrom(1, 1)])).kind,
        'repeated',
      );
      await store.plants.createMany(owner, plantsFrom(1, 4));
      await store.plants.createMany(owner, [
        { id: 9n, name: 'nine' },
        { id: 2n, name: 'other' },
      ]);
      const claim = (keyId: string) =>
        store.outbox.claim({
          keyId,
          limit: 32,
          perEndpoint: 100,
          leaseMs: 60_000,
          exclude: [],
          perOwner: 8,
          busyOwners: new Map(),
          maxPending: 10_000,
        });
      // Fanned out first (a key no endpoint has claims nothing): on PostgreSQL, once the events are readable.
      const pending = async () => (await store.webhooks.list()).find((e) => e.id === id)!.pending;
      await eventually(async () => (await claim('no-such-key'), (await pending()) === 4), 10_000, {
        what: 'the four deliveries',
      });
      const claimed = await claim(box.keyId);
      const mine = claimed.filter((d) => d.endpointId === id);
      assert.deepEqual(
        mine.map((d) => [d.type, d.plantId]),
        [1n, 2n, 3n, 4n].map((n) => ['plant.created', n]),
      );
      assert.equal(await store.webhooks.remove(id), true);
    });

    it('a conflicting batch fails alone: writes committed with it keep theirs', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('alone');
      await store.plants.create(owner, { id: 0n, name: 'zero' });
      const [creates, bad, good] = await Promise.all([
        Promise.all(plantsFrom(100, 20).map((p) => store.plants.create(owner, p))),
        store.plants.createMany(owner, [...plantsFrom(200, 5), { id: 0n, name: 'not zero' }]),
        store.plants.createMany(owner, plantsFrom(300, 5)),
      ]);
      assert.deepEqual(new Set(creates), new Set(['created']));
      assert.deepEqual(bad, { kind: 'conflict', index: 5 });
      assert.equal(good.kind, 'stored');
      const names = (await listAll(store.plants, owner)).map((p) => p.name);
      assert.equal(names.length, 1 + 20 + 5);
      assert.ok(!names.some((n) => n.startsWith('p20')), 'nothing of the conflicting batch');
    });

    it('two batches racing on one id: one is stored whole, the other not at all', { timeout: TIMEOUT }, async () => {
      for (let round = 0; round < 5; round++) {
        const owner = newOwner('race');
        // Both batches share id 50, each with its own name for it.
        const a = [...plantsFrom(0, 50, 'a'), { id: 50n, name: 'a50' }];
        const b = [{ id: 50n, name: 'b50' }, ...plantsFrom(51, 50, 'b')];
        const [ra, rb] = await Promise.all([store.plants.createMany(owner, a), store.plants.createMany(owner, b)]);
        const kinds = [ra.kind, rb.kind].sort();
        assert.deepEqual(kinds, ['conflict', 'stored'], `round ${round}`);
        const winner = ra.kind === 'stored' ? a : b;
        assert.deepEqual(
          (await listAll(store.plants, owner)).map((p) => p.name),
          winner.map((p) => p.name),
          `round ${round}: exactly the winning batch`,
        );
        assert.deepEqual(ra.kind === 'conflict' ? ra : rb, {
          kind: 'conflict',
          index: ra.kind === 'conflict' ? 50 : 0,
        });
      }
    });

    it('refuses a create past the cap with the count, and still takes replays', { timeout: TIMEOUT }, async () => {
      const owner = newOwner('cap');
      const limits = { maxPlants: 3 };
      for (const p of plantsFrom(1, 3)) assert.equal(await store.plants.create(owner, p, limits), 'created');
      await assert.rejects(store.plants.create(owner, { id: 4n, name: 'p4' }, limits), (error: unknown) => {
        assert.ok(error instanceof TooManyPlantsError);
        assert.deepEqual([error.count, error.max, error.adding], [3, 3, 1]);
        assert.match(error.message, /has 3 plants and may have at most 3/);
        return true;
      });
      assert.equal(await store.plants.create(owner, { id: 2n, name: 'p2' }, limits), 'replayed');
      assert.equal(await store.plants.create(owner, { id: 2n, name: 'other' }, limits), 'conflict');
      // Without limits (an operator's import, another deployment's setting) the cap does not apply.
      assert.equal(await store.plants.create(owner, { id: 4n, name: 'p4' }), 'created');
      await assert.rejects(store.plants.create(owner, { id: 5n, name: 'p5' }, limits), /has 4 plants/);
      assert.equal(await store.plants.delete(owner, 4n), true);
      assert.equal(await store.plants.delete(owner, 3n), true);
      assert.equal(await store.plants.create(owner, { id: 5n, name: 'p5' }, limits), 'created');
    });

    it(
      'counts the plants a batch would store against the cap, storing nothing past it',
      { timeout: TIMEOUT },
      async () => {
        const owner = newOwner('cap-batch');
        const limits = { maxPlants: 5 };
        assert.equal((await store.plants.createMany(owner, plantsFrom(1, 3), limits)).kind, 'stored');
        await assert.rejects(store.plants.createMany(owner, plantsFrom(3, 4), limits), (error: unknown) => {
          assert.ok(error instanceof TooManyPlantsError);
          // Plant 3 is a replay: the batch would add 3 (4, 5, 6) to the 3 there.
          assert.deepEqual([error.count, error.max, error.adding], [3, 5, 3]);
          return true;
        });
        assert.equal((await listAll(store.plants, owner)).length, 3);
        assert.deepEqual(await store.plants.createMany(owner, plantsFrom(2, 4), limits), {
          kind: 'stored',
          outcomes: ['replayed', 'replayed', 'created', 'created'],
        });
        // At the cap, a batch of replays is still answered.
        assert.equal((await store.plants.createMany(owner, plantsFrom(1, 5), limits)).kind, 'stored');
        assert.equal((await listAll(store.plants, owner)).length, 5);
      },
    );

    it('N parallel creates and batches at the cap store at most N plants', { timeout: TIMEOUT }, async () => {
      for (const max of [1, 7]) {
        const owner = newOwner('cap-race');
        const limits = { maxPlants: max };
        const settled = await Promise.allSettled([
          ...plantsFrom(1, 30).map((p) => store.plants.create(owner, p, limits)),
          ...[100, 200, 300].map((from) => store.plants.createMany(owner, plantsFrom(from, 2), limits)),
        ]);
        const refused = settled.filter((s) => s.status === 'rejected');
        for (const r of refused) assert.ok(r.reason instanceof TooManyPlantsError, String(r.reason));
        const stored = (await listAll(store.plants, owner)).length;
        assert.equal(stored, max, `cap ${max}: ${stored} stored`);
      }
    });
  },
  ['sqlite', 'postgres', 'pgbouncer'],
);
