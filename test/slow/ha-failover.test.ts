// Plant Store on a highly available PostgreSQL, on the real stack of
// deploy/ha/: etcd, three Patroni nodes with synchronous replication, and
// HAProxy routing to the primary. Two service instances write under load,
// one through HAProxy directly (with two worker processes), one through
// PgBouncer in transaction mode in front of HAProxy. Then the cluster is
// broken: the leader node killed, the leader's PostgreSQL crashed, a planned
// switchover, replicas killed. Every write must be answered 2xx or 503 with
// Retry-After, every acknowledged create and delete must be there afterwards,
// and writes must come back by themselves within the failover time. The
// write gap and the 503s of each case are printed as test diagnostics.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import { PgBouncer } from '../helpers/pgbouncer.js';
import {
  cliToken,
  delay,
  httpRequest,
  listAllNames,
  serveArgs,
  startServer,
  stopGracefully,
  type ServerProcess,
} from '../helpers/server.js';
import { HaCluster, haProbe } from './ha-cluster.js';
import { runGuideEnvLines } from '../helpers/cluster-env.js';

const missing = await requirement('patroni, etcd, haproxy, pgbouncer and PostgreSQL server binaries', haProbe);

/**
 * Longest acceptable write gap: the cluster's ttl (10 s, deploy/ha/cluster.sh)
 * for a dead leader's key to expire, loop_wait (2 s) for a replica to notice,
 * the promotion, two HAProxy checks (1 s apart), and room for a busy machine.
 */
const FAILOVER_BUDGET_MS = 30_000;
const CASE_TIMEOUT = 240_000;
const WRITERS_PER_INSTANCE = 3;

interface Outcome {
  op: 'create' | 'delete';
  id: number;
  status: number;
  started: number;
  ended: number;
  detail: string;
}

/** Creates (and deletes every fourth plant it created) from a few loops per instance, recording every answer. */
class WriteLoad {
  readonly outcomes: Outcome[] = [];
  #running = true;
  #loops: Promise<void>[] = [];

  constructor(
    instances: ServerProcess[],
    private readonly token: string,
    private nextId: number,
  ) {
    for (const s of instances) for (let i = 0; i < WRITERS_PER_INSTANCE; i++) this.#loops.push(this.#loop(s.url));
  }

  async #request(op: Outcome['op'], id: number, url: string, init: Parameters<typeof httpRequest>[1]) {
    const started = performance.now();
    let status = 0;
    let detail = '';
    try {
      const res = await httpRequest(url, { ...init, token: this.token, timeoutMs: 20_000 });
      status = res.status;
      if (status === 503 && res.headers['retry-after'] === undefined) detail = 'a 503 without Retry-After';
      else if (status !== 200 && status !== 204 && status !== 503) detail = res.body.slice(0, 300);
    } catch (error) {
      detail = `no answer: ${(error as Error).message}`;
    }
    const outcome = { op, id, status, started, ended: performance.now(), detail };
    this.outcomes.push(outcome);
    return outcome;
  }

  async #loop(base: string): Promise<void> {
    while (this.#running) {
      const id = this.nextId++;
      const created = await this.#request('create', id, `${base}/plants`, {
        method: 'POST',
        json: { id, name: `p${id}` },
      });
      if (created.status === 200 && id % 4 === 0)
        await this.#request('delete', id, `${base}/plants/${id}`, { method: 'DELETE' });
      // Modest load: the machine is shared.
      await delay(created.status === 503 ? 50 : 5);
    }
  }

  get next(): number {
    return this.nextId;
  }

  successesStartedAfter(t: number): number {
    return this.outcomes.filter((o) => o.started > t && (o.status === 200 || o.status === 204)).length;
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }
}

/** Polls /readyz of each instance every 200 ms, counting 503s. */
class ReadinessWatch {
  unready = 0;
  #running = true;
  readonly #loops: Promise<void>[];

  constructor(instances: ServerProcess[]) {
    this.#loops = instances.map(async (s) => {
      while (this.#running) {
        const res = await httpRequest(`${s.url}/readyz`, { timeoutMs: 10_000 }).catch(() => undefined);
        if (res?.status === 503) this.unready++;
        await delay(200);
      }
    });
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
  }
}

