// PostgreSQL outages seen by a real server process: a TCP proxy on 127.0.0.1
// between the server and PostgreSQL is stopped (every connection destroyed,
// connects refused), restarted on the same port, or made to drop traffic; and
// pg_terminate_backend kills the server's connections. Plant requests must
// answer 503 with the Error body promptly, /readyz must follow the database,
// and the process must survive and recover by itself.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from '../helpers/requirements.js';
import { setTimeout as delay } from 'node:timers/promises';
import {
  cliToken,
  httpRequest,
  serveArgs,
  type HttpResponse,
  type ServerProcess,
  stopGracefully,
} from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { TcpProxy, expectErrorBody, query, serviceBackends, terminateServiceBackends, viaPort } from '../helpers/pg.js';
import { describeOnStore } from '../helpers/stores.js';

const TEST_TIMEOUT = 30_000;
/** "Promptly": well under a hang, with room for the pool's 3 s connect timeout. */
const PROMPT_MS = 4000;

const owner = (prefix: string) => `${prefix}-${randomBytes(5).toString('hex')}`;

interface Timed {
  res: HttpResponse;
  ms: number;
}

async function timed(url: string, opts: Parameters<typeof httpRequest>[1] = {}): Promise<Timed> {
  const start = performance.now();
  const res = await httpRequest(url, { timeoutMs: 12_000, ...opts });
  return { res, ms: performance.now() - start };
}

function createPlant(s: ServerProcess, token: string, id: number, name = `p${id}`): Promise<Timed> {
  return timed(`${s.url}/plants`, { method: 'POST', token, json: { id, name } });
}

async function names(s: ServerProcess, token: string): Promise<string[]> {
  const res = await httpRequest(`${s.url}/plants`, { token, timeoutMs: 10_000 });
  assert.equal(res.status, 200, `GET /plants: ${res.body}`);
  return (JSON.parse(res.body) as { name: string }[]).map((p) => p.name);
}

/** Polls /readyz every 100 ms until it answers 200; returns how long that took. */
async function waitReady(s: ServerProcess, withinMs: number): Promise<number> {
  const start = performance.now();
  let last = '';
  while (performance.now() - start < withinMs) {
    const res = await httpRequest(`${s.url}/readyz`, { timeoutMs: 5000 }).catch((e: Error) => e);
    if (!(res instanceof Error) && res.status === 200) {
      assert.deepEqual(JSON.parse(res.body), { status: 'ready' });
      return performance.now() - start;
    }
    last = res instanceof Error ? res.message : `${res.status} ${res.body}`;
    await delay(100);
  }
  assert.fail(`/readyz did not answer 200 within ${withinMs} ms; last answer: ${last}`);
}

async function expectAlive(s: ServerProcess): Promise<void> {
  if (!s.exited) return;
  const how = await s.waitExit(1000).catch(() => undefined);
  assert.fail(
    `the server process exited (${JSON.stringify(how)})\nstderr:\n${s.stderr}\nstdout (end):\n${s.stdout.slice(-3000)}`,
  );
}

/** Error-level log lines other than the request failures an outage is expected to log. */
function unexpectedLogErrors(s: ServerProcess): Record<string, unknown>[] {
  return s.logLines().filter((l) => typeof l.level === 'number' && l.level >= 50 && l.msg !== 'request failed');
}

