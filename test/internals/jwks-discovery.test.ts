// The jwks_uri an OIDC discovery document names is held to the rule of
// --jwt-allow-http, as the configured URL is: https, or http to this machine,
// or http anywhere only when the setting allows it. Otherwise an issuer could
// send its keys over plain http to another machine, where anyone on the way
// could swap them.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import { JwtVerifier } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { eventually } from '../helpers/eventually.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { keptLog } from '../helpers/log-lines.js';

describe('the JWKS URL a discovery document names', () => {
  let server: Server;
  let base = '';
  let jwksFetches = 0;
  let jwk: Record<string, unknown>;
  before(async () => {
    const { publicKey } = await generateKeyPair('ES256', { extractable: true });
    jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    // The issuer is this machine over http (allowed without the setting); its
    // document names the same server as 0.0.0.0, which reaches this machine
    // too but is not a loopback address, so it stands for another machine.
    server = createServer((req, res) => {
      const port = (server.address() as AddressInfo).port;
      const body =
        req.url === '/.well-known/openid-configuration'
          ? { issuer: base, jwks_uri: `http://0.0.0.0:${port}/jwks` }
          : (jwksFetches++, { keys: [jwk] });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A verifier of tokens from the server, started, with the log lines it wrote once its first fetch ended. */
  async function firstFetch(allowHttp: boolean) {
    jwksFetches = 0;
    const { log, lines } = keptLog();
    const config = loadConfig(
      { 'oidc-issuer': base, 'jwt-issuer': base, 'jwt-audience': 'tests', 'jwt-allow-http': String(allowHttp) },
      {},
    );
    const verifier = new JwtVerifier(config, log);
    verifier.start();
    await eventually(async () => lines.length > 0, 10_000, { stepMs: 20, what: 'the first fetch' });
    verifier.close();
    return { status: verifier.status(), log: lines.join('') };
  }

  it(
    'is refused when it is http:// to another machine, and nothing is fetched from it',
    { timeout: 15_000 },
    async () => {
      const { status, log } = await firstFetch(false);
      assert.equal(status.ready, false);
      assert.equal(jwksFetches, 0);
      assert.match(
        log,
        /openid-configuration names a jwks_uri that is http:\/\/ to 0\.0\.0\.0, another machine.*--jwt-allow-http/,
      );
    },
  );

  it('is used with --jwt-allow-http', { timeout: 15_000 }, async () => {
    const { status, log } = await firstFetch(true);
    assert.equal(status.ready, true, log);
    assert.equal(status.keys, 1);
    assert.equal(jwksFetches, 1);
  });
});
