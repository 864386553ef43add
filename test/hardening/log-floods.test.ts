// What an anonymous client can make the server write to its log is bounded:
// bogus JWTs (with a huge kid) are summarised per reason and cut short, odd
// paths under /docs/static are 4xx without an error line, and token-shaped
// parts of URLs never reach the access log. A real server process, because
// the log is its stdout.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AUDIENCE, b64url, TestIssuer } from '../helpers/jwt-issuer.js';
import { httpRequest, serveArgs, startServer, stopGracefully, type ServerProcess } from '../helpers/server.js';
import { after, afterEach, before, beforeEach, describe, it } from '../helpers/requirements.js';

const REQUESTS = 100;

/** What a server logged before it began to shut down. */
function beforeShutdown(log: string): string {
  const at = log.search(/^.*"msg":"shutting down/m);
  assert.ok(at >= 0, `the server logged its shutdown:\n${log.slice(-2000)}`);
  return log.slice(0, at);
}

describe('log floods from anonymous clients', () => {
  let dir: string;
  let issuer: TestIssuer;
  let server: ServerProcess;
  // A server per test, stopped before its log is read: stopping writes out what the logger holds.
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-logflood-'));
    issuer = await TestIssuer.start();
    await issuer.addKey('ES256');
  });
  beforeEach(async () => {
    server = await startServer(
      serveArgs(
        join(dir, 'plants.db'),
        '--jwks-url',
        issuer.jwksUrl,
        '--jwt-issuer',
        issuer.url,
        '--jwt-audience',
        AUDIENCE,
      ),
    );
  });
  afterEach(() => stopGracefully(server));
  after(async () => {
    await issuer?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a bounded log for a flood of bogus JWTs with a 10 KB kid', { timeout: 60_000 }, async () => {
    const before = server.stdout.length;
    const kid = 'K'.repeat(10_000);
    const bogus = `${b64url({ alg: 'ES256', kid, typ: 'JWT' })}.${b64url({ sub: 'x' })}.${'A'.repeat(86)}`;
    for (let i = 0; i < REQUESTS; i++) {
      const res = await httpRequest(`${server.url}/plants`, { headers: { authorization: `Bearer ${bogus}` } });
      assert.equal(res.status, 401);
    }
    await stopGracefully(server);
    const written = beforeShutdown(server.stdout.slice(before));
    assert.ok(!written.includes('K'.repeat(100)), 'the kid was logged whole');
    assert.ok(
      written.length < 4000,
      `${REQUESTS} bogus JWTs wrote ${written.length} bytes of log:\n${written.slice(0, 2000)}`,
    );
  });

  it('answers odd /docs/static paths with a 4xx and logs no error', { timeout: 30_000 }, async () => {
    const before = server.stdout.length;
    const cases: Array<[string, Record<string, string>, number]> = [
      ['/docs/static/%00', {}, 404],
      ['/docs/static/a%00b.js', {}, 404],
      [`/docs/static/${'a'.repeat(4000)}`, {}, 404],
      ['/docs/static/swagger-ui.css', { range: 'bytes=99999999-' }, 416],
      ['/docs/static/swagger-ui.css', { 'if-match': '"nope"' }, 412],
    ];
    for (const [path, headers, status] of cases) {
      for (let i = 0; i < 20; i++) {
        const res = await httpRequest(`${server.url}${path}`, { headers });
        assert.equal(res.status, status, `${path.slice(0, 40)}: ${res.body}`);
        assert.equal(JSON.parse(res.body).error, status);
      }
    }
    await stopGracefully(server);
    const written = beforeShutdown(server.stdout.slice(before));
    assert.doesNotMatch(written, /"level":50/, written.slice(0, 2000));
  });
});

describe('token-shaped parts of URLs in the access log', () => {
  it('are redacted, and long URLs are cut short', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-urlredact-'));
    const server = await startServer(serveArgs(join(dir, 'plants.db'), '--access-log'));
    const jwt = `${b64url({ alg: 'RS256', typ: 'JWT' })}.${b64url({ sub: 'someone', exp: 1 })}.c2lnbmF0dXJlLXBhcnQtb2YtdGhlLWp3dA`;
    const secrets = [
      jwt,
      'plnt_' + 'Q'.repeat(43),
      'sk_live_51HqLyjWDarjtT1zdp7dc8a2b1c3d4e5f6',
      'ghp_16C7e42F292c6912E7710c838347Ae178B4a',
      'hunter2-is-my-password',
      'ya29.a0AfH6SMBx3jk-short',
    ];
    try {
      const urls = [
        `/plants?access_token=${secrets[0]}`,
        `/plants/${secrets[0]}`,
        `/plants?cursor=x&token=${secrets[1]}`,
        `/plants?api_key=${secrets[2]}`,
        `/plants/${secrets[3]}`,
        `/plants?password=${secrets[4]}&limit=1`,
        `/plants?key=${secrets[5]}`,
        `/plants?x=${'y'.repeat(5000)}`,
      ];
      for (const url of urls) await httpRequest(`${server.url}${url}`);
      await stopGracefully(server);
      const lines = server.stdout.split('\n').filter((line) => line.includes('"url"'));
      assert.ok(lines.length >= urls.length, server.stdout.slice(0, 2000));
      for (const secret of secrets) {
        // Any 12 characters of the secret would be a leak (its first ones are a JWT's fixed "eyJ…" header).
        const tail = secret.slice(-12);
        assert.ok(!server.stdout.includes(tail), `${secret.slice(0, 12)}… reached the log:\n${lines.join('\n')}`);
      }
      assert.ok(
        lines.every((line) => line.length < 1500),
        'a URL of 5000 characters was logged whole',
      );
      assert.match(server.stdout, /"url":"\/plants\?api_key=\[redacted\]"/);
    } finally {
      await stopGracefully(server);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
