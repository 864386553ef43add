// The verified-token cache on its own: bounded, keyed so that only the exact
// token hits, and forgetting tokens whose key the issuer removed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/requirements.js';
import { pino } from 'pino';
import { JwtVerifier } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { AUDIENCE, TestIssuer } from '../helpers/jwt-issuer.js';
import { eventually } from '../helpers/eventually.js';

describe('the verified-token cache', () => {
  let issuer: TestIssuer;
  let kid: string;
  let verifier: JwtVerifier;
  before(async () => {
    issuer = await TestIssuer.start();
    kid = await issuer.addKey('ES256');
    const config = loadConfig(
      { 'jwks-url': issuer.jwksUrl, 'jwt-issuer': issuer.url, 'jwt-audience': AUDIENCE },
      {},
      { jwksCooldownMs: 100 },
    );
    verifier = new JwtVerifier(config, pino({ level: 'silent' }), { maxCachedTokens: 3 });
    verifier.start();
    await eventually(async () => verifier.status().ready, 5_000, { stepMs: 20 });
  });
  after(async () => {
    verifier?.close();
    await issuer?.close();
  });

  it('holds at most maxCachedTokens tokens, dropping the oldest', async () => {
    const tokens = await Promise.all(Array.from({ length: 5 }, (_, i) => issuer.sign(kid, `owner-${i}`)));
    for (const [i, token] of tokens.entries()) assert.equal((await verifier.verify(token)).owner, `owner-${i}`);
    assert.deepEqual(
      tokens.map((t) => verifier.cached(t)?.owner),
      [undefined, undefined, 'owner-2', 'owner-3', 'owner-4'],
    );
  });

  it('only the exact token hits: the same signature with another payload does not', async () => {
    const token = await issuer.sign(kid, 'exact');
    await verifier.verify(token);
    const [head, , sig] = token.split('.');
    const forged = `${head}.${Buffer.from(JSON.stringify(issuer.claims('mallory'))).toString('base64url')}.${sig}`;
    assert.equal(verifier.cached(forged), undefined);
    await assert.rejects(verifier.verify(forged), /signature not valid/);
  });

  it('a token verified with a key the issuer then removed is forgotten at the next fetch', async () => {
    const token = await issuer.sign(kid, 'removed');
    await verifier.verify(token);
    assert.equal(verifier.cached(token)?.owner, 'removed');
    const next = await issuer.addKey('EdDSA');
    issuer.unpublish(kid);
    await new Promise((r) => setTimeout(r, 150));
    await verifier.verify(await issuer.sign(next, 'new'));
    assert.equal(verifier.cached(token), undefined);
    await assert.rejects(verifier.verify(token), /no known signing key/);
  });
});
