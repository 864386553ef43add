// Prometheus metrics on the admin port (--admin-port), checked from outside:
// a real server, its public and admin ports, and promtool's parser and linter.
// test/slow/prometheus.test.ts has a real Prometheus server scrape it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { storeConfig } from '../../src/config.js';
import { metricsText } from '../../src/metrics/metrics.js';
import { createPgPool } from '../../src/store/postgres/db-connect.postgres.js';
import { after, before, commandProbe, it, needs, requirement } from '../helpers/requirements.js';
import { describeEachStore, describeOnStore } from '../helpers/stores.js';
import {
  httpRequest,
  runCli,
  serveArgs,
  stopGracefully,
  tokensIn,
  useProcessCleanup,
  adminUrlOf,
  type ServerProcess,
} from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { parseExposition, requests, scrape, valueOf, type Sample } from '../helpers/metrics-scrape.js';
import { exchange, trickle } from '../helpers/raw-socket.js';

const promtool = await requirement('promtool (Debian package prometheus)', commandProbe('promtool'));

/** Sends a request line and raw headers over a socket; resolves with the status line's code (0: none). */
async function rawStatus(port: number, head: string): Promise<number> {
  const { data } = await exchange(port, (socket) => socket.write(head), 5000);
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
}

describeEachStore('metrics on the admin port', (fx) => {
  let server: ServerProcess;
  let admin: string;
  let token: string;

  before(async () => {
    server = await serveInProcess(serveArgs(fx.db, '--admin-port', '0', '--body-limit', '1024'));
    admin = await adminUrlOf(server);
    token = tokensIn(server.stderr)[0]!;
    assert.ok(token, server.stderr);
  });
  after(() => stopGracefully(server));

  it('serves /metrics, /healthz and /readyz on the admin port, and /metrics never on the public port', async () => {
    const pub = await httpRequest(`${server.url}/metrics`, { token });
    assert.equal(pub.status, 404);
    assert.deepEqual(JSON.parse(pub.body), { error: 404, message: 'no route for GET /metrics' });
    assert.equal((await httpRequest(`${server.url}/metrics`)).status, 401, 'an unknown path needs a token too');

    await scrape(admin);
    assert.deepEqual(JSON.parse((await httpRequest(`${admin}/healthz`)).body), { status: 'ok' });
    const ready = await httpRequest(`${admin}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(JSON.parse(ready.body), { status: 'ready' });
    const unknown = await httpRequest(`${admin}/plants`);
    assert.equal(unknown.status, 404);
    assert.equal(JSON.parse(unknown.body).error, 404);
  });

  it('counts requests by method, route template and status, including 401, 404, 405, 413 and errors before routing', async () => {
    const before = (await scrape(admin)).samples;
    const count = (samples: Sample[], labels: Record<string, string>) =>
      (valueOf(samples, 'plant_store_http_request_duration_seconds_count', labels) ?? 0) -
      (valueOf(before, 'plant_store_http_request_duration_seconds_count', labels) ?? 0);
    const malformedBefore = valueOf(before, 'plant_store_http_malformed_requests_total', { status_code: '431' }) ?? 0;

    const id = 987654321987;
    assert.equal(
      (await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id, name: 'a' } })).status,
      200,
    );
    assert.equal((await httpRequest(`${server.url}/plants?limit=5`, { token })).status, 200);
    assert.equal((await httpRequest(`${server.url}/plants`, { token })).status, 200);
    assert.equal((await httpRequest(`${server.url}/plants/${id + 1}`, { method: 'DELETE', token })).status, 404);
    assert.equal((await httpRequest(`${server.url}/plants/${id}`, { method: 'DELETE', token })).status, 204);
    assert.equal((await httpRequest(`${server.url}/plants`)).status, 401);
    assert.equal((await httpRequest(`${server.url}/plants`, { method: 'PUT', token })).status, 405);
    const big = { id: 1, name: 'x'.repeat(2000) };
    assert.equal((await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: big })).status, 413);
    assert.equal((await httpRequest(`${server.url}/nowhere/${id}`, { token })).status, 404);
    assert.equal((await httpRequest(`${server.url}/plants/%E0%A4%A`, { method: 'DELETE', token })).status, 400);
    const overflow = `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    assert.equal(await rawStatus(server.port, overflow), 431);

    const { text, samples } = await scrape(admin);
    assert.equal(count(samples, requests('POST', '/plants', 200)), 1);
    assert.equal(count(samples, requests('GET', '/plants', 200)), 2);
    assert.equal(count(samples, requests('DELETE', '/plants/:id', 404)), 1);
    assert.equal(count(samples, requests('DELETE', '/plants/:id', 204)), 1);
    assert.equal(count(samples, requests('GET', '/plants', 401)), 1);
    assert.equal(count(samples, requests('PUT', '/plants', 405)), 1);
    assert.equal(count(samples, requests('POST', '/plants', 413)), 1);
    assert.equal(count(samples, requests('GET', 'unmatched', 404)), 1);
    assert.equal(count(samples, requests('DELETE', 'unmatched', 400)), 1);
    assert.equal(
      (valueOf(samples, 'plant_store_http_malformed_requests_total', { status_code: '431' }) ?? 0) - malformedBefore,
      1,
    );
    // Route templates only: no raw id or path becomes a label value.
    assert.ok(!text.includes(String(id)), 'a raw id appears in the metrics');
    assert.ok(!text.includes('nowhere'), 'a raw path appears in the metrics');

    // Each series is a histogram: buckets that never decrease, ending in +Inf = _count.
    const labels = requests('GET', '/plants', 200);
    const buckets = samples.filter(
      (s) =>
        s.name === 'plant_store_http_request_duration_seconds_bucket' &&
        Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
    assert.ok(buckets.length > 5);
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value);
    assert.equal(buckets.at(-1)!.labels.le, '+Inf');
    assert.equal(buckets.at(-1)!.value, valueOf(samples, 'plant_store_http_request_duration_seconds_count', labels));
    assert.ok(valueOf(samples, 'plant_store_http_request_duration_seconds_sum', labels)! > 0);
  });

  it('records store commits and queries, the token cache, and process metrics', async () => {
    const before = (await scrape(admin)).samples;
    const delta = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
      (valueOf(samples, name, labels) ?? 0) - (valueOf(before, name, labels) ?? 0);

    const creates = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: 5000 + i, name: `p${i}` } }),
      ),
    );
    assert.deepEqual(
      creates.map((r) => r.status),
      creates.map(() => 200),
    );
    const other = tokensIn((await runTokenCreate(fx.db)).stdout)[0]!;
    assert.equal((await httpRequest(`${server.url}/plants?limit=3`, { token: other })).status, 200);
    assert.equal((await httpRequest(`${server.url}/plants?limit=3`, { token: other })).status, 200);

    const { samples } = await scrape(admin);
    const store = fx.kind;
    assert.ok(delta(samples, 'plant_store_db_commit_duration_seconds_count', { store }) >= 1);
    assert.ok(delta(samples, 'plant_store_db_commit_duration_seconds_sum', { store }) > 0);
    assert.ok(delta(samples, 'plant_store_db_query_duration_seconds_count', { store }) >= 1);
    if (fx.kind === 'sqlite') {
      // 20 creates in at most 20 batches, every write in exactly one batch.
      assert.equal(delta(samples, 'plant_store_sqlite_commit_batch_size_sum'), 20);
      const batches = delta(samples, 'plant_store_sqlite_commit_batch_size_count');
      assert.ok(batches >= 1 && batches <= 20, `${batches} batches`);
      assert.equal(delta(samples, 'plant_store_db_commit_duration_seconds_count', { store }), batches);
    } else {
      // Concurrent creates share batches: one commit each, 20 at most.
      const commits = delta(samples, 'plant_store_db_commit_duration_seconds_count', { store });
      assert.ok(commits >= 1 && commits <= 20, `${commits} commits`);
    }
    assert.ok(valueOf(samples, 'plant_store_pg_pool_connections_in_use')! >= 0);
    assert.ok(valueOf(samples, 'plant_store_pg_pool_waiting_requests')! >= 0);
    // The new token was looked up once, then answered from the cache.
    assert.ok(delta(samples, 'plant_store_token_cache_misses_total') >= 1);
    assert.ok(delta(samples, 'plant_store_token_cache_hits_total') >= 1);
    assert.ok(valueOf(samples, 'process_resident_memory_bytes')! > 10_000_000);
    assert.ok(valueOf(samples, 'nodejs_eventloop_lag_seconds')! >= 0);
  });

  needs(promtool, () => {
    it('is accepted by promtool check metrics (parser and linter)', async () => {
      const { text } = await scrape(admin);
      const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      assert.equal(r.status, 0, `promtool: ${r.stdout}${r.stderr}`);
    });
  });
});

