// Plant Store behind PgBouncer in transaction pooling mode (Debian's 1.18:
// no named prepared statements, unknown startup parameters refused), as real
// server processes: the setting that makes it work, the clear refusal
// without it, two instances that must agree on every read after a write, and
// outages of PgBouncer itself and of its server connections. The store
// contract also runs through PgBouncer (stores/contract.test.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from '../helpers/requirements.js';
import {
  cliToken,
  delay,
  httpRequest,
  listAllNames,
  serveArgs,
  startServer,
  stopGracefully,
  type HttpResponse,
  type ServerProcess,
} from '../helpers/server.js';
import { runCliInProcess } from '../helpers/cli.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { expectErrorBody, query } from '../helpers/pg.js';
import { PG_URL, describeOnStore } from '../helpers/stores.js';

const TEST_TIMEOUT = 60_000;
const owner = (prefix: string) => `${prefix}-${randomBytes(5).toString('hex')}`;

function create(s: ServerProcess, token: string, id: number | string, name: string): Promise<HttpResponse> {
  return httpRequest(`${s.url}/plants`, { method: 'POST', token, json: { id, name }, timeoutMs: 10_000 });
}

async function waitReady(s: ServerProcess, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs;
  let last = '';
  while (performance.now() < deadline) {
    const res = await httpRequest(`${s.url}/readyz`, { timeoutMs: 5000 }).catch((e: Error) => e);
    if (!(res instanceof Error) && res.status === 200) return;
    last = res instanceof Error ? res.message : `${res.status} ${res.body}`;
    await delay(100);
  }
  assert.fail(`/readyz did not answer 200 within ${withinMs} ms; last answer: ${last}`);
}

