// The issuer's signing keys over time: key rotation without a restart, a
// cooldown that keeps a flood of unknown kids from hammering the JWKS
// endpoint, known keys that keep working while the issuer is unreachable, an
// issuer never reached, OIDC discovery, and /readyz through all of it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from '../helpers/requirements.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Config } from '../../src/config.js';
import type { Store } from '../../src/store/store.js';
import { AUDIENCE, TestIssuer } from '../helpers/jwt-issuer.js';
import { eventually } from '../helpers/eventually.js';
import { jsonBody, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer, type StoreFixture } from '../helpers/stores.js';

interface Harness {
  app: FastifyInstance;
  list(token: string): Promise<LightMyRequestResponse>;
  readyz(): Promise<LightMyRequestResponse>;
}

/** An app on the suite's store with JWTs from `issuer`; closed by the caller. */
async function jwtApp(fx: StoreFixture, store: Store, settings: Partial<Config>): Promise<Harness> {
  const app = await buildApp(fx.config({ jwtAudience: AUDIENCE, ...settings }), { store });
  await app.ready();
  return {
    app,
    list: (token) => app.inject({ method: 'GET', url: '/plants', headers: { authorization: `Bearer ${token}` } }),
    readyz: () => app.inject({ method: 'GET', url: '/readyz' }),
  };
}

const isOk = async (res: Promise<LightMyRequestResponse>) => (await res).statusCode === 200;

function jwksOf(res: LightMyRequestResponse): { keys: number; stale: boolean; fetchedAt: string } {
  assert.equal(res.statusCode, 200, res.body);
  return (jsonBody(res) as { jwks: { keys: number; stale: boolean; fetchedAt: string } }).jwks;
}

function expectRefused(res: LightMyRequestResponse, why: RegExp): void {
  assert.equal(res.statusCode, 401, res.body);
  assert.match(String(res.headers['www-authenticate']), /^Bearer realm="plants", error="invalid_token"/);
  assert.match(String(res.headers['www-authenticate']), why);
}

