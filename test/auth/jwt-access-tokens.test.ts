// JWT access tokens next to opaque tokens: signature algorithms, claims with
// the 30 s clock tolerance, scopes, the shared owner namespace, the verified-
// token cache, and the 401/403 answers in the same shape as opaque tokens'.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from '../helpers/requirements.js';
import type { LightMyRequestResponse } from 'fastify';
import { exportSPKI, UnsecuredJWT } from 'jose';
import { issueToken } from '../../src/auth/tokens.js';
import type { Config } from '../../src/config.js';
import { useApp } from '../helpers/app.js';
import { AUDIENCE, b64url, TestIssuer } from '../helpers/jwt-issuer.js';
import { eventually } from '../helpers/eventually.js';
import { createRaw, expectError, jsonBody, names, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

/** The auth-params of a Bearer WWW-Authenticate header. */
function challenge(res: LightMyRequestResponse): Record<string, string> {
  const header = res.headers['www-authenticate'];
  assert.equal(typeof header, 'string', `no WWW-Authenticate on ${res.statusCode}: ${res.body}`);
  assert.match(header as string, /^Bearer /);
  const params: Record<string, string> = {};
  for (const m of (header as string).matchAll(/([a-z_]+)="([^"]*)"/g)) params[m[1]!] = m[2]!;
  return params;
}

/** 401 exactly as for a bad opaque token; returns the error_description. */
function expectInvalidToken(res: LightMyRequestResponse, why?: RegExp): string {
  expectError(res, 401, /^invalid bearer token: /);
  const params = challenge(res);
  assert.equal(params.realm, 'plants');
  assert.equal(params.error, 'invalid_token');
  if (why) assert.match(params.error_description ?? '', why);
  return params.error_description ?? '';
}

function expectInsufficientScope(res: LightMyRequestResponse, scope: string): void {
  expectError(res, 403, `this token lacks the ${scope} scope`);
  assert.equal(
    res.headers['www-authenticate'],
    `Bearer realm="plants", error="insufficient_scope", scope="${scope}"`,
    'the same challenge as for an opaque token',
  );
}

describeHttpLayer('JWT bearer tokens', (fx) => {
  let issuer: TestIssuer;
  const keys: Record<string, string> = {};
  const overrides: Partial<Config> = {};
  before(async () => {
    issuer = await TestIssuer.start();
    for (const alg of ['RS256', 'PS256', 'ES256', 'EdDSA'] as const) keys[alg] = await issuer.addKey(alg);
    keys.noAlg = await issuer.addKey('RS384', { jwkAlg: false });
    Object.assign(overrides, { jwksUrl: issuer.jwksUrl, jwtIssuer: issuer.url, jwtAudience: AUDIENCE });
  });
  after(() => issuer?.close());
  const h = useApp(fx, overrides);
  before(() => eventually(async () => (await h.request({ method: 'GET', url: '/readyz' })).statusCode === 200, 10_000));

  const list = (token: string) => h.request({ method: 'GET', url: '/plants', token });
  const sign = (sub: string, claims: Record<string, unknown> = {}, kid = keys.RS256!) => issuer.sign(kid, sub, claims);

  describe('accepted', () => {
    for (const alg of ['RS256', 'PS256', 'ES256', 'EdDSA']) {
      it(`a token signed ${alg}`, async () => {
        const res = await list(await sign(newOwner('jwt'), {}, keys[alg]));
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(jsonBody(res), []);
      });
    }

    it('an audience array that contains ours', async () => {
      const res = await list(await sign(newOwner('jwt'), { aud: ['other-api', AUDIENCE] }));
      assert.equal(res.statusCode, 200, res.body);
    });

    it('exp up to 30 s in the past and nbf up to 30 s ahead (clock tolerance)', async () => {
      const now = Math.floor(Date.now() / 1000);
      assert.equal((await list(await sign(newOwner('jwt'), { exp: now - 20 }))).statusCode, 200);
      assert.equal((await list(await sign(newOwner('jwt'), { nbf: now + 20 }))).statusCode, 200);
    });

    it('the scheme name in any case, next to opaque tokens that keep working', async () => {
      const owner = newOwner('jwt');
      const jwt = await sign(owner);
      const opaque = (await issueToken(h.store.tokens, { owner })).token;
      const res = await h.request({ method: 'GET', url: '/plants', headers: { authorization: `bEaReR ${jwt}` } });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal((await list(opaque)).statusCode, 200);
    });
  });

  describe('refused with 401 invalid_token', () => {
    const now = () => Math.floor(Date.now() / 1000);
    const cases: Array<[string, () => Promise<string>, RegExp]> = [
      ['expired more than 30 s ago', () => sign('alice', { exp: now() - 40 }), /expired/],
      ['not valid for another minute (nbf)', () => sign('alice', { nbf: now() + 60 }), /not valid yet/],
      ['another issuer', () => sign('alice', { iss: 'https://evil.example/' }), /issuer/],
      ['another audience', () => sign('alice', { aud: 'other-api' }), /audience/],
      ['no audience', () => sign('alice', { aud: undefined }), /aud/],
      ['no issuer', () => sign('alice', { iss: undefined }), /iss/],
      ['no exp', () => sign('alice', { exp: undefined }), /exp/],
      ['no sub (the owner claim)', () => sign('alice', { sub: undefined }), /sub/],
      ['a sub that is not a valid owner name', () => sign('not an owner/name'), /owner/],
      ['alg none', async () => new UnsecuredJWT(issuer.claims('alice')).encode(), /algorithm/],
      [
        'alg none with a known kid',
        async () => `${b64url({ alg: 'none', kid: keys.RS256, typ: 'JWT' })}.${b64url(issuer.claims('alice'))}.`,
        /algorithm/,
      ],
      [
        'HS256 signed with the RSA public key (PEM) as the secret',
        async () => hmacToken(await exportSPKI(issuer.key(keys.RS256!).publicKey), keys.RS256!, issuer.claims('alice')),
        /algorithm/,
      ],
      [
        'HS256 signed with the public JWK as the secret',
        async () => hmacToken(JSON.stringify(issuer.key(keys.RS256!).jwk), keys.RS256!, issuer.claims('alice')),
        /algorithm/,
      ],
      [
        'RS384 (not on the allow-list) with a key whose JWK names no alg',
        async () => issuer.sign(keys.noAlg!, 'alice'),
        /algorithm/,
      ],
      [
        'a payload changed after signing',
        async () => {
          const [head, , sig] = (await sign('alice')).split('.');
          return `${head}.${b64url(issuer.claims('mallory'))}.${sig}`;
        },
        /signature/,
      ],
      [
        'signed by a key the issuer never published, naming a published kid',
        async () => {
          const rogue = await issuer.addKey('RS256', { publish: false });
          return issuer.sign(rogue, 'alice', {}, { kid: keys.RS256! });
        },
        /signature/,
      ],
      [
        'a kid the key set does not have',
        async () => sign('alice', {}, await issuer.addKey('RS256', { publish: false })),
        /signing key/,
      ],
      ['three dots of garbage', async () => 'abc.def.ghi', /malformed/],
      ['two segments', async () => `${b64url({ alg: 'RS256' })}.${b64url({})}`, /malformed/],
      ['not a JWT at all', async () => 'hello', /malformed/],
    ];
    for (const [what, make, why] of cases) {
      it(what, async () => {
        expectInvalidToken(await list(await make()), why);
      });
    }

    it('before the body is read: a bad JWT with a bad body is 401, not 400', async () => {
      const token = await sign('alice', { aud: 'other-api' });
      expectInvalidToken(await createRaw(h, token, '{not json'));
    });

    it('a plnt_ token is never taken for a JWT', async () => {
      expectInvalidToken(await list('plnt_short'), /^malformed token$/);
    });
  });

  describe('scopes map like opaque tokens', () => {
    it('scope "plants:read" lists but cannot create (403 insufficient_scope)', async () => {
      const token = await sign(newOwner('jwt'), { scope: 'openid profile plants:read' });
      assert.equal((await list(token)).statusCode, 200);
      expectInsufficientScope(await createRaw(h, token, '{"id":1,"name":"x"}'), 'plants:write');
      expectInsufficientScope(await h.request({ method: 'DELETE', url: '/plants/1', token }), 'plants:write');
    });

    it('scp ["plants:write"] creates but cannot list', async () => {
      const token = await sign(newOwner('jwt'), { scope: undefined, scp: ['plants:write'] });
      assert.equal((await createRaw(h, token, '{"id":1,"name":"x"}')).statusCode, 200);
      expectInsufficientScope(await list(token), 'plants:read');
    });

    it('scp as a space-separated string (Entra ID) counts too', async () => {
      const token = await sign(newOwner('jwt'), { scope: undefined, scp: 'plants:read' });
      assert.equal((await list(token)).statusCode, 200);
    });

    it('no scope at all: 403 on every operation, also once the token is cached', async () => {
      const token = await sign(newOwner('jwt'), { scope: undefined });
      for (let i = 0; i < 2; i++) {
        expectInsufficientScope(await list(token), 'plants:read');
        expectInsufficientScope(await createRaw(h, token, '{"id":1,"name":"x"}'), 'plants:write');
      }
    });

    it('a scope that only resembles ours grants nothing', async () => {
      const token = await sign(newOwner('jwt'), { scope: 'plants:read:all plants:writer PLANTS:READ' });
      expectInsufficientScope(await list(token), 'plants:read');
    });
  });

  describe('one owner namespace', () => {
    it('a JWT with sub alice sees, creates and deletes the plants of opaque-token owner alice', async () => {
      const alice = newOwner('alice');
      const opaque = (await issueToken(h.store.tokens, { owner: alice })).token;
      const jwt = await sign(alice);
      assert.equal((await createRaw(h, opaque, '{"id":1,"name":"from opaque"}')).statusCode, 200);
      assert.deepEqual(await names(h, jwt), ['from opaque']);
      assert.equal((await createRaw(h, jwt, '{"id":2,"name":"from jwt"}')).statusCode, 200);
      assert.deepEqual(await names(h, opaque), ['from opaque', 'from jwt']);
      // Same id, other content: the store's conflict rule, whichever token asks.
      expectError(await createRaw(h, jwt, '{"id":1,"name":"other"}'), 409, /already exists/);
      assert.equal((await h.request({ method: 'DELETE', url: '/plants/1', token: jwt })).statusCode, 204);
      assert.deepEqual(await names(h, opaque), ['from jwt']);
      assert.deepEqual(await names(h, await sign(newOwner('bob'))), [], 'another sub sees nothing');
    });

    it('an Auth0-style subject (auth0|…) is an owner an opaque token can have too', async () => {
      const sub = `auth0|${newOwner('u')}`;
      assert.equal((await createRaw(h, await sign(sub), '{"id":7,"name":"fern"}')).statusCode, 200);
      const opaque = (await issueToken(h.store.tokens, { owner: sub })).token;
      assert.deepEqual(await names(h, opaque), ['fern']);
    });
  });

  describe('verified tokens are remembered until they expire', () => {
    it('a token accepted from the cache is refused once exp plus the tolerance has passed', async (t) => {
      // exp 28 s ago: accepted (30 s tolerance) for about 2 more seconds.
      const token = await sign(newOwner('jwt'), { exp: Math.floor(Date.now() / 1000) - 28 });
      assert.equal((await list(token)).statusCode, 200);
      assert.equal((await list(token)).statusCode, 200, 'second use, from the cache');
      // Three seconds pass on a mocked clock.
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
      t.mock.timers.tick(3000);
      expectInvalidToken(await list(token), /expired/);
    });

    it('many different tokens of one owner: each verified, each answered from the cache the second time', async () => {
      const owner = newOwner('many');
      const tokens = await Promise.all(Array.from({ length: 50 }, () => sign(owner)));
      for (const token of tokens) assert.equal((await list(token)).statusCode, 200);
      for (const token of tokens) assert.equal((await list(token)).statusCode, 200);
    });
  });

  describe('/readyz', () => {
    it('reports the key set: ready, how many keys, when fetched, not stale', async () => {
      const res = await h.request({ method: 'GET', url: '/readyz' });
      assert.equal(res.statusCode, 200, res.body);
      const body = jsonBody(res) as { status: string; jwks: { keys: number; fetchedAt: string; stale: boolean } };
      assert.equal(body.status, 'ready');
      assert.ok(body.jwks.keys >= 5, `keys: ${body.jwks.keys}`);
      assert.equal(body.jwks.stale, false);
      assert.ok(Math.abs(Date.parse(body.jwks.fetchedAt) - Date.now()) < 600_000, body.jwks.fetchedAt);
    });
  });
});

describeHttpLayer('JWTs switched off', (fx) => {
  let issuer: TestIssuer;
  before(async () => {
    issuer = await TestIssuer.start();
    await issuer.addKey('RS256', { kid: 'k1' });
  });
  after(() => issuer?.close());
  const h = useApp(fx);

  it('a valid-looking JWT is a malformed token, and /readyz says nothing about keys', async () => {
    const res = await h.request({ method: 'GET', url: '/plants', token: await issuer.sign('k1', 'alice') });
    expectInvalidToken(res, /^malformed token$/);
    assert.deepEqual(jsonBody(await h.request({ method: 'GET', url: '/readyz' })), { status: 'ready' });
    assert.equal(issuer.jwksFetches, 0);
  });
});

/** A token signed HS256 with `secret`: the classic algorithm-confusion attack on RS256 verifiers. */
function hmacToken(secret: string, kid: string, claims: object): string {
  const input = `${b64url({ alg: 'HS256', kid, typ: 'JWT' })}.${b64url(claims)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}
