// The default head timeout, waited for in real time: a connection that sends
// nothing is closed within 10 s (test/hardening/connections-cut.test.ts checks the
// timeouts with short settings).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exchange } from '../helpers/raw-socket.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { serveArgs, stopGracefully } from '../helpers/server.js';

describe('default connection timeouts', () => {
  let dir: string;
  const newDb = () => join(dir, 'plants.db');
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-conn-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('by default closes a connection that sends nothing within 10 s', async () => {
    const server = await serveInProcess(serveArgs(newDb()));
    try {
      const r = await exchange(server.port, () => {}, 12_000);
      assert.equal(r.data, '');
      assert.ok(r.closedAfterMs >= 8500 && r.closedAfterMs <= 10_500, `closed after ${r.closedAfterMs} ms`);
    } finally {
      await stopGracefully(server);
    }
  });
});