interface Measure {
  writes: number;
  unavailable: number;
  /** First failed write answered to the first write started after it that succeeded; 0 when none failed. */
  gapMs: number;
  /** Longest time between two successful writes. */
  stallMs: number;
}

function measure(outcomes: Outcome[]): Measure {
  const ok = (o: Outcome) => o.status === 200 || o.status === 204;
  const byEnd = [...outcomes].sort((a, b) => a.ended - b.ended);
  const firstFail = byEnd.find((o) => !ok(o));
  let gapMs = 0;
  if (firstFail) {
    const back = byEnd.find((o) => ok(o) && o.started >= firstFail.ended);
    gapMs = back ? back.ended - firstFail.ended : Number.POSITIVE_INFINITY;
  }
  let stallMs = 0;
  const successes = byEnd.filter(ok);
  for (let i = 1; i < successes.length; i++) stallMs = Math.max(stallMs, successes[i]!.ended - successes[i - 1]!.ended);
  return {
    writes: outcomes.length,
    unavailable: outcomes.filter((o) => o.status === 503).length,
    gapMs: Math.round(gapMs),
    stallMs: Math.round(stallMs),
  };
}

/** Every answer a 2xx or a 503 with Retry-After; every acknowledged create there, every acknowledged delete gone. */
async function verify(load: WriteLoad, reader: ServerProcess, token: string): Promise<void> {
  const odd = load.outcomes.filter((o) => o.detail !== '');
  assert.deepEqual(
    odd.slice(0, 10).map((o) => `${o.op} ${o.id}: ${o.status} ${o.detail}`),
    [],
    `${odd.length} writes answered other than 2xx or 503 with Retry-After`,
  );
  const deleteOf = new Map(load.outcomes.filter((o) => o.op === 'delete').map((o) => [o.id, o.status]));
  const stored = new Set(await listAllNames(reader.url, token));
  const lost: number[] = [];
  const resurrected: number[] = [];
  for (const o of load.outcomes) {
    if (o.op !== 'create' || o.status !== 200) continue;
    const deleted = deleteOf.get(o.id);
    if (deleted === undefined && !stored.has(`p${o.id}`)) lost.push(o.id);
    if (deleted === 204 && stored.has(`p${o.id}`)) resurrected.push(o.id);
  }
  assert.deepEqual(lost, [], 'acknowledged creates missing after the failure');
  assert.deepEqual(resurrected, [], 'acknowledged deletes undone after the failure');
}

