// The SSRF guard on every IPv6 literal form that embeds an IPv4 address:
// judged like the private forms (refused), warned about by `webhook add`, and
// refused by a delivery attempt unless private addresses are allowed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { addressRefusal, checkLiteralHost } from '../../src/outbox/address-guard.js';
import { attemptDelivery } from '../../src/outbox/attempt.js';

const LIMIT = { timeout: 30_000 };

// Each form with 127.0.0.1 (or 10.0.0.1) inside it, as a user could write it.
const EMBEDDING_FORMS: Record<string, string> = {
  '::127.0.0.1': 'ipv4Compatible',
  '::7f00:1': 'ipv4Compatible',
  '::10.0.0.1': 'ipv4Compatible',
  '::8.8.8.8': 'ipv4Compatible',
  '::ffff:127.0.0.1': 'loopback',
  '::ffff:7f00:1': 'loopback',
  '::ffff:0:127.0.0.1': 'rfc6145',
  '64:ff9b::127.0.0.1': 'rfc6052',
  '64:ff9b::8.8.8.8': 'rfc6052',
  '64:ff9b:1::a00:1': 'rfc6052',
  '2002:7f00:1::1': '6to4',
  '2001:0:4136:e378:8000:63bf:80ff:fffe': 'teredo',
  '2600::5efe:127.0.0.1': 'isatap embedding a loopback IPv4 address',
  '2600::200:5efe:a00:1': 'isatap embedding a private IPv4 address',
};

describe('address guard: IPv6 forms that embed IPv4', () => {
  it('refuses every embedding form, in dotted and hex spelling', () => {
    for (const [address, range] of Object.entries(EMBEDDING_FORMS))
      assert.equal(addressRefusal(address), range, address);
    // Still public: mapped public IPv4, and an ISATAP id around a public IPv4.
    for (const address of ['::ffff:8.8.8.8', '2600::5efe:808:808', '2606:4700:4700::1111'])
      assert.equal(addressRefusal(address), undefined, address);
  });

  it('refuses them as URL hosts, as the URL parser writes them', () => {
    for (const address of Object.keys(EMBEDDING_FORMS)) {
      const host = new URL(`http://[${address}]:8080/`).hostname;
      assert.throws(() => checkLiteralHost(host), /refused: .*address/, host);
    }
  });

  it('a delivery attempt to an IPv4-compatible loopback literal is refused before connecting', LIMIT, async () => {
    let reached = 0;
    const server = createServer((_req, res) => {
      reached++;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '::', resolve));
    after(() => server.close());
    const port = (server.address() as { port: number }).port;
    const result = await attemptDelivery(`http://[::127.0.0.1]:${port}/hook`, {}, '{}', {
      timeoutMs: 2_000,
      allowPrivate: false,
      signal: new AbortController().signal,
    });
    assert.equal(result.kind, 'failed');
    assert.match((result as { error: string }).error, /refused: ::7f00:1, a ipv4Compatible address/);
    assert.equal(reached, 0);
  });

  it('webhook add warns about each embedding form', LIMIT, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-address-forms-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const db = join(dir, 'plants.db');
    assert.equal((await runCli(['migrate', '--db', db])).code, 0);
    for (const address of ['::127.0.0.1', '64:ff9b:1::a00:1', '2600::5efe:127.0.0.1']) {
      const r = await runCli([
        'webhook',
        'add',
        '--db',
        db,
        '--webhook-key-file',
        join(dir, 'key'),
        '--owner',
        'alice',
        '--url',
        `https://[${address}]/hook`,
      ]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /warning: .* is a .* address: servers refuse to deliver there/, address);
    }
  });
});
