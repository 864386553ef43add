// Create, list, delete over HTTP: the happy paths, idempotent retries and 409,
// owner isolation, exact int64 ids, page size and keyset paging.
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { useApp, type AppHarness } from '../helpers/app.js';
import {
  createOk,
  createRaw,
  deletePlant,
  expectError,
  getPage,
  listAll,
  names,
  newOwner,
} from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

const INT64_MIN = '-9223372036854775808';
const INT64_MAX = '9223372036854775807';
const TWO_53 = '9007199254740992';
const TWO_53_PLUS_1 = '9007199254740993';

async function ownerToken(h: AppHarness, prefix = 'o'): Promise<string> {
  return h.token(newOwner(prefix));
}

/** Creates plants p<from>..p<to-1> with ids from..to-1, one after the other. */
async function seed(h: AppHarness, token: string, from: number, to: number, prefix = 'p'): Promise<string[]> {
  const created: string[] = [];
  for (let i = from; i < to; i++) {
    await createOk(h, token, i, `${prefix}${i}`);
    created.push(`${prefix}${i}`);
  }
  return created;
}

function assertNoRepeats(seen: string[]): void {
  const repeated = seen.filter((n, i) => seen.indexOf(n) !== i);
  assert.deepEqual(repeated, [], 'plants returned more than once while paging');
}

