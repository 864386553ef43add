// plant-store/client's createPlants against a real server on an ephemeral
// port: one request for the batch, ids exact as bigint, the plants back in
// order, and a PlantStoreError naming the element when nothing was stored.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { after, before, it } from '../helpers/requirements.js';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { setTimeout as delay } from 'node:timers/promises';
import { PlantStoreClient, PlantStoreError, type Plant, type PlantChange } from '../../src/client/index.js';
import type { Store } from '../../src/store/store.js';
import { newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

describeHttpLayer('plant-store/client createPlants', (fx) => {
  let store: Store;
  let app: FastifyInstance;
  let baseUrl = '';
  before(async () => {
    store = await fx.open();
    app = await buildApp(fx.config(), { store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await app?.close();
  });

  async function newClient(): Promise<{ client: PlantStoreClient; requests: string[] }> {
    const { token } = await issueToken(store.tokens, { owner: newOwner('client-batch') });
    const requests: string[] = [];
    const client = new PlantStoreClient({
      baseUrl,
      token,
      fetch: (input, init) => {
        requests.push(`${init?.method ?? 'GET'} ${String(input)}`);
        return fetch(input, init);
      },
    });
    return { client, requests };
  }

  it('creates a batch in one request, with bigint ids exact, and answers the plants in order', async () => {
    const { client, requests } = await newClient();
    const created: Plant[] = await client.createPlants([
      { id: 2n ** 53n + 1n, name: 'odd', tag: 'x' },
      { id: 2n ** 53n, name: 'even' },
      { id: 7, name: 'seven' },
    ]);
    assert.deepEqual(created, [{ name: 'odd', tag: 'x' }, { name: 'even' }, { name: 'seven' }]);
    assert.deepEqual(requests, [`POST ${baseUrl}/plants`]);
    // Two plants, not one: the ids kept every digit.
    await client.deletePlant(2n ** 53n + 1n);
    assert.deepEqual(await client.listPlants(), [{ name: 'even' }, { name: 'seven' }]);
  });

  it('rejects with the PlantStoreError of the element, and nothing is stored', async () => {
    const { client } = await newClient();
    await client.createPlant({ id: 1n, name: 'one' });
    const conflict = await client
      .createPlants([
        { id: 5n, name: 'five' },
        { id: 1n, name: 'other' },
      ])
      .catch((e: unknown) => e);
    assert.ok(conflict instanceof PlantStoreError);
    assert.equal(conflict.status, 409);
    assert.match(conflict.body.message, /^\/1\/id: a plant with id 1 already exists/);
    const invalid = await client.createPlants([{ id: 5n, name: '' }]).catch((e: unknown) => e);
    assert.ok(invalid instanceof PlantStoreError);
    assert.equal(invalid.status, 400);
    assert.match(invalid.body.message, /^\/0\/name: /);
    assert.deepEqual(await client.listPlants(), [{ name: 'one' }]);
  });

  it('a stream sees one event per stored plant of a batch, in order, and none for replays', async () => {
    const { client } = await newClient();
    await client.createPlant({ id: 2n, name: 'p2' });
    const controller = new AbortController();
    const got: PlantChange[] = [];
    const reading = (async () => {
      for await (const change of client.watchPlants({ signal: controller.signal })) {
        got.push(change);
        if (got.length === 5) controller.abort();
      }
    })().catch(() => undefined);
    await delay(200);
    await client.createPlants([1n, 2n, 3n].map((id) => ({ id, name: `p${id}` })));
    await client.createPlants([4n, 5n, 6n].map((id) => ({ id, name: `p${id}` })));
    await Promise.race([reading, delay(10_000)]);
    controller.abort();
    assert.deepEqual(
      got.map((c) => (c.type === 'reset' ? c.type : [c.type, c.data.id])),
      // p2 was created before the stream opened, and is a replay in the first batch.
      [1n, 3n, 4n, 5n, 6n].map((id) => ['plant.created', id]),
    );
  });

  it('refuses an id that is not exact before anything is sent', async () => {
    const { client, requests } = await newClient();
    await assert.rejects(
      client.createPlants([
        { id: 1, name: 'a' },
        { id: 2 ** 53, name: 'b' },
      ]),
      RangeError,
    );
    assert.deepEqual(requests, []);
  });
});
