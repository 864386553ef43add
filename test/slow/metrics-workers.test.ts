// One Prometheus scrape of `serve --workers 2`'s primary sums what every
// worker counted: requests, and process metrics. A cluster of three
// processes, so it runs with the slow checks; the one-process metrics are in
// test/operations/metrics.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { commandProbe, it, requirement } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';
import { requests, scrape, valueOf } from '../helpers/metrics-scrape.js';
import {
  adminUrlOf,
  httpRequest,
  serveArgs,
  startServer,
  stopGracefully,
  tokensIn,
  useProcessCleanup,
} from '../helpers/server.js';

const promtool = await requirement('promtool (Debian package prometheus)', commandProbe('promtool'));

describeOnStore('sqlite', 'metrics with --workers 2', (fx) => {
  useProcessCleanup();

  it('one scrape of the primary returns the sums over all workers', async () => {
    // --access-log: the request lines name the worker that served each request.
    const server = await startServer(serveArgs(fx.db, '--workers', '2', '--admin-port', '0', '--access-log'), {
      listeners: 2,
    });
    try {
      const admin = await adminUrlOf(server);
      const token = tokensIn(server.stderr)[0]!;
      const n = 40;
      // A new connection per request: the cluster hands connections to the workers in turn.
      for (let i = 0; i < n; i++)
        assert.equal((await httpRequest(`${server.url}/plants?limit=1`, { token })).status, 200);
      // Request lines reach stdout within a second (the log is buffered).
      const servedBy = () =>
        new Set(
          server
            .logLines()
            .filter((l) => l.msg === 'request completed' && l.url === '/plants?limit=1')
            .map((l) => l.pid),
        );
      await server.waitForOutput(() => servedBy().size === 2, 5000);

      const { text, samples } = await scrape(admin);
      assert.equal(
        valueOf(samples, 'plant_store_http_request_duration_seconds_count', requests('GET', '/plants', 200)),
        n,
      );
      if (promtool === undefined) {
        const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
        assert.equal(r.status, 0, `promtool on the summed metrics: ${r.stdout}${r.stderr}`);
      }
      // Process metrics are summed too: two workers' memory.
      assert.ok(valueOf(samples, 'process_resident_memory_bytes')! > 20_000_000);
      const ready = await httpRequest(`${admin}/readyz`);
      assert.equal(ready.status, 200, ready.body);
      assert.equal((await httpRequest(`${server.url}/metrics`, { token })).status, 404);
    } finally {
      await stopGracefully(server);
    }
  });
});
