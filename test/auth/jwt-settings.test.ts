// JWT settings: start-up refuses an incomplete or contradictory configuration
// with a clear message, and a real server logs why a JWT was refused (and
// that the issuer could not be reached) without ever logging the token.
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/requirements.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { AUDIENCE, TestIssuer } from '../helpers/jwt-issuer.js';
import { eventually } from '../helpers/eventually.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { httpRequest, serveArgs, useProcessCleanup } from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { describeHttpLayer } from '../helpers/stores.js';

describe('JWT settings', () => {
  const load = (flags: Record<string, string>, env: Record<string, string> = {}) => loadConfig(flags, env);
  const refused = (flags: Record<string, string>, message: RegExp, env: Record<string, string> = {}) =>
    assert.throws(
      () => load(flags, env),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
    );

  it('off by default: no JWT settings, owner claim sub', () => {
    const config = load({});
    assert.equal(config.jwksUrl, undefined);
    assert.equal(config.oidcIssuer, undefined);
    assert.equal(config.jwtOwnerClaim, 'sub');
  });

  it('--jwks-url needs --jwt-issuer and --jwt-audience, and says so', () => {
    refused(
      { 'jwks-url': 'https://idp.example/jwks' },
      /^--jwks-url turns on JWT access tokens, which also needs --jwt-issuer \(PLANTS_JWT_ISSUER\) and --jwt-audience \(PLANTS_JWT_AUDIENCE\)/,
    );
    refused(
      { 'jwt-audience': 'plants' },
      /^PLANTS_OIDC_ISSUER turns on JWT access tokens, which also needs --jwt-issuer/,
      { PLANTS_OIDC_ISSUER: 'https://idp.example' },
    );
    const config = load(
      { 'jwks-url': 'https://idp.example/jwks', 'jwt-issuer': 'https://idp.example/' },
      {
        PLANTS_JWT_AUDIENCE: 'plants',
      },
    );
    assert.equal(config.jwksUrl, 'https://idp.example/jwks');
    assert.equal(config.jwtIssuer, 'https://idp.example/');
    assert.equal(config.jwtAudience, 'plants');
  });

  it('refuses both key sources, a non-http URL, and issuer or audience without a key source', () => {
    const pinned = { 'jwt-issuer': 'https://idp.example', 'jwt-audience': 'plants' };
    refused(
      { ...pinned, 'jwks-url': 'https://idp.example/jwks', 'oidc-issuer': 'https://idp.example' },
      /either --jwks-url or --oidc-issuer, not both/,
    );
    refused({ ...pinned, 'jwks-url': 'file:///etc/jwks.json' }, /--jwks-url must be an http:\/\/ or https:\/\/ URL/);
    refused({ ...pinned, 'oidc-issuer': 'idp.example' }, /--oidc-issuer must be an http/);
    refused({ 'jwt-issuer': 'https://idp.example' }, /--jwt-issuer is set but JWTs are off/);
  });

  it('an empty environment variable counts as unset', () => {
    assert.equal(load({}, { PLANTS_JWKS_URL: '', PLANTS_JWT_ISSUER: '' }).jwksUrl, undefined);
  });

  it('plant-store serve exits 2 with the message, before opening any store', async () => {
    const r = await runCli(['serve', '--db', '/nonexistent/dir/plants.db', '--jwks-url', 'https://idp.example/jwks']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--jwt-issuer \(PLANTS_JWT_ISSUER\) and --jwt-audience \(PLANTS_JWT_AUDIENCE\)/);
  });

  it('serve --help lists the JWT flags', async () => {
    const r = await runCli(['serve', '--help']);
    for (const flag of ['--jwks-url', '--oidc-issuer', '--jwt-issuer', '--jwt-audience', '--jwt-owner-claim']) {
      assert.ok(r.stdout.includes(flag), `${flag} in:\n${r.stdout}`);
    }
    assert.match(r.stdout, /the JWT claim that names the owner \(env PLANTS_JWT_OWNER_CLAIM;\s+default: sub\)/);
  });
});

describeHttpLayer('JWT logs of a running server', (fx) => {
  useProcessCleanup();
  let issuer: TestIssuer;
  before(async () => {
    issuer = await TestIssuer.start();
  });
  after(() => issuer?.close());

  it('logs the issuer being unreachable and why each JWT was refused, never the token', async () => {
    issuer.mode = 'unreachable';
    const kid = await issuer.addKey('RS256');
    const server = await serveInProcess(
      serveArgs(fx.db, '--jwks-url', issuer.jwksUrl, '--jwt-issuer', issuer.url, '--jwt-audience', AUDIENCE),
    );
    await server.waitForOutput((out) => out.includes('fetching the JWT signing keys failed'));
    const early = await issuer.sign(kid, 'alice');
    const res = await httpRequest(`${server.url}/plants`, { token: early });
    assert.equal(res.status, 401);

    issuer.mode = 'ok';
    await eventually(async () => (await httpRequest(`${server.url}/readyz`)).status === 200, 15_000, { stepMs: 100 });
    const expired = await issuer.sign(kid, 'alice', { exp: Math.floor(Date.now() / 1000) - 120 });
    assert.equal((await httpRequest(`${server.url}/plants`, { token: expired })).status, 401);
    const good = await issuer.sign(kid, 'alice');
    assert.equal((await httpRequest(`${server.url}/plants`, { token: good })).status, 200);
    await server.waitForOutput((out) => out.includes('token expired'));

    const refusals = server.logLines().filter((l) => l.msg === 'bearer JWT refused');
    assert.ok(
      refusals.some((l) => /signing keys have not been fetched/.test(String(l.jwt))),
      JSON.stringify(refusals),
    );
    assert.ok(
      refusals.some((l) => String(l.jwt).startsWith('token expired')),
      JSON.stringify(refusals),
    );
    assert.ok(server.logLines().some((l) => l.msg === 'JWT signing keys fetched'));
    for (const token of [early, expired, good]) {
      for (const part of token.split('.')) {
        assert.ok(!server.stdout.includes(part) && !server.stderr.includes(part), 'a token part was logged');
      }
    }
  });
});