describeHttpLayer('HTTP plants: create, list, delete', (fx) => {
  const h = useApp(fx);

  describe('create', () => {
    it('answers 200 with the plant (no id), tag only when given', async () => {
      const t = await ownerToken(h);
      await createOk(h, t, 1, 'Monstera', 'aroid');
      await createOk(h, t, 2, 'Fern');
      await createOk(h, t, 3, 'Cactus', '');
      assert.deepEqual((await listAll(h, t)).plants, [
        { name: 'Monstera', tag: 'aroid' },
        { name: 'Fern' },
        { name: 'Cactus', tag: '' },
      ]);
    });

    it('accepts application/json with a charset parameter', async () => {
      const t = await ownerToken(h);
      const res = await createRaw(h, t, '{"id":1,"name":"Ivy"}', { 'content-type': 'application/json; charset=utf-8' });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(await names(h, t), ['Ivy']);
    });

    it('accepts name and tag at the 256-character limit and a 1-character name', async () => {
      const t = await ownerToken(h);
      await createOk(h, t, 1, 'n'.repeat(256), 't'.repeat(256));
      await createOk(h, t, 2, 'x');
      assert.deepEqual((await listAll(h, t)).plants, [{ name: 'n'.repeat(256), tag: 't'.repeat(256) }, { name: 'x' }]);
    });

    it('counts name and tag length in characters, as the maxLength of the OpenAPI schema does', async () => {
      // 129 characters outside the BMP: 129 code points (well within 256), but 258 UTF-16 code units.
      const t = await ownerToken(h);
      const cactus = '\u{1F335}'.repeat(129);
      await createOk(h, t, 1, cactus, cactus);
      assert.deepEqual((await listAll(h, t)).plants, [{ name: cactus, tag: cactus }]);
    });

    // No store could keep these exactly (PostgreSQL text refuses NUL, SQLite
    // turns a lone surrogate into U+FFFD), so the API refuses them (docs/reference/http-api.md).
    const NAME_REFUSED = 'name must be a string of 1 to 256 characters, without NUL or unpaired surrogates';
    const TAG_REFUSED = 'tag must be a string of at most 256 characters, without NUL or unpaired surrogates';

    it('refuses a name or tag with U+0000 with 400, storing nothing', async () => {
      const t = await ownerToken(h);
      expectError(await createRaw(h, t, '{"id":1,"name":"a\\u0000b"}'), 400, NAME_REFUSED);
      expectError(await createRaw(h, t, '{"id":1,"name":"a","tag":"c\\u0000"}'), 400, TAG_REFUSED);
      assert.deepEqual(await names(h, t), []);
    });

    it('refuses a name or tag with an unpaired surrogate with 400, storing nothing', async () => {
      const t = await ownerToken(h);
      for (const lone of ['\\ud83c', '\\udf35', 'a\\udf35\\ud83cb']) {
        expectError(await createRaw(h, t, `{"id":1,"name":"${lone}"}`), 400, NAME_REFUSED);
        expectError(await createRaw(h, t, `{"id":1,"name":"a","tag":"${lone}"}`), 400, TAG_REFUSED);
      }
      assert.deepEqual(await names(h, t), []);
    });
  });

  describe('retries and conflicts', () => {
    it('an identical create is a safe retry: 200, nothing duplicated', async () => {
      const t = await ownerToken(h);
      await createOk(h, t, 7, 'Aloe', 'succulent');
      await createOk(h, t, 7, 'Aloe', 'succulent');
      await createOk(h, t, 8, 'Basil');
      await createOk(h, t, 8, 'Basil');
      assert.deepEqual((await listAll(h, t)).plants, [{ name: 'Aloe', tag: 'succulent' }, { name: 'Basil' }]);
    });

    const conflicts: Array<[string, string, string]> = [
      ['a different name', '{"id":5,"name":"Rose","tag":"flower"}', '{"id":5,"name":"Tulip","tag":"flower"}'],
      ['a different tag', '{"id":5,"name":"Rose","tag":"flower"}', '{"id":5,"name":"Rose","tag":"shrub"}'],
      ['a tag where there was none', '{"id":5,"name":"Rose"}', '{"id":5,"name":"Rose","tag":"flower"}'],
      ['no tag where there was one', '{"id":5,"name":"Rose","tag":"flower"}', '{"id":5,"name":"Rose"}'],
      ['tag "" where there was none', '{"id":5,"name":"Rose"}', '{"id":5,"name":"Rose","tag":""}'],
      ['no tag where the tag was ""', '{"id":5,"name":"Rose","tag":""}', '{"id":5,"name":"Rose"}'],
    ];
    for (const [what, first, second] of conflicts) {
      it(`the same id with ${what} is 409 and the stored plant is unchanged`, async () => {
        const t = await ownerToken(h);
        assert.equal((await createRaw(h, t, first)).statusCode, 200);
        const before = (await listAll(h, t)).plants;
        expectError(await createRaw(h, t, second), 409, /\b5\b/);
        assert.deepEqual((await listAll(h, t)).plants, before);
        assert.equal((await createRaw(h, t, first)).statusCode, 200, 'the original is still a retry');
      });
    }

    it('after a delete the id is free again, and the new plant goes to the end of the list', async () => {
      const t = await ownerToken(h);
      await seed(h, t, 1, 4);
      assert.equal((await deletePlant(h, t, 1)).statusCode, 204);
      await createOk(h, t, 1, 'reborn', 'new');
      assert.deepEqual(await names(h, t), ['p2', 'p3', 'reborn']);
    });
  });

  describe('delete', () => {
    it('answers 204 with no body, removes only that plant, and a second delete is 404', async () => {
      const t = await ownerToken(h);
      await seed(h, t, 1, 4);
      const res = await deletePlant(h, t, 2);
      assert.equal(res.statusCode, 204);
      assert.equal(res.body, '');
      assert.equal(res.headers['content-type'], undefined);
      assert.deepEqual(await names(h, t), ['p1', 'p3']);
      expectError(await deletePlant(h, t, 2), 404, /\b2\b/);
      assert.deepEqual(await names(h, t), ['p1', 'p3']);
    });

    it('an id that never existed is 404 and changes nothing', async () => {
      const t = await ownerToken(h);
      await seed(h, t, 1, 3);
      expectError(await deletePlant(h, t, 99), 404, /\b99\b/);
      assert.deepEqual(await names(h, t), ['p1', 'p2']);
    });
  });

  describe('owners', () => {
    it('each owner lists only their own plants, and ids are unique per owner only', async () => {
      const a = await ownerToken(h, 'a');
      const b = await ownerToken(h, 'b');
      await createOk(h, a, 1, 'A one');
      await createOk(h, b, 1, 'B one', 'b');
      await createOk(h, a, 2, 'A two');
      assert.deepEqual(await names(h, a), ['A one', 'A two']);
      assert.deepEqual((await listAll(h, b)).plants, [{ name: 'B one', tag: 'b' }]);
    });

    it("another owner's id is 404 exactly like a missing one, and their plant survives", async () => {
      const a = await ownerToken(h, 'a');
      const b = await ownerToken(h, 'b');
      await createOk(h, a, 10, 'A ten');
      const foreign = expectError(await deletePlant(h, b, 10), 404, /\b10\b/);
      const missing = expectError(await deletePlant(h, b, 11), 404, /\b11\b/);
      assert.equal(foreign, missing.replace('11', '10'), 'the 404 must not reveal that the id exists for someone else');
      assert.deepEqual(await names(h, a), ['A ten']);
    });

    it('deleting an id removes it only for the caller, not for another owner with the same id', async () => {
      const a = await ownerToken(h, 'a');
      const b = await ownerToken(h, 'b');
      await createOk(h, a, 3, 'A three');
      await createOk(h, b, 3, 'B three');
      assert.equal((await deletePlant(h, a, 3)).statusCode, 204);
      assert.deepEqual(await names(h, a), []);
      assert.deepEqual(await names(h, b), ['B three']);
    });

    it('a retry with the same id by another owner is a create, not a conflict', async () => {
      const a = await ownerToken(h, 'a');
      const b = await ownerToken(h, 'b');
      await createOk(h, a, 4, 'same');
      await createOk(h, b, 4, 'different');
      assert.deepEqual(await names(h, a), ['same']);
      assert.deepEqual(await names(h, b), ['different']);
    });
  });

  describe('int64 ids', () => {
    it('ids 2^53 and 2^53+1 are two distinct plants', async () => {
      const t = await ownerToken(h);
      await createOk(h, t, BigInt(TWO_53), 'even');
      await createOk(h, t, BigInt(TWO_53_PLUS_1), 'odd');
      assert.deepEqual(await names(h, t), ['even', 'odd']);
      expectError(await createRaw(h, t, `{"id":${TWO_53_PLUS_1},"name":"even"}`), 409, new RegExp(TWO_53_PLUS_1));
      assert.equal((await deletePlant(h, t, TWO_53_PLUS_1)).statusCode, 204);
      assert.deepEqual(await names(h, t), ['even']);
      expectError(await deletePlant(h, t, TWO_53_PLUS_1), 404, new RegExp(TWO_53_PLUS_1));
      assert.equal((await deletePlant(h, t, TWO_53)).statusCode, 204);
      assert.deepEqual(await names(h, t), []);
    });

    it('both extremes work in the body and in the path, next to their neighbours', async () => {
      const t = await ownerToken(h);
      const ids = [INT64_MIN, String(BigInt(INT64_MIN) + 1n), INT64_MAX, String(BigInt(INT64_MAX) - 1n), '0', '-1'];
      for (const id of ids) await createOk(h, t, BigInt(id), `id ${id}`);
      for (const id of ids) await createOk(h, t, BigInt(id), `id ${id}`); // retries read the exact id back
      assert.deepEqual(
        await names(h, t),
        ids.map((id) => `id ${id}`),
      );
      for (const id of [INT64_MIN, INT64_MAX]) {
        assert.equal((await deletePlant(h, t, id)).statusCode, 204, `DELETE /plants/${id}`);
        expectError(await deletePlant(h, t, id), 404, /no plant/);
      }
      assert.deepEqual(
        await names(h, t),
        ids
          .slice(1)
          .filter((id) => id !== INT64_MAX)
          .map((id) => `id ${id}`),
      );
    });
  });

  describe('response headers', () => {
    it('plant data is no-store and nosniff', async () => {
      const t = await ownerToken(h);
      const created = await createRaw(h, t, '{"id":1,"name":"a"}');
      const listed = await h.request({ method: 'GET', url: '/plants', token: t });
      const deleted = await deletePlant(h, t, 1);
      for (const res of [created, listed, deleted]) {
        assert.equal(res.headers['cache-control'], 'no-store');
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
      }
    });

    it("an incoming X-Request-Id is replaced by the server's own, on success and on error alike", async () => {
      const t = await ownerToken(h);
      for (const id of ['req-123', 'a.b:c@d_e', 'x'.repeat(128)]) {
        const res = await h.request({ method: 'GET', url: '/plants', token: t, headers: { 'x-request-id': id } });
        assert.equal(res.statusCode, 200);
        assert.notEqual(res.headers['x-request-id'], id);
      }
      const unauthenticated = await h.request({
        method: 'GET',
        url: '/plants',
        headers: { 'x-request-id': 'on-error' },
      });
      assert.equal(unauthenticated.statusCode, 401);
      assert.notEqual(unauthenticated.headers['x-request-id'], 'on-error');
    });

    it('without a usable X-Request-Id each response gets its own generated one', async () => {
      const t = await ownerToken(h);
      const seen = new Set<string>();
      for (const incoming of [undefined, undefined, 'has space', 'x'.repeat(129), '<script>', '']) {
        const headers: Record<string, string> = incoming === undefined ? {} : { 'x-request-id': incoming };
        const res = await h.request({ method: 'GET', url: '/plants', token: t, headers });
        const id = res.headers['x-request-id'];
        assert.equal(typeof id, 'string');
        assert.ok((id as string).length > 0);
        assert.notEqual(id, incoming);
        assert.ok(!seen.has(id as string), `request id ${String(id)} reused`);
        seen.add(id as string);
      }
    });
  });

  describe('paging with the default limits (1000 / 1000)', () => {
    it('lists in insertion order, not id order', async () => {
      const t = await ownerToken(h);
      for (const id of [30, -5, 10, 20, 0]) await createOk(h, t, id, `id${id}`);
      const page = await getPage(h, t);
      assert.deepEqual(
        page.plants.map((p) => p.name),
        ['id30', 'id-5', 'id10', 'id20', 'id0'],
      );
      assert.equal(page.next, undefined);
    });

    it('an owner with no plants gets [] and no Link', async () => {
      const page = await getPage(h, await ownerToken(h));
      assert.deepEqual(page.plants, []);
      assert.equal(page.next, undefined);
    });

    it('?limit pages through every plant exactly once, with rel="next" until the last page', async () => {
      const t = await ownerToken(h);
      const all = await seed(h, t, 1, 8);
      const first = await getPage(h, t, '/plants?limit=3');
      assert.deepEqual(
        first.plants.map((p) => p.name),
        all.slice(0, 3),
      );
      assert.equal(first.nextLimit, 3);
      const { plants, pageSizes } = await listAll(h, t, '/plants?limit=3');
      assert.deepEqual(pageSizes, [3, 3, 1]);
      assert.deepEqual(
        plants.map((p) => p.name),
        all,
      );
    });

    it('a last page that is exactly full has no Link', async () => {
      const t = await ownerToken(h);
      const all = await seed(h, t, 1, 7);
      const { plants, pageSizes } = await listAll(h, t, '/plants?limit=3');
      assert.deepEqual(pageSizes, [3, 3]);
      assert.deepEqual(
        plants.map((p) => p.name),
        all,
      );
      assert.equal((await getPage(h, t, '/plants?limit=6')).next, undefined);
    });

    it('limit=1 walks one plant at a time', async () => {
      const t = await ownerToken(h);
      const all = await seed(h, t, 1, 5);
      const { plants, pageSizes } = await listAll(h, t, '/plants?limit=1');
      assert.deepEqual(pageSizes, [1, 1, 1, 1]);
      assert.deepEqual(
        plants.map((p) => p.name),
        all,
      );
    });

    it('default page size is 1000 and a larger limit is clamped to 1000', async () => {
      const owner = newOwner('many');
      const t = await h.token(owner);
      // Seeded through the store: 1001 HTTP round trips would only slow the suite down.
      const batch: Promise<unknown>[] = [];
      for (let i = 0; i < 1001; i++) batch.push(h.store.plants.create(owner, { id: BigInt(i), name: `m${i}` }));
      await Promise.all(batch);
      for (const url of ['/plants', '/plants?limit=5000', '/plants?limit=2147483647']) {
        const page = await getPage(h, t, url);
        assert.equal(page.plants.length, 1000, url);
        assert.equal(page.nextLimit, 1000, `${url}: Link carries the clamped limit`);
        const rest = await getPage(h, t, page.next!);
        assert.equal(rest.plants.length, 1, `${url}: second page`);
        assert.equal(rest.next, undefined);
        const seen = [...page.plants, ...rest.plants].map((p) => p.name);
        assertNoRepeats(seen);
        assert.equal(new Set(seen).size, 1001);
      }
    });

    it('paging stays exact when plants are deleted and inserted between pages', async () => {
      const t = await ownerToken(h);
      const originals = await seed(h, t, 0, 20, 'orig');
      const removedUnseen = new Set<string>();
      const removedSeen = new Set<string>();
      const added: string[] = [];
      const seen: string[] = [];
      let url: string | undefined = '/plants?limit=3';
      let step = 0;
      while (url !== undefined) {
        const page = await getPage(h, t, url);
        seen.push(...page.plants.map((p) => p.name));
        url = page.next;
        step++;
        // Delete one plant already returned, one not returned yet, and add a new one.
        const seenOriginal = seen.find((n) => originals.includes(n) && !removedSeen.has(n));
        if (seenOriginal) {
          assert.equal((await deletePlant(h, t, Number(seenOriginal.slice(4)))).statusCode, 204);
          removedSeen.add(seenOriginal);
        }
        const unseen = originals.filter((n) => !seen.includes(n) && !removedUnseen.has(n)).at(-1);
        if (unseen) {
          assert.equal((await deletePlant(h, t, Number(unseen.slice(4)))).statusCode, 204);
          removedUnseen.add(unseen);
        }
        if (step <= 5) {
          await createOk(h, t, 1000 + step, `new${step}`);
          added.push(`new${step}`);
        }
      }
      assertNoRepeats(seen);
      const expected = [...originals.filter((n) => !removedUnseen.has(n)), ...added];
      assert.deepEqual(seen, expected, 'every surviving plant once, in insertion order, deleted ones never');
      assert.deepEqual(
        await names(h, t),
        expected.filter((n) => !removedSeen.has(n)),
      );
    });

    it('paging stays exact while another client inserts and deletes at the same time', async () => {
      const t = await ownerToken(h);
      const originals = await seed(h, t, 0, 40, 'orig');
      const doomed = new Set(originals.filter((_, i) => i % 4 === 1));
      const added: string[] = [];

      const writer = (async () => {
        let i = 0;
        for (const name of doomed) {
          assert.equal((await deletePlant(h, t, Number(name.slice(4)))).statusCode, 204);
          await createOk(h, t, 5000 + i, `new${i}`);
          added.push(`new${i}`);
          i++;
          await sleep(1);
        }
      })();
      const reader = (async () => {
        const seen: string[] = [];
        let url: string | undefined = '/plants?limit=4';
        while (url !== undefined) {
          const page = await getPage(h, t, url);
          seen.push(...page.plants.map((p) => p.name));
          url = page.next;
          await sleep(1);
        }
        return seen;
      })();
      const [seen] = await Promise.all([reader, writer]);

      assertNoRepeats(seen);
      for (const name of originals) {
        if (!doomed.has(name)) assert.ok(seen.includes(name), `${name} existed throughout but was skipped`);
      }
      const known = new Set([...originals, ...added]);
      assert.deepEqual(
        seen.filter((n) => !known.has(n)),
        [],
      );
      const order = [...originals, ...added];
      assert.deepEqual(
        seen,
        order.filter((n) => seen.includes(n)),
        'pages follow insertion order',
      );
      assert.deepEqual(
        await names(h, t),
        order.filter((n) => !doomed.has(n)),
      );
    });
  });
});

