// POST /plants with an array over HTTP: the answer in order, every refusal
// with nothing stored (400 naming the element and field, 409 naming the
// element, 413, the cap), the per-owner quota (403) for one plant and for a
// batch, and one request for the rate limit.
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import { useApp, type AppHarness } from '../helpers/app.js';
import { createOk, createRaw, expectError, jsonBody, names, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { listPlants } from '../helpers/list-plants.js';

/** A batch body of plants p<from>..p<from+n-1>, written out so that ids keep every digit. */
const batchOf = (from: number, n: number, prefix = 'p') =>
  `[${Array.from({ length: n }, (_, i) => `{"id":${from + i},"name":"${prefix}${from + i}"}`).join(',')}]`;

async function refused(h: AppHarness, token: string, raw: string, status: number, message: RegExp): Promise<string> {
  const before = await names(h, token);
  const text = expectError(await createRaw(h, token, raw), status, message);
  assert.deepEqual(await names(h, token), before, 'a refused batch stored nothing');
  return text;
}

describeHttpLayer('HTTP batch create', (fx) => {
  describe('with the defaults', () => {
    const h = useApp(fx);

    it('answers 200 with the plants in the order sent, ids exact, tags only when given', async () => {
      const t = await h.token(newOwner('batch'));
      const raw =
        '[{"id":9223372036854775807,"name":"max","tag":"t"},{"id":"-9223372036854775808","name":"min"},' +
        '{"id":9007199254740993,"name":"odd","tag":""}]';
      const res = await createRaw(h, t, raw);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(jsonBody(res), [{ name: 'max', tag: 't' }, { name: 'min' }, { name: 'odd', tag: '' }]);
      assert.deepEqual(await names(h, t), ['max', 'min', 'odd']);
      // Each id is the one sent: deleting by the exact ids finds every plant.
      for (const id of ['9223372036854775807', '-9223372036854775808', '9007199254740993']) {
        assert.equal((await h.request({ method: 'DELETE', url: `/plants/${id}`, token: t })).statusCode, 204, id);
      }
    });

    it('takes a batch of one, and the single-object form stays as it was', async () => {
      const t = await h.token(newOwner('one'));
      const res = await createRaw(h, t, '[{"id":1,"name":"a"}]');
      assert.deepEqual([res.statusCode, jsonBody(res)], [200, [{ name: 'a' }]]);
      await createOk(h, t, 2, 'b', 'x');
      expectError(await createRaw(h, t, '{"id":3,"name":""}'), 400, /^name must be a string/);
    });

    it('answers 400 naming the element and field of every invalid plant, storing nothing', async () => {
      const t = await h.token(newOwner('invalid'));
      await createOk(h, t, 1, 'seed');
      const text = await refused(
        h,
        t,
        '[{"id":10,"name":"ok"},{"id":11,"name":"ok"},{"id":12,"name":""},{"id":13,"name":"x","color":"red"}]',
        400,
        /^\/2\/name: name must be a string of 1 to 256 characters/,
      );
      assert.match(text, /; \/3\/color: unknown property "color"$/);
      await refused(h, t, '[{"id":10,"name":"ok"},{"name":"no id"}]', 400, /^\/1\/id: id is required$/);
      await refused(h, t, '[{"id":10,"name":"ok"},"fern"]', 400, /^\/1: must be a JSON object with an id and a name$/);
      await refused(h, t, '[{"id":1.5,"name":"ok"}]', 400, /^\/0\/id: id must be an integer/);
      await refused(h, t, '[{"id":"0x10","name":"ok"}]', 400, /^\/0\/id: id must be an integer/);
    });

    it('answers 400 for an id given twice, naming both places, storing nothing', async () => {
      const t = await h.token(newOwner('twice'));
      await refused(
        h,
        t,
        '[{"id":1,"name":"a"},{"id":"2","name":"b"},{"id":2,"name":"b"}]',
        400,
        /^\/2\/id: id 2 is also at \/1: each id may appear once in a batch; nothing was stored$/,
      );
    });

    it('answers 409 naming the element whose id the owner has with other content, storing nothing', async () => {
      const t = await h.token(newOwner('conflict'));
      await createOk(h, t, 9007199254740994n, 'Monstera', 'tropical');
      const text = await refused(
        h,
        t,
        '[{"id":1,"name":"a"},{"id":9007199254740994,"name":"Monstera"}]',
        409,
        /^\/1\/id: a plant with id 9007199254740994 already exists with a different name or tag; nothing was stored$/,
      );
      // The document's example of this answer is the server's own words.
      const doc = JSON.parse((await h.request({ method: 'GET', url: '/openapi.json' })).body) as {
        paths: Record<string, { post: { responses: Record<string, { content: Record<string, unknown> }> } }>;
      };
      const media = doc.paths['/plants']!.post.responses['409']!.content['application/json'] as {
        examples: Record<string, { value: { error: number; message: string } }>;
      };
      assert.deepEqual(media.examples.batch!.value, { error: 409, message: text });
    });

    it('answers 200 for a replayed batch and stores nothing twice', async () => {
      const t = await h.token(newOwner('replay'));
      await createOk(h, t, 2, 'p2');
      for (let round = 0; round < 2; round++) {
        const res = await createRaw(h, t, batchOf(1, 3));
        assert.deepEqual([res.statusCode, jsonBody(res)], [200, [{ name: 'p1' }, { name: 'p2' }, { name: 'p3' }]]);
      }
      assert.deepEqual(await names(h, t), ['p2', 'p1', 'p3']);
    });

    it('answers 400 for an empty array and for more than 1000 plants', async () => {
      const t = await h.token(newOwner('size'));
      await refused(h, t, '[]', 400, /^request body is an empty array: send 1 to 1000 plants$/);
      const full = await createRaw(h, t, batchOf(1, 1000));
      assert.equal(full.statusCode, 200, full.body.slice(0, 200));
      assert.equal((jsonBody(full) as unknown[]).length, 1000);
      await refused(h, t, batchOf(2000, 1001), 400, /^a batch holds at most 1000 plants; this one has 1001$/);
    });

    it('two batches racing on one id over HTTP: one 200 whole, the other 409 whole', async () => {
      const t = await h.token(newOwner('race'));
      const [a, b] = await Promise.all([
        createRaw(h, t, `${batchOf(1, 20, 'a').slice(0, -1)},{"id":100,"name":"a100"}]`),
        createRaw(h, t, `[{"id":100,"name":"b100"},${batchOf(200, 20, 'b').slice(1)}`),
      ]);
      assert.deepEqual([a.statusCode, b.statusCode].sort(), [200, 409], `${a.body.slice(0, 100)} ${b.body}`);
      const stored = await names(h, t);
      assert.equal(stored.length, 21);
      assert.ok(stored.every((n) => n.startsWith(a.statusCode === 200 ? 'a' : 'b')));
    });
  });

  describe('with --max-batch 3 and a 2 KiB body limit', () => {
    const h = useApp(fx, { maxBatch: 3, bodyLimit: 2048 });

    it('answers 400 past the cap and 413 past the body limit', async () => {
      const t = await h.token(newOwner('cap'));
      assert.equal((await createRaw(h, t, batchOf(1, 3))).statusCode, 200);
      await refused(h, t, batchOf(10, 4), 400, /^a batch holds at most 3 plants; this one has 4$/);
      const big = `[{"id":20,"name":"${'n'.repeat(200)}"},{"id":21,"name":"${'n'.repeat(200)}"},{"id":22,"name":"${'x'.repeat(1800)}"}]`;
      await refused(h, t, big, 413, /larger than the limit of 2048 bytes/);
    });
  });

  describe('with --max-plants-per-owner 5', () => {
    const h = useApp(fx, { maxPlantsPerOwner: 5 });

    it('answers 403 with the count and the limit for a create or a batch past it, storing nothing', async () => {
      const t = await h.token(newOwner('quota'));
      assert.equal((await createRaw(h, t, batchOf(1, 4))).statusCode, 200);
      const text = await refused(h, t, batchOf(3, 4), 403, /^the owner has 4 plants and may have at most 5/);
      assert.match(text, /this request would store 2 more/);
      await createOk(h, t, 5, 'p5');
      await refused(
        h,
        t,
        '{"id":6,"name":"p6"}',
        403,
        /^the owner has 5 plants and may have at most 5 \(--max-plants-per-owner\)/,
      );
      // Replays and conflicts at the limit are answered as without it.
      await createOk(h, t, 5, 'p5');
      expectError(await createRaw(h, t, '{"id":5,"name":"other"}'), 409, /already exists/);
      assert.equal((await createRaw(h, t, batchOf(1, 5))).statusCode, 200);
      // Another owner has a count of its own.
      const other = await h.token(newOwner('quota'));
      assert.equal((await createRaw(h, other, batchOf(1, 5))).statusCode, 200);
    });

    it('N parallel creates at the limit store exactly N', async () => {
      const t = await h.token(newOwner('quota-race'));
      const answers = await Promise.all(
        Array.from({ length: 25 }, (_, i) => createRaw(h, t, `{"id":${i},"name":"p${i}"}`)),
      );
      const statuses = answers.map((r) => r.statusCode);
      assert.deepEqual(
        [statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 403).length],
        [5, 20],
        statuses.join(' '),
      );
      assert.equal((await names(h, t)).length, 5);
    });
  });

  describe('with --rate-limit 3/1m', () => {
    const h = useApp(fx, { rateLimit: { max: 3, windowMs: 60_000 } });

    it('counts a batch as one request, however many plants it holds', async () => {
      const owner = newOwner('rate');
      const t = await h.token(owner);
      for (let i = 0; i < 3; i++) {
        const res = await createRaw(h, t, batchOf(i * 100, 100));
        assert.equal(res.statusCode, 200, res.body.slice(0, 200));
      }
      expectError(await createRaw(h, t, batchOf(1000, 1)), 429, /each token owner may make 3 requests per minute/);
      // Read from the store: a list would be a fifth request.
      assert.equal((await listPlants(h.store.plants, owner, 1000)).plants.length, 300);
    });
  });
});
