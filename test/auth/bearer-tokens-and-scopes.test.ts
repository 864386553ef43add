// Bearer authentication and scopes: 401 challenges, 403 insufficient_scope,
// expiry, revocation within 1 s, and authentication before the body is read.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from '../helpers/requirements.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { hashToken, issueToken } from '../../src/auth/tokens.js';
import { useApp } from '../helpers/app.js';
import { createRaw, deletePlant, expectError, names, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

const MISSING_CHALLENGE = 'Bearer realm="plants"';

/** The auth-params of a Bearer WWW-Authenticate header. */
function challenge(res: LightMyRequestResponse): Record<string, string> {
  const header = res.headers['www-authenticate'];
  assert.equal(typeof header, 'string', `no WWW-Authenticate on ${res.statusCode}`);
  assert.match(header as string, /^Bearer /);
  const params: Record<string, string> = {};
  for (const m of (header as string).matchAll(/([a-z_]+)="([^"]*)"/g)) params[m[1]!] = m[2]!;
  return params;
}

function expectMissingCredentials(res: LightMyRequestResponse): void {
  expectError(res, 401, /\S/);
  assert.equal(res.headers['www-authenticate'], MISSING_CHALLENGE);
}

function expectInvalidToken(res: LightMyRequestResponse): void {
  expectError(res, 401, /token/);
  const params = challenge(res);
  assert.equal(params.realm, 'plants');
  assert.equal(params.error, 'invalid_token');
}

function expectInsufficientScope(res: LightMyRequestResponse, scope: string): void {
  expectError(res, 403, new RegExp(scope));
  const params = challenge(res);
  assert.equal(params.realm, 'plants');
  assert.equal(params.error, 'insufficient_scope');
  assert.ok((params.scope ?? '').split(' ').includes(scope), `scope="${params.scope}" should name ${scope}`);
}

/** A well-formed token that was never issued. */
const unissuedToken = () => `plnt_${randomBytes(32).toString('base64url')}`;

/** One request per plant operation, none of which should get past authentication. */
const OPERATIONS: Array<[string, InjectOptions]> = [
  ['GET /plants', { method: 'GET', url: '/plants' }],
  [
    'POST /plants',
    { method: 'POST', url: '/plants', headers: { 'content-type': 'application/json' }, payload: '{"id":1,"name":"x"}' },
  ],
  ['DELETE /plants/1', { method: 'DELETE', url: '/plants/1' }],
];

describeHttpLayer('HTTP auth', (fx) => {
  const h = useApp(fx);

  /** The request, with the given Authorization header (or none). */
  function send(op: InjectOptions, authorization?: string): Promise<LightMyRequestResponse> {
    const headers = {
      ...(op.headers as Record<string, string>),
      ...(authorization === undefined ? {} : { authorization }),
    };
    return h.request({ ...op, headers });
  }

  /** An owner with one plant (id 1) and a read+write token; nothing may change it. */
  async function ownerWithPlant() {
    const owner = newOwner('auth');
    const token = await h.token(owner);
    assert.equal((await createRaw(h, token, '{"id":1,"name":"keep"}')).statusCode, 200);
    return { owner, token, assertUnchanged: async () => assert.deepEqual(await names(h, token), ['keep']) };
  }

  describe('missing credentials: 401 with exactly WWW-Authenticate: Bearer realm="plants"', () => {
    for (const [what, op] of OPERATIONS) {
      it(`${what} without Authorization`, async () => {
        expectMissingCredentials(await send(op));
      });
      it(`${what} with a non-Bearer scheme`, async () => {
        expectMissingCredentials(await send(op, `Basic ${Buffer.from('user:pass').toString('base64')}`));
        expectMissingCredentials(await send(op, `Token ${unissuedToken()}`));
      });
    }

    it('HEAD /plants without Authorization', async () => {
      const res = await h.request({ method: 'HEAD', url: '/plants' });
      assert.equal(res.statusCode, 401);
      assert.equal(res.headers['www-authenticate'], MISSING_CHALLENGE);
    });

    it('a valid token in the query string is never accepted', async () => {
      const { token } = await ownerWithPlant();
      expectMissingCredentials(await h.request({ method: 'GET', url: `/plants?access_token=${token}` }));
      expectMissingCredentials(await h.request({ method: 'DELETE', url: `/plants/1?access_token=${token}` }));
      expectMissingCredentials(
        await h.request({ method: 'POST', url: `/plants?access_token=${token}`, json: { id: 2, name: 'sneaky' } }),
      );
      assert.deepEqual(await names(h, token), ['keep']);
    });

    it('a valid token in a form body is never accepted', async () => {
      const { token, assertUnchanged } = await ownerWithPlant();
      const res = await h.request({
        method: 'POST',
        url: '/plants',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `access_token=${token}`,
      });
      expectMissingCredentials(res);
      await assertUnchanged();
    });
  });

  describe('invalid tokens: 401 with error="invalid_token"', () => {
    const badTokens: Array<[string, () => string]> = [
      ['a well-formed token that was never issued', unissuedToken],
      ['a token without the plnt_ prefix', () => randomBytes(32).toString('base64url')],
      ['a token with another prefix', () => `pat_${randomBytes(32).toString('base64url')}`],
      ['a token one character short', () => unissuedToken().slice(0, -1)],
      ['a token one character long', () => `${unissuedToken()}A`],
      ['a token with standard base64 characters', () => `plnt_${'+/'.repeat(21)}A`],
      ['garbage', () => 'not-a-token'],
    ];
    for (const [what, make] of badTokens) {
      it(what, async () => {
        for (const [, op] of OPERATIONS) expectInvalidToken(await send(op, `Bearer ${make()}`));
      });
    }

    it('a real token with one character changed', async () => {
      const { token, assertUnchanged } = await ownerWithPlant();
      const last = token.at(-1) === 'A' ? 'B' : 'A';
      for (const [, op] of OPERATIONS) expectInvalidToken(await send(op, `Bearer ${token.slice(0, -1)}${last}`));
      await assertUnchanged();
    });
  });

  describe('scheme name', () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      it(`"${scheme}" is accepted`, async () => {
        const { token } = await ownerWithPlant();
        const res = await send({ method: 'GET', url: '/plants' }, `${scheme} ${token}`);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(JSON.parse(res.body), [{ name: 'keep' }]);
      });
    }
  });

  describe('authentication comes before the body', () => {
    const bodies: Array<[string, InjectOptions]> = [
      ['malformed JSON', { headers: { 'content-type': 'application/json' }, payload: '{"id":' }],
      [
        'a 2 MB body',
        {
          headers: { 'content-type': 'application/json' },
          payload: `{"id":1,"name":"${'x'.repeat(2 * 1024 * 1024)}"}`,
        },
      ],
      ['a text/plain body', { headers: { 'content-type': 'text/plain' }, payload: 'hello' }],
      ['an empty body', { headers: { 'content-type': 'application/json' }, payload: '' }],
      ['a valid plant', { headers: { 'content-type': 'application/json' }, payload: '{"id":2,"name":"x"}' }],
    ];
    for (const [what, op] of bodies) {
      const post = { method: 'POST', url: '/plants', ...op } as InjectOptions;
      it(`${what}: no credentials → 401, bad token → 401 invalid_token, read-only token → 403`, async () => {
        const { owner, assertUnchanged } = await ownerWithPlant();
        expectMissingCredentials(await send(post));
        expectInvalidToken(await send(post, `Bearer ${unissuedToken()}`));
        const readOnly = await h.token(owner, { scopes: ['plants:read'] });
        expectInsufficientScope(await send(post, `Bearer ${readOnly}`), 'plants:write');
        await assertUnchanged();
      });
    }
  });

  describe('scopes', () => {
    it('plants:read only: GET works, POST and DELETE are 403 and change nothing', async () => {
      const { owner, assertUnchanged } = await ownerWithPlant();
      const read = await h.token(owner, { scopes: ['plants:read'] });
      const list = await h.request({ method: 'GET', url: '/plants', token: read });
      assert.equal(list.statusCode, 200);
      assert.deepEqual(JSON.parse(list.body), [{ name: 'keep' }]);
      expectInsufficientScope(await createRaw(h, read, '{"id":2,"name":"nope"}'), 'plants:write');
      expectInsufficientScope(await deletePlant(h, read, 1), 'plants:write');
      expectInsufficientScope(await deletePlant(h, read, 999), 'plants:write');
      await assertUnchanged();
    });

    it('plants:write only: POST and DELETE work, GET is 403', async () => {
      const { owner, token } = await ownerWithPlant();
      const write = await h.token(owner, { scopes: ['plants:write'] });
      expectInsufficientScope(await h.request({ method: 'GET', url: '/plants', token: write }), 'plants:read');
      const head = await h.request({ method: 'HEAD', url: '/plants', token: write });
      assert.equal(head.statusCode, 403);
      assert.equal(challenge(head).error, 'insufficient_scope');
      assert.equal((await createRaw(h, write, '{"id":2,"name":"added"}')).statusCode, 200);
      assert.equal((await deletePlant(h, write, 1)).statusCode, 204);
      assert.deepEqual(await names(h, token), ['added']);
    });

    it('a token with both scopes can do everything', async () => {
      const owner = newOwner('both');
      const both = await h.token(owner, { scopes: ['plants:read', 'plants:write'] });
      assert.equal((await createRaw(h, both, '{"id":1,"name":"x"}')).statusCode, 200);
      assert.deepEqual(await names(h, both), ['x']);
      assert.equal((await deletePlant(h, both, 1)).statusCode, 204);
    });
  });

  describe('expiry', () => {
    it('an already expired token is 401 invalid_token', async () => {
      const { owner, assertUnchanged } = await ownerWithPlant();
      const expired = await h.token(owner, { expiresInMs: -1000 });
      for (const [, op] of OPERATIONS) expectInvalidToken(await send(op, `Bearer ${expired}`));
      await assertUnchanged();
    });

    it('a token stops working when it expires, even right after a successful (cached) use', async () => {
      const { owner, assertUnchanged } = await ownerWithPlant();
      const shortLived = await h.token(owner, { expiresInMs: 400 });
      assert.equal((await h.request({ method: 'GET', url: '/plants', token: shortLived })).statusCode, 200);
      await sleep(450);
      expectInvalidToken(await h.request({ method: 'GET', url: '/plants', token: shortLived }));
      expectInvalidToken(await createRaw(h, shortLived, '{"id":3,"name":"late"}'));
      await assertUnchanged();
    });
  });

  describe('revocation takes effect within 1 s', () => {
    /** Polls GET /plants until it is refused; the delay after revoking in ms. */
    async function msUntilRefused(token: string, revokedAt: number): Promise<number> {
      for (;;) {
        const res = await h.request({ method: 'GET', url: '/plants', token });
        const elapsed = Date.now() - revokedAt;
        if (res.statusCode !== 200) {
          expectInvalidToken(res);
          return elapsed;
        }
        assert.ok(elapsed < 1000, `token still accepted ${elapsed} ms after revocation`);
        await sleep(20);
      }
    }

    for (const by of ['secret hash', 'token id'] as const) {
      it(`revoked by ${by} after a successful (cached) use`, async () => {
        const owner = newOwner('rev');
        const { token, record } = await issueToken(h.store.tokens, { owner });
        const sibling = await h.token(owner);
        assert.equal((await createRaw(h, token, '{"id":1,"name":"before"}')).statusCode, 200);
        assert.equal((await h.request({ method: 'GET', url: '/plants', token })).statusCode, 200);

        const revokedAt = Date.now();
        assert.equal(await h.store.tokens.revoke(by === 'token id' ? record.id : hashToken(token), new Date()), true);
        const delay = await msUntilRefused(token, revokedAt);
        assert.ok(delay < 1000, `refused only after ${delay} ms`);

        // Stays refused, for writes too, and nothing the revoked token sends is stored.
        for (let i = 0; i < 3; i++) expectInvalidToken(await h.request({ method: 'GET', url: '/plants', token }));
        expectInvalidToken(await createRaw(h, token, '{"id":2,"name":"after"}'));
        expectInvalidToken(await deletePlant(h, token, 1));
        // The owner's other token and data are untouched.
        assert.deepEqual(await names(h, sibling), ['before']);
      });
    }
  });

  describe('public endpoints need no token', () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json']) {
      it(`GET ${url}`, async () => {
        const res = await h.request({ method: 'GET', url });
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.headers['www-authenticate'], undefined);
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
      });
    }
  });
});