describeOnStore('postgres', 'PostgreSQL outage through a TCP proxy', (fx) => {
  describe('server behind a proxy', () => {
    // The servers live across this suite's tests, so no useProcessCleanup() (it kills after each
    // test); the after() below stops them, and server.ts kills leftovers when the file ends.
    let proxy: TcpProxy;
    let server: ServerProcess;
    let token: string;

    before(async () => {
      proxy = TcpProxy.for(fx.db);
      await proxy.start();
      // The token is made directly on the database (this also migrates it).
      token = await cliToken(fx.db, owner('outage'));
      server = await serveInProcess(serveArgs(viaPort(fx.db, proxy.port), '--pg-pool-size', '4'));
    });
    after(async () => {
      await stopGracefully(server);
      await proxy?.stop();
    });

    it(
      'answers 503 promptly while PostgreSQL is unreachable, and recovers by itself when it returns',
      { timeout: TEST_TIMEOUT },
      async () => {
        const first = await createPlant(server, token, 1, 'before');
        assert.equal(first.res.status, 200, first.res.body);
        assert.equal((await httpRequest(`${server.url}/readyz`)).status, 200);
        assert.ok(proxy.connections > 0, 'the server talks to PostgreSQL through the proxy');

        await proxy.stop();

        // Several rounds, so the answers come both from the token cache and past it.
        for (let round = 0; round < 3; round++) {
          const answers: [string, Timed][] = [
            ['POST /plants', await createPlant(server, token, 100 + round)],
            ['GET /plants', await timed(`${server.url}/plants`, { token })],
            ['GET /plants?limit=1', await timed(`${server.url}/plants?limit=1`, { token })],
            ['DELETE /plants/1', await timed(`${server.url}/plants/1`, { method: 'DELETE', token })],
            ['GET /readyz', await timed(`${server.url}/readyz`)],
          ];
          for (const [what, { res, ms }] of answers) {
            expectErrorBody(res, 503, `${what} during the outage (round ${round})`);
            assert.ok(ms < PROMPT_MS, `${what} took ${Math.round(ms)} ms during the outage`);
          }
          const live = await timed(`${server.url}/healthz`);
          assert.equal(live.res.status, 200, `/healthz during the outage: ${live.res.body}`);
          await expectAlive(server);
          await delay(300);
        }

        await proxy.start();
        const took = await waitReady(server, 10_000);
        assert.ok(took < 5000, `/readyz recovered only after ${Math.round(took)} ms`);

        const afterwards = await createPlant(server, token, 2, 'after');
        assert.equal(afterwards.res.status, 200, afterwards.res.body);
        // Nothing written during the outage, nothing lost from before it.
        assert.deepEqual(await names(server, token), ['before', 'after']);
        await expectAlive(server);
      },
    );

    it(
      'requests racing the outage answer 200 or 503 (never 500, never a hang) and a retried create is not duplicated',
      { timeout: TEST_TIMEOUT },
      async () => {
        const who = owner('race');
        const raceToken = await cliToken(fx.db, who);
        assert.equal((await httpRequest(`${server.url}/readyz`)).status, 200);

        const results: { id: number; kind: 'create' | 'list'; res: HttpResponse; ms: number }[] = [];
        let nextId = 1;
        let running = true;
        const workers = Array.from({ length: 6 }, async (_, w) => {
          for (let i = 0; i < 1000 && running; i++) {
            if (w % 3 === 2) {
              const t = await timed(`${server.url}/plants?limit=5`, { token: raceToken });
              results.push({ id: 0, kind: 'list', ...t });
            } else {
              const id = nextId++;
              const t = await createPlant(server, raceToken, id);
              results.push({ id, kind: 'create', ...t });
            }
          }
        });
        await delay(400);
        await proxy.stop();
        await delay(600);
        await proxy.start();
        await delay(400);
        running = false;
        await Promise.all(workers);

        const statuses = new Map<number, number>();
        for (const r of results) statuses.set(r.res.status, (statuses.get(r.res.status) ?? 0) + 1);
        const summary = JSON.stringify([...statuses]);
        for (const r of results) {
          assert.ok(
            r.res.status === 200 || r.res.status === 503,
            `${r.kind} ${r.id}: ${r.res.status} ${r.res.body} (all: ${summary})`,
          );
          if (r.res.status === 503) expectErrorBody(r.res, 503, `${r.kind} during the outage`);
          assert.ok(r.ms < PROMPT_MS, `${r.kind} ${r.id} took ${Math.round(r.ms)} ms`);
        }
        assert.ok((statuses.get(503) ?? 0) > 0, `no request saw the outage: ${summary}`);
        assert.ok((statuses.get(200) ?? 0) > 0, `no request succeeded: ${summary}`);
        await expectAlive(server);

        await waitReady(server, 10_000);
        // A 503 create may or may not have committed: retrying it is safe (200, no duplicate).
        const creates = results.filter((r) => r.kind === 'create');
        for (const r of creates.filter((c) => c.res.status === 503)) {
          const retry = await createPlant(server, raceToken, r.id);
          assert.equal(retry.res.status, 200, `retry of ${r.id}: ${retry.res.body}`);
        }
        const stored = await query<{ id: string }>(fx.db, 'SELECT id::text AS id FROM plants WHERE owner = $1', [who]);
        const byNumber = (x: number, y: number) => x - y;
        assert.deepEqual(stored.map((r) => Number(r.id)).sort(byNumber), creates.map((c) => c.id).sort(byNumber));
      },
    );

    it(
      'a partition (traffic dropped, connections left open) answers 503 within a few seconds, not a hang',
      { timeout: TEST_TIMEOUT },
      async () => {
        // Its own proxy and server, with a 1 s statement timeout: even counting
        // the pool's 3 s connect timeout, 6 s is ample for a 503.
        const own = TcpProxy.for(fx.db);
        await own.start();
        const s = await serveInProcess(
          serveArgs(viaPort(fx.db, own.port), '--pg-pool-size', '4', '--pg-statement-timeout-ms', '1000'),
        );
        try {
          assert.equal((await httpRequest(`${s.url}/readyz`)).status, 200);
          // Open pooled connections, then let the token cache expire so the next request reads the database.
          const warm = await Promise.all(Array.from({ length: 4 }, () => httpRequest(`${s.url}/plants`, { token })));
          for (const res of warm) assert.equal(res.status, 200, res.body);
          await delay(600);

          own.partition();
          try {
            const [list, ready] = await Promise.all([
              timed(`${s.url}/plants`, { token, timeoutMs: 10_000 }).catch((e: Error) => e),
              timed(`${s.url}/readyz`, { timeoutMs: 10_000 }).catch((e: Error) => e),
            ]);
            for (const [what, t] of [
              ['GET /plants', list],
              ['GET /readyz', ready],
            ] as const) {
              assert.ok(
                !(t instanceof Error),
                `${what} during a partition got no answer within 10 s (${t instanceof Error ? t.message : ''})`,
              );
              expectErrorBody(t.res, 503, `${what} during a partition`);
              assert.ok(t.ms < 6000, `${what} took ${Math.round(t.ms)} ms during a partition`);
            }
            await expectAlive(s);
          } finally {
            own.heal();
          }
          await waitReady(s, 15_000);
          const res = await httpRequest(`${s.url}/plants`, { token });
          assert.equal(res.status, 200, res.body);
        } finally {
          await stopGracefully(s);
          await own.stop();
        }
      },
    );

    it('the server never crashed and stops cleanly on SIGTERM', { timeout: TEST_TIMEOUT }, async () => {
      await expectAlive(server);
      assert.deepEqual(unexpectedLogErrors(server), []);
      server.kill('SIGTERM');
      assert.deepEqual(await server.waitExit(15_000), { code: 0, signal: null });
    });
  });
});