needs(missing, () => {
  describe('Plant Store on a three-node Patroni cluster', () => {
    let dir: string;
    let cluster: HaCluster;
    let bouncer: PgBouncer;
    let direct: ServerProcess;
    let pooled: ServerProcess;
    let token: string;
    let nextId = 1;

    before(
      async () => {
        dir = mkdtempSync(join(tmpdir(), 'plant-store-ha-'));
        // As root the cluster runs as the postgres user, who must reach it.
        chmodSync(dir, 0o755);
        cluster = await HaCluster.start(join(dir, 'cluster'));
        await cluster.waitHealthy();
        bouncer = await PgBouncer.start({ upstream: cluster.url, poolSize: 8 });
        token = await cliToken(cluster.url, 'ha-owner');
        [direct, pooled] = await Promise.all([
          startServer(serveArgs(cluster.url, '--workers', '2', '--pg-pool-size', '4'), { listeners: 2 }),
          startServer(serveArgs(bouncer.urlFor(cluster.url), '--pg-pooler', 'transaction', '--pg-pool-size', '4')),
        ]);
      },
      { timeout: 240_000 },
    );

    after(
      async () => {
        await stopGracefully(direct, pooled);
        await bouncer?.destroy();
        await cluster?.stop();
        if (dir) rmSync(dir, { recursive: true, force: true });
      },
      { timeout: 120_000 },
    );

    /** Runs write load across `fault`, then checks the answers and the data; returns the measures. */
    async function underLoad(name: string, fault: () => Promise<void> | void, healthyFirst = true): Promise<Measure> {
      if (healthyFirst) await cluster.waitHealthy();
      const load = new WriteLoad([direct, pooled], token, nextId);
      const readiness = new ReadinessWatch([direct, pooled]);
      try {
        const warm = performance.now();
        while (load.successesStartedAfter(warm) < 30) await delay(50);
        const faultAt = performance.now();
        await fault();
        // Back: writes started after the fault succeed again, on both instances' paths.
        // Back means 60 writes in a row succeeded after the last 503, across
        // both instances and every worker process.
        const deadline = faultAt + FAILOVER_BUDGET_MS + 10_000;
        let since = performance.now();
        while (load.successesStartedAfter(since) < 60) {
          assert.ok(
            performance.now() < deadline,
            `${name}: writes still failing ${Math.round(deadline - faultAt)} ms after the fault`,
          );
          if (load.outcomes.at(-1)?.status === 503) since = performance.now();
          await delay(100);
        }
        await delay(1000);
      } finally {
        await load.stop();
        await readiness.stop();
        nextId = load.next;
      }
      const m = measure(load.outcomes);
      console.log(`# ${name}: ${JSON.stringify({ ...m, readyz503: readiness.unready })}`);
      // An outage longer than a few polls shows in /readyz while it lasts, and is over after.
      if (m.gapMs > 2000) assert.ok(readiness.unready > 0, `${name}: /readyz never answered 503 during the outage`);
      for (const s of [direct, pooled]) assert.equal((await httpRequest(`${s.url}/readyz`)).status, 200);
      await verify(load, direct, token);
      assert.ok(m.gapMs < FAILOVER_BUDGET_MS, `${name}: writes were back only after ${m.gapMs} ms`);
      assert.ok(m.stallMs < FAILOVER_BUDGET_MS, `${name}: no write succeeded for ${m.stallMs} ms`);
      for (const s of [direct, pooled]) assert.equal(s.exited, false, 'the service process stayed up');
      return m;
    }

    it("the guide's `. cluster.env` then `$PATRONICTL list` lists the three nodes", async () => {
      const { stdout, stderr } = await runGuideEnvLines(cluster.dir);
      assert.equal(stderr, '');
      for (const node of ['node1', 'node2', 'node3']) assert.match(stdout, new RegExp(node));
    });

    it('kill -9 of the leader node (Patroni and PostgreSQL)', { timeout: CASE_TIMEOUT }, async () => {
      const leader = (await cluster.nodeWithRole('leader'))!;
      await underLoad('leader node killed', () => cluster.killNode(leader));
      assert.notEqual(await cluster.nodeWithRole('leader'), leader, 'another node leads');
      await cluster.startNode(leader);
      await cluster.waitHealthy();
    });

    it("kill -9 of the leader's PostgreSQL only (Patroni lives on)", { timeout: CASE_TIMEOUT }, async () => {
      const leader = (await cluster.nodeWithRole('leader'))!;
      await underLoad('leader PostgreSQL crashed', () => cluster.crashPostgres(leader));
      console.log(`# the leader was node${leader}; now node${await cluster.waitForRole('leader')}`);
    });

    it('a planned switchover (patronictl switchover)', { timeout: CASE_TIMEOUT }, async () => {
      await cluster.waitHealthy();
      const leader = (await cluster.nodeWithRole('leader'))!;
      // In synchronous mode only the synchronous standby may take over.
      const candidate = await cluster.waitForRole('sync_standby');
      await underLoad('switchover', () => cluster.switchover(leader, candidate));
      assert.equal(await cluster.nodeWithRole('leader'), candidate);
    });

    it(
      'kill -9 of the synchronous replica, then of the other one: writes continue',
      { timeout: CASE_TIMEOUT },
      async () => {
        await cluster.waitHealthy();
        const sync = await cluster.waitForRole('sync_standby');
        await underLoad('synchronous replica killed', () => cluster.killNode(sync));
        const other = await cluster.waitForRole('sync_standby');
        // synchronous_mode_strict is off: with no replica left, the primary
        // takes writes alone rather than refusing them.
        await underLoad('both replicas killed', () => cluster.killNode(other), false);
        await cluster.startNode(sync);
        await cluster.startNode(other);
        await cluster.waitHealthy();
      },
    );
  });
});