describeHttpLayer('JWT signing keys', (fx) => {
  let store: Store;
  const issuers: TestIssuer[] = [];
  const apps: FastifyInstance[] = [];
  before(async () => {
    store = await fx.open();
  });
  after(async () => {
    for (const app of apps) await app.close();
    for (const issuer of issuers) await issuer.close();
  });

  async function setup(settings: (issuer: TestIssuer) => Partial<Config>, mode: TestIssuer['mode'] = 'ok') {
    const issuer = await TestIssuer.start();
    issuers.push(issuer);
    issuer.mode = mode;
    const kid = await issuer.addKey('ES256');
    const h = await jwtApp(fx, store, { jwtIssuer: issuer.url, ...settings(issuer) });
    apps.push(h.app);
    return { issuer, kid, h };
  }

  describe('with the default cooldown', () => {
    // Date is mocked: the cooldown is waited for by moving the clock, not in real time.
    it('a key added after start is accepted once the 10 s cooldown has passed, and a flood of unknown kids fetches the JWKS at most twice', async (t) => {
      const { issuer, h } = await setup((i) => ({ jwksUrl: i.jwksUrl }));
      await eventually(() => isOk(h.readyz()), 10_000, { stepMs: 50 });
      assert.equal(jwksOf(await h.readyz()).keys, 1);
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() });

      const newKid = await issuer.addKey('RS256');
      const token = await issuer.sign(newKid, newOwner('rot'));
      expectRefused(await h.list(token), /signing key/);
      assert.equal(issuer.jwksFetches, 1, 'within the cooldown of the start-up fetch the JWKS is not fetched again');
      t.mock.timers.tick(10_000);
      const took = await eventually(() => isOk(h.list(token)), 10_000, { stepMs: 50 });
      assert.equal(jwksOf(await h.readyz()).keys, 2);
      assert.ok(issuer.jwksFetches <= 3, `fetches for one rotation: ${issuer.jwksFetches} (took ${took} ms)`);

      // 600 tokens with kids nobody published, over about 2 s of the clock.
      const before = issuer.jwksFetches;
      const unknown = await issuer.addKey('ES256', { publish: false });
      for (let round = 0; round < 20; round++) {
        const answers = await Promise.all(
          Array.from({ length: 30 }, async () =>
            h.list(await issuer.sign(unknown, 'flood', {}, { kid: randomBytes(8).toString('hex') })),
          ),
        );
        for (const res of answers) expectRefused(res, /signing key/);
        t.mock.timers.tick(100);
      }
      t.diagnostic(`JWKS fetches during a flood of 600 unknown kids over 2 s: ${issuer.jwksFetches - before}`);
      assert.ok(issuer.jwksFetches - before <= 2, `JWKS fetches during the flood: ${issuer.jwksFetches - before}`);
      assert.equal((await h.list(token)).statusCode, 200, 'the rotated-in key still works');
    });
  });

  // Each test has an issuer and an app of its own, and waits in real time: they run at once.
  describe('with a short cooldown', { concurrency: true }, () => {
    const fast = { jwksCooldownMs: 200 };

    it('a flood of unknown kids spread over several cooldowns: at most one JWKS fetch per cooldown', async (t) => {
      const { issuer, h } = await setup((i) => ({ jwksUrl: i.jwksUrl, jwksCooldownMs: 500 }));
      await eventually(() => isOk(h.readyz()), 10_000, { stepMs: 50 });
      const unknown = await issuer.addKey('ES256', { publish: false });
      const tokens = await Promise.all(
        Array.from({ length: 50 }, () => issuer.sign(unknown, 'flood', {}, { kid: randomBytes(8).toString('hex') })),
      );
      const before = issuer.jwksFetches;
      const start = Date.now();
      let sent = 0;
      while (Date.now() - start < 2000) {
        const answers = await Promise.all(tokens.map((token) => h.list(token)));
        for (const res of answers) expectRefused(res, /signing key/);
        sent += answers.length;
      }
      const fetches = issuer.jwksFetches - before;
      t.diagnostic(`${sent} requests with unknown kids in ${Date.now() - start} ms: ${fetches} JWKS fetches`);
      assert.ok(fetches >= 1, 'an unknown kid makes the server look again');
      assert.ok(fetches <= Math.ceil((Date.now() - start) / 500) + 1, `${fetches} fetches`);
    });

    it('issuer unreachable: keys already known keep working, /readyz stays 200 and says stale', async () => {
      const { issuer, kid, h } = await setup((i) => ({ jwksUrl: i.jwksUrl, ...fast }));
      await eventually(() => isOk(h.readyz()), 10_000, { stepMs: 50 });
      const owner = newOwner('known');
      assert.equal((await h.list(await issuer.sign(kid, owner))).statusCode, 200);

      for (const mode of ['unreachable', 'error'] as const) {
        issuer.mode = mode;
        const fetches = issuer.jwksFetches;
        await sleep(250);
        // An unknown kid makes the server try the JWKS again, which fails.
        const ghost = await issuer.addKey('ES256', { publish: false });
        expectRefused(await h.list(await issuer.sign(ghost, owner)), /signing key/);
        assert.ok(issuer.jwksFetches > fetches, `${mode}: the JWKS was tried again`);
        // A token never seen before (not in the cache), signed with the known key.
        assert.equal((await h.list(await issuer.sign(kid, owner))).statusCode, 200, `${mode}: known key`);
        const jwks = jwksOf(await h.readyz());
        assert.equal(jwks.stale, true, `${mode}: stale`);
        assert.equal(jwks.keys, 1);
      }

      issuer.mode = 'ok';
      const next = await issuer.addKey('EdDSA');
      await eventually(async () => (await h.list(await issuer.sign(next, owner))).statusCode === 200, 10_000);
      const jwks = jwksOf(await h.readyz());
      assert.equal(jwks.stale, false);
      assert.equal(jwks.keys, 2);
    });

    it('issuer never reached: /readyz 503, JWTs 401, opaque tokens unaffected; all well once it answers', async () => {
      // Failed fetches are retried after 100 ms, doubling, rather than 1 s: the recovery comes sooner.
      const { issuer, kid, h } = await setup((i) => ({ jwksUrl: i.jwksUrl, ...fast, jwksRetryMs: 100 }), 'unreachable');
      await eventually(async () => issuer.jwksFetches > 0, 5_000, { stepMs: 20 });
      const ready = await h.readyz();
      assert.equal(ready.statusCode, 503);
      assert.deepEqual(jsonBody(ready), {
        error: 503,
        message: 'the JWT signing keys have not been fetched from the issuer yet',
      });

      const owner = newOwner('never');
      await sleep(250);
      expectRefused(await h.list(await issuer.sign(kid, owner)), /no known signing key/);
      const opaque = (await issueToken(store.tokens, { owner })).token;
      assert.equal((await h.list(opaque)).statusCode, 200, 'opaque token');

      issuer.mode = 'ok';
      const took = await eventually(() => isOk(h.readyz()), 15_000, { stepMs: 100 });
      assert.equal((await h.list(await issuer.sign(kid, owner))).statusCode, 200, `JWT ${took} ms after recovery`);
    });

    it('a key removed from the JWKS stops working, also for tokens already verified with it', async () => {
      const { issuer, kid, h } = await setup((i) => ({ jwksUrl: i.jwksUrl, ...fast }));
      await eventually(() => isOk(h.readyz()), 10_000, { stepMs: 50 });
      const replacement = await issuer.addKey('PS256');
      const token = await issuer.sign(kid, newOwner('old'));
      assert.equal((await h.list(token)).statusCode, 200);
      issuer.unpublish(kid);
      await sleep(250);
      // The new key is unknown to the server, so it fetches the set and learns both changes.
      assert.equal((await h.list(await issuer.sign(replacement, newOwner('new')))).statusCode, 200);
      expectRefused(await h.list(token), /signing key/);
    });

    it('--oidc-issuer discovers the JWKS URL once and uses it', async () => {
      const { issuer, kid, h } = await setup((i) => ({ oidcIssuer: i.url, ...fast }));
      await eventually(() => isOk(h.readyz()), 10_000, { stepMs: 50 });
      assert.equal((await h.list(await issuer.sign(kid, newOwner('oidc')))).statusCode, 200);
      const later = await issuer.addKey('RS256');
      await sleep(250);
      assert.equal((await h.list(await issuer.sign(later, newOwner('oidc')))).statusCode, 200);
      assert.equal(issuer.discoveryFetches, 1);
      assert.equal(issuer.jwksFetches, 2);
    });

    it('a discovery document that names another issuer is not trusted', async () => {
      const { issuer, kid, h } = await setup((i) => {
        i.discoveryIssuer = 'https://evil.example';
        return { oidcIssuer: i.url, ...fast };
      });
      await eventually(async () => issuer.discoveryFetches > 0, 5_000, { stepMs: 20 });
      await sleep(250);
      assert.equal((await h.readyz()).statusCode, 503);
      expectRefused(await h.list(await issuer.sign(kid, newOwner('oidc'))), /no known signing key/);
      assert.equal(issuer.jwksFetches, 0);
    });

    it('--jwt-owner-claim takes the owner from another claim', async () => {
      const { issuer, kid, h } = await setup((i) => ({
        jwksUrl: i.jwksUrl,
        jwtOwnerClaim: 'preferred_username',
        ...fast,
      }));
      await eventually(() => isOk(h.readyz()), 10_000, { stepMs: 50 });
      const owner = newOwner('named');
      const opaque = (await issueToken(store.tokens, { owner })).token;
      const created = await h.app.inject({
        method: 'POST',
        url: '/plants',
        headers: { authorization: `Bearer ${opaque}`, 'content-type': 'application/json' },
        payload: '{"id":1,"name":"mine"}',
      });
      assert.equal(created.statusCode, 200, created.body);
      const res = await h.list(await issuer.sign(kid, 'some-uuid', { preferred_username: owner }));
      assert.deepEqual(jsonBody(res), [{ name: 'mine' }]);
      expectRefused(await h.list(await issuer.sign(kid, owner)), /preferred_username/);
    });
  });
});
