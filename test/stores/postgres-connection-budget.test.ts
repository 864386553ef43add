// How --workers and --pg-pool-size multiply into PostgreSQL connections:
// serve refuses at start a configuration that could not fit the server's
// max_connections, and a running one stays within workers × pool size.
// test/slow/pg-connections-idle.test.ts checks that idle connections are kept.
import assert from 'node:assert/strict';
import { it } from '../helpers/requirements.js';
import {
  cliToken,
  httpRequest,
  runCli,
  serveArgs,
  startServer,
  stopGracefully,
  useProcessCleanup,
} from '../helpers/server.js';
import { runCliInProcess } from '../helpers/cli.js';
import { query, serviceBackends } from '../helpers/pg.js';
import { PG_URL, describeOnStore } from '../helpers/stores.js';

describeOnStore('postgres', 'PostgreSQL connections of serve --workers', (fx) => {
  useProcessCleanup();

  it('refuses at start a configuration that exceeds max_connections, and says why', async () => {
    const [row] = await query<{ max: number }>(PG_URL, "SELECT current_setting('max_connections')::int AS max");
    const max = row!.max;
    const pool = Math.ceil((max + 1) / 3);
    const r = await runCli(['serve', ...serveArgs(fx.db, '--workers', '3', '--pg-pool-size', String(pool))]);
    assert.equal(r.code, 2, `${r.stdout}${r.stderr}`);
    assert.match(
      r.stderr,
      new RegExp(
        `--workers 3 × \\(--pg-pool-size ${pool} \\+ 1 for live events\\) = ${3 * (pool + 1)} PostgreSQL connections would not fit`,
      ),
    );
    assert.match(
      r.stderr,
      new RegExp(`max_connections ${max}, less \\d+ reserved for superusers, less \\d+ in use now`),
    );
    // Nothing was started: no worker, no listener, and no server connection left behind.
    assert.doesNotMatch(r.stdout, /listening/);
    assert.deepEqual(await serviceBackends(fx.db), []);

    const one = await runCliInProcess(['serve', ...serveArgs(fx.db, '--pg-pool-size', String(max))]);
    assert.equal(one.code, 2, `${one.stdout}${one.stderr}`);
    assert.match(
      one.stderr,
      new RegExp(`--pg-pool-size ${max} \\+ 1 for live events = ${max + 1} PostgreSQL connections would not fit`),
    );
  });

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