describeOnStore('postgres', "PostgreSQL terminates the server's connections", (fx) => {
  describe('pg_terminate_backend', () => {
    // The servers live across this suite's tests, so no useProcessCleanup() (it kills after each
    // test); the after() below stops them, and server.ts kills leftovers when the file ends.
    let server: ServerProcess;
    let token: string;

    before(async () => {
      token = await cliToken(fx.db, owner('term'));
      server = await serveInProcess(serveArgs(fx.db, '--pg-pool-size', '5'));
    });
    after(() => stopGracefully(server));

    it(
      'recovers transparently from terminated idle connections: the next requests answer 200',
      { timeout: TEST_TIMEOUT },
      async () => {
        let id = 0;
        for (let cycle = 0; cycle < 3; cycle++) {
          // Open several pooled connections, then let them sit idle.
          const warm = await Promise.all(Array.from({ length: 10 }, () => createPlant(server, token, ++id)));
          for (const t of warm) assert.equal(t.res.status, 200, t.res.body);
          assert.ok((await serviceBackends(fx.db)).length >= 1, 'the server holds connections');

          const killed = await terminateServiceBackends(fx.db);
          assert.ok(killed >= 1, `cycle ${cycle}: terminated ${killed} backends`);
          await delay(50);

          const ready = await httpRequest(`${server.url}/readyz`);
          assert.equal(ready.status, 200, `cycle ${cycle}: /readyz after termination: ${ready.body}`);
          for (let i = 0; i < 5; i++) {
            const t = await createPlant(server, token, ++id);
            assert.equal(t.res.status, 200, `cycle ${cycle}: create after termination: ${t.res.body}`);
          }
          const burst = await Promise.all(
            Array.from({ length: 10 }, () => timed(`${server.url}/plants?limit=3`, { token })),
          );
          for (const t of burst)
            assert.equal(t.res.status, 200, `cycle ${cycle}: list after termination: ${t.res.body}`);
        }
        assert.equal((await names(server, token)).length, id);
        await expectAlive(server);
      },
    );

    it(
      'connections terminated mid-request answer 200 or 503, never 500, and the server recovers',
      { timeout: TEST_TIMEOUT },
      async () => {
        const who = owner('midreq');
        const midToken = await cliToken(fx.db, who);
        const results: Timed[] = [];
        let running = true;
        let nextId = 1;
        const workers = Array.from({ length: 8 }, async (_, w) => {
          for (let i = 0; i < 1000 && running; i++) {
            results.push(
              w % 2
                ? await timed(`${server.url}/plants?limit=10`, { token: midToken })
                : await createPlant(server, midToken, nextId++),
            );
          }
        });
        let killed = 0;
        for (let k = 0; k < 5; k++) {
          await delay(200);
          killed += await terminateServiceBackends(fx.db);
        }
        running = false;
        await Promise.all(workers);
        assert.ok(killed >= 5, `terminated ${killed} backends`);
        assert.ok(results.length > 20, `only ${results.length} requests ran`);
        const summary = JSON.stringify(results.map((t) => t.res.status).filter((s) => s !== 200));
        for (const t of results) {
          if (t.res.status !== 200)
            expectErrorBody(t.res, 503, `a request whose connection was terminated (non-200s: ${summary})`);
          assert.ok(t.ms < PROMPT_MS, `a request took ${Math.round(t.ms)} ms`);
        }
        await expectAlive(server);

        await waitReady(server, 5000);
        const after = await Promise.all(
          Array.from({ length: 10 }, () => timed(`${server.url}/plants?limit=3`, { token: midToken })),
        );
        for (const t of after) assert.equal(t.res.status, 200, t.res.body);
      },
    );

    it('the server never crashed and stops cleanly on SIGTERM', { timeout: TEST_TIMEOUT }, async () => {
      await expectAlive(server);
      assert.deepEqual(unexpectedLogErrors(server), []);
      server.kill('SIGTERM');
      assert.deepEqual(await server.waitExit(15_000), { code: 0, signal: null });
    });
  });
});
