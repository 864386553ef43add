// The PostgreSQL connections of `serve --workers 2` under load, as real
// processes: straight to PostgreSQL a running cluster stays within workers ×
// pool size, and behind PgBouncer's transaction pooling workers × pool size
// may exceed max_connections, since PgBouncer holds the server connections.
// The checks made at start (a configuration that cannot fit is refused) are in
// test/stores/postgres-connection-budget.test.ts, and the rest of PgBouncer in
// test/stores/pgbouncer.test.ts.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from '../helpers/requirements.js';
import { cliToken, httpRequest, serveArgs, startServer, stopGracefully, useProcessCleanup } from '../helpers/server.js';
import { query, serviceBackends } from '../helpers/pg.js';
import { PG_URL, describeOnStore } from '../helpers/stores.js';

describeOnStore('postgres', 'PostgreSQL connections of serve --workers', (fx) => {
  useProcessCleanup();

  it('opens at most workers × pool size connections under load', { timeout: 60_000 }, async () => {
    const token = await cliToken(fx.db, 'crowd');
    const server = await startServer(serveArgs(fx.db, '--workers', '2', '--pg-pool-size', '3'), { listeners: 2 });
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, (await serviceBackends(fx.db)).length);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      // Many concurrent requests on fresh connections, so both workers take some.
      for (let round = 0; round < 5; round++) {
        const answers = await Promise.all(
          Array.from({ length: 64 }, (_, i) =>
            i % 2
              ? httpRequest(`${server.url}/plants?limit=5`, { token })
              : httpRequest(`${server.url}/plants`, {
                  method: 'POST',
                  token,
                  json: { id: round * 100 + i, name: 'p' },
                }),
          ),
        );
        for (const res of answers) assert.equal(res.status, 200, res.body);
      }
    } finally {
      sampling = false;
      await sampler;
      await stopGracefully(server);
    }
    assert.ok(peak > 0, 'the workers talked to PostgreSQL');
    assert.ok(peak <= 2 * 3, `${peak} server connections at the peak, more than 2 workers × pool size 3`);
  });
});

describeOnStore('pgbouncer', 'serve --workers behind PgBouncer in transaction pooling mode', (fx) => {
  useProcessCleanup();

  it("leaves max_connections to PgBouncer's pool: workers × pool size may exceed it", { timeout: 60_000 }, async () => {
    const [row] = await query<{ max: number }>(PG_URL, "SELECT current_setting('max_connections')::int AS max");
    const pool = String(row!.max);
    const token = await cliToken(fx.db, `many-${randomBytes(5).toString('hex')}`, '--pg-pooler', 'transaction');
    const server = await startServer(
      serveArgs(fx.db, '--pg-pooler', 'transaction', '--workers', '2', '--pg-pool-size', pool),
      { listeners: 2 },
    );
    try {
      const res = await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: 1, name: 'one' } });
      assert.equal(res.status, 200, res.body);
    } finally {
      await stopGracefully(server);
    }
  });
});
