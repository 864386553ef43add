// List pages are reused from memory while nothing changed; a change made by
// another connection to the same SQLite file (another worker or server
// process) must be visible to the very next request after it was acknowledged.
import assert from 'node:assert/strict';
import { before, it } from '../helpers/requirements.js';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Store } from '../../src/store/store.js';
import { describeOnStore } from '../helpers/stores.js';

describeOnStore('sqlite', 'list page reuse across connections', (fx) => {
  let a: FastifyInstance;
  let b: FastifyInstance;
  let token: string;
  let tokensB: Store['tokens'];
  before(async () => {
    // Two stores = two connections to one file, as two processes would have.
    const storeA = await fx.open();
    const opened = await fx.open();
    tokensB = opened.tokens;
    a = await buildApp(fx.config(), { store: storeA });
    b = await buildApp(fx.config(), { store: opened });
    token = (await issueToken(storeA.tokens, { owner: 'shared' })).token;
  });

  const headers = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
  const names = async (app: FastifyInstance, url = '/plants?limit=5') =>
    (JSON.parse((await app.inject({ method: 'GET', url, headers: headers() })).body) as { name: string }[]).map(
      (p) => p.name,
    );

  it('sees creates and deletes made through another connection at once', async () => {
    assert.deepEqual(await names(b), []);
    for (let i = 1; i <= 20; i++) {
      const created = await a.inject({
        method: 'POST',
        url: '/plants',
        headers: headers(),
        payload: `{"id":${i},"name":"p${i}"}`,
      });
      assert.equal(created.statusCode, 200);
      const seen = await names(b, '/plants?limit=100');
      assert.equal(seen.at(-1), `p${i}`, `after create ${i}`);
      assert.equal(seen.length, i);
      // Same page again: served from memory, still right.
      assert.deepEqual(await names(b, '/plants?limit=100'), seen);
    }
    for (let i = 1; i <= 5; i++) {
      assert.equal((await a.inject({ method: 'DELETE', url: `/plants/${i}`, headers: headers() })).statusCode, 204);
      assert.deepEqual((await names(b)).slice(0, 1), [`p${i + 1}`], `after delete ${i}`);
    }
  });

  it("sees another connection's write to one owner at once while its own writes to another owner flow", async () => {
    const other = (await issueToken(tokensB, { owner: 'busy' })).token;
    const busy = { authorization: `Bearer ${other}`, 'content-type': 'application/json' };
    let stop = false;
    let written = 0;
    // Owner "busy" writes through b without pause, so b's own commits keep
    // changing what SQLite reports, alongside a's.
    const flow = (async () => {
      for (let id = 1; !stop; id++) {
        const res = await b.inject({
          method: 'POST',
          url: '/plants',
          headers: busy,
          payload: `{"id":${id},"name":"b${id}"}`,
        });
        assert.equal(res.statusCode, 200);
        written++;
      }
    })();
    try {
      for (let i = 1; i <= 40; i++) {
        const before = await names(b, '/plants?limit=1000');
        assert.deepEqual(await names(b, '/plants?limit=1000'), before, 'the same page twice');
        const id = 1000 + i;
        const created = await a.inject({
          method: 'POST',
          url: '/plants',
          headers: headers(),
          payload: `{"id":${id},"name":"x${id}"}`,
        });
        assert.equal(created.statusCode, 200);
        assert.deepEqual(await names(b, '/plants?limit=1000'), [...before, `x${id}`], `after create ${id}`);
      }
    } finally {
      stop = true;
      await flow;
    }
    assert.ok(written > 0, 'the other owner wrote meanwhile');
  });

  it('sees its own writes at once', async () => {
    const before = await names(b, '/plants?limit=1000');
    await b.inject({ method: 'POST', url: '/plants', headers: headers(), payload: '{"id":500,"name":"own"}' });
    assert.deepEqual(await names(b, '/plants?limit=1000'), [...before, 'own']);
    await b.inject({ method: 'DELETE', url: '/plants/500', headers: headers() });
    assert.deepEqual(await names(b, '/plants?limit=1000'), before);
  });
});