/** The service's server connections behind PgBouncer (PgBouncer passes application_name on). */
async function serverConnections(directDb: string): Promise<number[]> {
  const database = new URL(directDb).pathname.slice(1);
  const rows = await query<{ pid: number }>(
    PG_URL,
    `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
    [database],
  );
  return rows.map((r) => r.pid);
}

describeOnStore('pgbouncer', 'PgBouncer in transaction pooling mode', (fx) => {
  it('refuses to start without --pg-pooler transaction, naming the setting', { timeout: TEST_TIMEOUT }, async () => {
    for (const args of [serveArgs(fx.db), ['token', 'create', '--owner', 'x', '--db', fx.db]]) {
      const r = await runCliInProcess(args[0] === 'token' ? args : ['serve', ...args]);
      assert.equal(r.code, 2, `plant-store ${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /refused the startup parameter "statement_timeout"/);
      assert.match(r.stderr, /--pg-pooler transaction \(PLANTS_PG_POOLER=transaction\)/);
    }
  });

  it(
    "leaves max_connections to PgBouncer's pool: workers × pool size may exceed it",
    { timeout: TEST_TIMEOUT },
    async () => {
      const [row] = await query<{ max: number }>(PG_URL, "SELECT current_setting('max_connections')::int AS max");
      const pool = String(row!.max);
      const token = await cliToken(fx.db, owner('many'), '--pg-pooler', 'transaction');
      const server = await startServer(
        serveArgs(fx.db, '--pg-pooler', 'transaction', '--workers', '2', '--pg-pool-size', pool),
        {
          listeners: 2,
        },
      );
      try {
        assert.equal((await create(server, token, 1, 'one')).status, 200);
      } finally {
        await stopGracefully(server);
      }
    },
  );

  describe('two instances through one PgBouncer', () => {
    let a: ServerProcess;
    let b: ServerProcess;
    let token: string;

    before(async () => {
      token = await cliToken(fx.db, owner('shared'), '--pg-pooler', 'transaction');
      // One instance takes the flag, the other the environment variable.
      a = await serveInProcess(serveArgs(fx.db, '--pg-pooler', 'transaction', '--pg-pool-size', '4'));
      b = await serveInProcess(serveArgs(fx.db, '--pg-pool-size', '4'), { env: { PLANTS_PG_POOLER: 'transaction' } });
    });
    after(() => stopGracefully(a, b));

    it('agree on every read after a write', { timeout: TEST_TIMEOUT }, async () => {
      const expected: string[] = [];
      for (let i = 0; i < 40; i++) {
        const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
        const name = `p${i}`;
        const res = await create(writer, token, i, name);
        assert.equal(res.status, 200, res.body);
        expected.push(name);
        assert.deepEqual(await listAllNames(reader.url, token, 7), expected, `after create ${i}`);
        // A replay on the other instance is recognised; other content is a conflict.
        assert.equal((await create(reader, token, i, name)).status, 200);
        expectErrorBody(await create(reader, token, i, `${name}-other`), 409, `conflicting create ${i}`);
        if (i % 5 === 4) {
          const del = await httpRequest(`${writer.url}/plants/${i - 2}`, { method: 'DELETE', token });
          assert.equal(del.status, 204, del.body);
          expected.splice(expected.indexOf(`p${i - 2}`), 1);
          assert.deepEqual(await listAllNames(reader.url, token, 7), expected, `after delete ${i - 2}`);
          const again = await httpRequest(`${reader.url}/plants/${i - 2}`, { method: 'DELETE', token });
          expectErrorBody(again, 404, 'deleting on the other instance what is gone');
        }
      }
    });

    it('answer concurrent creates each on their own, in batches', { timeout: TEST_TIMEOUT }, async () => {
      const burst = await cliToken(fx.db, owner('burst'), '--pg-pooler', 'transaction');
      // Ids 0..99 sent twice with the same content, once to each instance:
      // one is created, the other a replay, both 200. Ids 100..109 sent twice
      // with different names: one 200, one 409, and the 200's name is stored.
      const same = [];
      const rival = [];
      for (let i = 0; i < 100; i++) for (const s of [a, b]) same.push(create(s, burst, i, `n${i}`));
      for (let i = 100; i < 110; i++)
        rival.push(Promise.all([create(a, burst, i, `a${i}`), create(b, burst, i, `b${i}`)]));
      for (const res of await Promise.all(same)) assert.equal(res.status, 200, res.body);
      const winners: string[] = [];
      for (const [i, [ra, rb]] of (await Promise.all(rival)).entries()) {
        assert.deepEqual([ra.status, rb.status].sort(), [200, 409], `rival creates of id ${100 + i}`);
        winners.push(ra.status === 200 ? `a${100 + i}` : `b${100 + i}`);
      }
      const stored = await listAllNames(b.url, burst, 33);
      assert.equal(stored.length, 110, 'one plant per id');
      assert.deepEqual(new Set(stored), new Set([...Array.from({ length: 100 }, (_, i) => `n${i}`), ...winners]));
    });
  });

  describe('outages', () => {
    let server: ServerProcess;
    let token: string;

    before(async () => {
      token = await cliToken(fx.db, owner('outage'), '--pg-pooler', 'transaction');
      server = await serveInProcess(serveArgs(fx.db, '--pg-pooler', 'transaction', '--pg-pool-size', '4'));
    });
    after(() => stopGracefully(server));

    it(
      'answers 503 with the error body while PgBouncer is down, and recovers by itself',
      { timeout: TEST_TIMEOUT },
      async () => {
        assert.equal((await create(server, token, 1, 'before')).status, 200);
        await fx.bouncer!.stop();
        for (let round = 0; round < 3; round++) {
          expectErrorBody(await create(server, token, 100 + round, 'lost'), 503, `create, round ${round}`);
          expectErrorBody(await httpRequest(`${server.url}/plants`, { token }), 503, `list, round ${round}`);
          expectErrorBody(await httpRequest(`${server.url}/readyz`), 503, `/readyz, round ${round}`);
          assert.equal((await httpRequest(`${server.url}/healthz`)).status, 200);
          await delay(200);
        }
        await fx.bouncer!.resume();
        await waitReady(server, 10_000);
        assert.equal((await create(server, token, 2, 'after')).status, 200);
        assert.deepEqual(await listAllNames(server.url, token), ['before', 'after']);
        assert.equal(server.exited, false);
      },
    );

    it(
      'recovers when PostgreSQL terminates the server connections behind PgBouncer',
      { timeout: TEST_TIMEOUT },
      async () => {
        const reads = Array.from({ length: 20 }, () => httpRequest(`${server.url}/plants`, { token }));
        for (const res of await Promise.all(reads)) assert.equal(res.status, 200, res.body);
        const pids = await serverConnections(fx.directDb);
        assert.ok(pids.length > 0, 'PgBouncer holds server connections');
        await query(PG_URL, 'SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [pids]);
        // PgBouncer notices a dead server connection on its next use: at worst
        // a request or two fail with 503 (and are retried, as a client
        // would, with the same body), then every answer is right again.
        const deadline = performance.now() + 10_000;
        for (let i = 3; i < 13; i++) {
          for (;;) {
            const res = await create(server, token, i, `again${i}`);
            if (res.status === 200) break;
            expectErrorBody(res, 503, `create ${i} right after the server connections died`);
            assert.ok(performance.now() < deadline, 'creates succeed again within 10 s');
            await delay(100);
          }
        }
        const names = await listAllNames(server.url, token);
        assert.deepEqual(
          names.filter((n) => n.startsWith('again')),
          Array.from({ length: 10 }, (_, i) => `again${i + 3}`),
        );
        assert.equal(server.exited, false);
      },
    );
  });
});
