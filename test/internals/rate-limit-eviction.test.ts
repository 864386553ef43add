// The in-memory rate limits under memory pressure: counters are bounded, and
// what a bound drops must never hand a limited owner a fresh window.
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import { registerErrorHandling } from '../../src/app/error-handler.js';
import { bearerAuth } from '../../src/auth/bearer.js';
import { TokenCache } from '../../src/auth/token-cache.js';
import { issueToken } from '../../src/auth/tokens.js';
import { ErrorBody } from '../../src/schemas/error.js';
import { registerRateLimits } from '../../src/plugins/rate-limit.js';
import type { Store } from '../../src/store/store.js';
import { after, before, it } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

const MAX_KEYS = 20;

describeOnStore('sqlite', 'in-memory rate limits, bounded', (fx) => {
  let store: Store;
  let app: FastifyInstance;
  before(async () => {
    store = await fx.open();
    app = Fastify();
    app.decorateRequest('principal', null as never);
    app.addSchema(ErrorBody);
    registerErrorHandling(app, 1024, false);
    await registerRateLimits(
      app,
      {
        rateLimit: { max: 2, windowMs: 60_000 },
        authFailLimit: { max: 1_000, windowMs: 60_000 },
        redis: null,
        redisKeyPrefix: '',
      },
      { maxKeys: MAX_KEYS },
    );
    const authenticate = bearerAuth(new TokenCache(store.tokens, 0));
    app.get(
      '/plants',
      { schema: { security: [{ bearer: [] }] }, onRequest: authenticate('plants:read') },
      async () => ({}),
    );
    await app.ready();
  });
  after(async () => {
    await app?.close();
  });

  const get = (token: string, remoteAddress = '10.1.0.1') =>
    app.inject({ method: 'GET', url: '/plants', remoteAddress, headers: { authorization: `Bearer ${token}` } });

  it('failed logins from many addresses do not give a limited owner a fresh window', { timeout: 30_000 }, async () => {
    const { token } = await issueToken(store.tokens, { owner: 'limited' });
    assert.equal((await get(token)).statusCode, 200);
    assert.equal((await get(token)).statusCode, 200);
    assert.equal((await get(token)).statusCode, 429);
    const unknown = `plnt_${'x'.repeat(43)}`;
    for (let i = 0; i < MAX_KEYS * 3; i++) {
      assert.equal((await get(unknown, `10.2.${i >> 8}.${i & 255}`)).statusCode, 401);
    }
    // The failure counts land after the answer; let them settle.
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal((await get(token)).statusCode, 429);
  });
});