async function runTokenCreate(db: string) {
  const r = await runCli(['token', 'create', '--owner', `metrics-${Math.random().toString(36).slice(2)}`, '--db', db]);
  assert.equal(r.code, 0, r.stderr);
  return r;
}

describeOnStore('sqlite', 'malformed-request counter and timeouts', (fx) => {
  useProcessCleanup();

  it('counts a head too large for the parser, not a 408 for a head that came too slowly nor a silent connection', async () => {
    const server = await serveInProcess(
      serveArgs(fx.db, '--admin-port', '0', '--headers-timeout-ms', '1000', '--request-timeout-ms', '2000'),
    );
    try {
      const admin = await adminUrlOf(server);
      const malformed = (samples: Sample[]) =>
        samples.filter((s) => s.name === 'plant_store_http_malformed_requests_total').reduce((n, s) => n + s.value, 0);
      const before = malformed((await scrape(admin)).samples);

      // A head trickled a line at a time past the head timeout: 408.
      const slow = exchange(
        server.port,
        (s) => {
          s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
          trickle(s, 'X-Slow: y\r\n', 200);
        },
        5000,
      );
      // A connection that sends nothing: closed without an answer.
      const silent = rawStatus(server.port, '');
      assert.match((await slow).data, /^HTTP\/1\.1 408 /);
      assert.equal(await silent, 0);
      assert.equal(malformed((await scrape(admin)).samples) - before, 0, 'a timeout counted as malformed');

      const overflow = `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
      assert.equal(await rawStatus(server.port, overflow), 431);
      assert.equal(malformed((await scrape(admin)).samples) - before, 1);
    } finally {
      await stopGracefully(server);
    }
  });

  it('counts a CONNECT, answered 405 on the socket, with its status', async () => {
    const server = await serveInProcess(serveArgs(fx.db, '--admin-port', '0'));
    try {
      const admin = await adminUrlOf(server);
      const connects = (samples: Sample[]) =>
        valueOf(samples, 'plant_store_http_malformed_requests_total', { status_code: '405' }) ?? 0;
      const before = connects((await scrape(admin)).samples);
      assert.equal(
        await rawStatus(server.port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'),
        405,
      );
      assert.equal(connects((await scrape(admin)).samples) - before, 1);
    } finally {
      await stopGracefully(server);
    }
  });
});

describeOnStore('postgres', 'PostgreSQL pool gauges', (fx) => {
  it('report connections in use and requests waiting for one, summed over the live pools', async () => {
    const config = storeConfig(fx.config({ pgPoolSize: 1 }));
    assert.equal(config.kind, 'postgres');
    if (config.kind !== 'postgres') return;
    const pool = createPgPool(config.postgres);
    const gauges = async () => {
      const samples = parseExposition(await metricsText());
      return [
        valueOf(samples, 'plant_store_pg_pool_connections_in_use'),
        valueOf(samples, 'plant_store_pg_pool_waiting_requests'),
      ];
    };
    try {
      const base = await gauges();
      const held = await pool.connect();
      const waiting = pool.connect();
      assert.deepEqual(await gauges(), [base[0]! + 1, base[1]! + 1]);
      held.release();
      (await waiting).release();
      assert.deepEqual(await gauges(), base);
    } finally {
      await pool.end();
    }
  });
});
