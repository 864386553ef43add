// The issuer's key set is held in memory, so what is read of it is bounded:
// a response past 512 KiB is refused (and not read further), as is a key set
// of more than 100 keys; the keys known before stay in use.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import { JwksKeys } from '../../src/auth/jwks.js';
import { eventually } from '../helpers/eventually.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { keptLog } from '../helpers/log-lines.js';

type Mode = 'ok' | 'huge' | 'endless' | 'many-keys' | 'huge-discovery';

describe('JWKS size and key count caps', () => {
  let server: Server;
  let base = '';
  let mode: Mode = 'ok';
  let bytesSent = 0;
  let jwk: Record<string, unknown>;
  before(async () => {
    const { publicKey } = await generateKeyPair('ES256', { extractable: true });
    jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    server = createServer((req, res) => {
      const send = (body: string) => {
        bytesSent += body.length;
        res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      };
      if (req.url === '/.well-known/openid-configuration') {
        if (mode === 'huge-discovery')
          return send(JSON.stringify({ issuer: base, jwks_uri: `${base}/jwks`, pad: 'x'.repeat(2 * 1024 * 1024) }));
        return send(JSON.stringify({ issuer: base, jwks_uri: `${base}/jwks` }));
      }
      if (mode === 'ok') return send(JSON.stringify({ keys: [jwk] }));
      if (mode === 'many-keys')
        return send(JSON.stringify({ keys: Array.from({ length: 1000 }, (_, i) => ({ ...jwk, kid: `k${i}` })) }));
      if (mode === 'huge') return send(JSON.stringify({ keys: [jwk], pad: 'x'.repeat(8 * 1024 * 1024) }));
      // endless: chunks without a Content-Length until the client gives up.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"keys":[],"pad":"');
      const chunk = 'x'.repeat(64 * 1024);
      const pump = () => {
        while (!res.destroyed && bytesSent < 64 * 1024 * 1024) {
          bytesSent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end('"}');
      };
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Keys fetched from the server in `m`, with the log lines they wrote. */
  async function fetchIn(m: Mode, source: { jwksUrl: string } | { oidcIssuer: string } = { jwksUrl: `${base}/jwks` }) {
    mode = m;
    bytesSent = 0;
    const { log, lines } = keptLog();
    const keys = new JwksKeys(source, log, { cooldownMs: 0, refreshMs: 60_000 });
    keys.start();
    await eventually(async () => lines.length > 0, 10_000, { stepMs: 20 });
    keys.close();
    return { keys, lines };
  }

  it('accepts a key set of ordinary size', { timeout: 15_000 }, async () => {
    const { keys } = await fetchIn('ok');
    assert.equal(keys.status().ready, true);
    assert.equal(keys.status().keys, 1);
  });

  for (const [m, message] of [
    ['huge', /the JWKS response is larger than 524288 bytes/],
    ['endless', /the JWKS response is larger than 524288 bytes/],
    ['many-keys', /the JWKS holds 1000 keys, more than the 100 accepted/],
  ] as const) {
    it(`refuses a ${m} key set and keeps JWTs refused`, { timeout: 15_000 }, async () => {
      const { keys, lines } = await fetchIn(m);
      assert.equal(keys.status().ready, false);
      assert.match(lines.join(''), message);
      if (m === 'endless') {
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.ok(bytesSent < 8 * 1024 * 1024, `the issuer sent ${bytesSent} bytes before the client stopped reading`);
      }
    });
  }

  it('refuses a discovery document past the size cap', { timeout: 15_000 }, async () => {
    const { keys, lines } = await fetchIn('huge-discovery', { oidcIssuer: base });
    assert.equal(keys.status().ready, false);
    assert.match(lines.join(''), /openid-configuration's answer is larger than 524288 bytes/);
  });
});
