// PostgreSQL stopped and started under load, on a private cluster: while it
// is down, answers are 503 with the Error body (never a 500 or a hang); the
// service recovers by itself; and every create acknowledged with 200,
// before, during or after the outage, is in the database at the end.
import assert from 'node:assert/strict';
import pg from 'pg';
import { PrivateCluster, privateClusterProblem } from '../helpers/pg-cluster.js';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import { cliToken, delay, serveArgs, startServer, stopGracefully, type ServerProcess } from '../helpers/server.js';

const noCluster = await requirement('a private PostgreSQL cluster', () => {
  const problem = privateClusterProblem();
  if (problem) throw new Error(problem);
});

async function create(url: string, token: string, id: bigint): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`${url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: `{"id":${id},"name":"p${id}"}`,
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: await res.text() };
  } catch (error) {
    return { status: -1, body: (error as Error).message };
  }
}

needs(noCluster, () => {
  /** A failure here is often the service exiting: say so, with what it wrote last. */
  async function withServerOutput(server: ServerProcess, body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (error) {
      // The port refuses a moment before the process is seen to exit.
      if (!server.exited) await server.waitExit(2000).catch(() => {});
      if (!server.exited) throw error;
      const tail = (text: string) => text.slice(-4000);
      throw new Error(
        `${(error as Error).message}\nthe service exited; stdout tail:\n${tail(server.stdout)}\nstderr tail:\n${tail(server.stderr)}`,
        { cause: error },
      );
    }
  }

  describe('PostgreSQL stopped and started mid-load', () => {
    let cluster: PrivateCluster;
    let server: ServerProcess;
    let token: string;

    before(async () => {
      cluster = await PrivateCluster.create();
      token = await cliToken(cluster.url, 'faults');
      server = await startServer(serveArgs(cluster.url, '--pg-pool-size', '4'));
    });
    after(async () => {
      await stopGracefully(server);
      await cluster?.destroy();
    });

    for (const mode of ['fast', 'immediate'] as const) {
      it(`loses no acknowledged create when PostgreSQL stops (${mode}) and comes back`, (t) =>
        withServerOutput(server, () => outage(t)));

      async function outage(t: { diagnostic(message: string): void }): Promise<void> {
        const acked: bigint[] = [];
        const statuses = new Map<number, number>();
        const odd: string[] = [];
        let stop = false;
        let next = (mode === 'fast' ? 0n : 10n ** 12n) + 2n ** 53n;
        const writers = Array.from({ length: 8 }, async () => {
          while (!stop) {
            const id = next++;
            const res = await create(server.url, token, id);
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (res.status === 200) acked.push(id);
            else if (res.status === 503) assert.deepEqual(Object.keys(JSON.parse(res.body)), ['error', 'message']);
            else odd.push(`${res.status}: ${res.body}`);
          }
        });
        await delay(1000);
        const beforeOutage = acked.length;
        await cluster.stop(mode);
        await delay(1500);
        const ready = await fetch(`${server.url}/readyz`);
        assert.equal(ready.status, 503, 'not ready while PostgreSQL is down');
        await cluster.start();
        // Recovery by itself: creates succeed again within a few seconds.
        const restarted = acked.length;
        for (let i = 0; i < 100 && acked.length < restarted + 50; i++) await delay(100);
        stop = true;
        await Promise.all(writers);
        assert.deepEqual(odd, [], 'only 200 and 503 answers');
        assert.ok(beforeOutage > 0 && acked.length >= restarted + 50, `recovered: ${JSON.stringify([...statuses])}`);
        assert.ok((statuses.get(503) ?? 0) > 0, 'the outage was seen as 503s');
        assert.equal((await fetch(`${server.url}/readyz`)).status, 200);

        const client = new pg.Client({ connectionString: cluster.url });
        await client.connect();
        try {
          const { rows } = await client.query<{ id: string }>('SELECT id::text FROM plants WHERE owner = $1', [
            'faults',
          ]);
          const stored = new Set(rows.map((r) => BigInt(r.id)));
          const lost = acked.filter((id) => !stored.has(id));
          assert.deepEqual(lost, [], `${lost.length} of ${acked.length} acknowledged creates lost`);
          t.diagnostic(
            `answers ${JSON.stringify(Object.fromEntries(statuses))}; ${acked.length} acknowledged, all stored`,
          );
        } finally {
          await client.end();
        }
      }
    }
  });
});