describeHttpLayer('HTTP plants: page size with listDefaultLimit 3 and listMaxLimit 5', (fx) => {
  const h = useApp(fx, { listDefaultLimit: 3, listMaxLimit: 5 });

  async function ownerWith(count: number, prefix = 'p'): Promise<{ t: string; all: string[] }> {
    const t = await ownerToken(h);
    return { t, all: await seed(h, t, 1, count + 1, prefix) };
  }

  it('without ?limit a page holds listDefaultLimit plants and the Link says so', async () => {
    const { t, all } = await ownerWith(8);
    const page = await getPage(h, t);
    assert.deepEqual(
      page.plants.map((p) => p.name),
      all.slice(0, 3),
    );
    assert.equal(page.nextLimit, 3);
    const { plants, pageSizes } = await listAll(h, t);
    assert.deepEqual(pageSizes, [3, 3, 2]);
    assert.deepEqual(
      plants.map((p) => p.name),
      all,
    );
  });

  for (const limit of [6, 100, 2147483647]) {
    it(`limit=${limit} is clamped to listMaxLimit (5), in the page and in the Link`, async () => {
      const { t, all } = await ownerWith(12);
      const page = await getPage(h, t, `/plants?limit=${limit}`);
      assert.equal(page.plants.length, 5);
      assert.equal(page.nextLimit, 5);
      const { plants, pageSizes } = await listAll(h, t, `/plants?limit=${limit}`);
      assert.deepEqual(pageSizes, [5, 5, 2]);
      assert.deepEqual(
        plants.map((p) => p.name),
        all,
      );
    });
  }

  it('a limit below the maximum is honoured', async () => {
    const { t, all } = await ownerWith(5);
    const { plants, pageSizes } = await listAll(h, t, '/plants?limit=4');
    assert.deepEqual(pageSizes, [4, 1]);
    assert.deepEqual(
      plants.map((p) => p.name),
      all,
    );
  });

  it("a cursor from one owner does not reveal another owner's plants", async () => {
    const a = await ownerWith(4, 'a');
    const b = await ownerWith(4, 'b');
    const page = await getPage(h, a.t, '/plants?limit=2');
    const res = await h.request({ method: 'GET', url: page.next!, token: b.t });
    expectError(res, 400, 'cursor must be a value taken from a Link rel="next" URL');
  });
});
