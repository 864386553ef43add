// A PostgreSQL that stops taking writes, as a primary does when a failover or
// switchover demotes it: made here by setting default_transaction_read_only
// on the suite's database, so that every new connection is read-only. Writes
// must answer 503 with Retry-After (never 500), /readyz must report it, the
// metrics must count it, and once the database takes writes again they must
// resume with no restart: a connection that saw the refusal is dropped, never
// reused, so none stays on the read-only session.
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import { useApp } from '../helpers/app.js';
import { expectErrorBody, query, terminateServiceBackends } from '../helpers/pg.js';
import { describeOnStore, PG_URL } from '../helpers/stores.js';
import { registry } from '../../src/metrics/metrics.js';

const TIMEOUT = 30_000;

async function readOnlyCount(): Promise<number> {
  const metric = await registry.getSingleMetric('plant_store_db_unavailable_errors_total')!.get();
  return metric.values.find((v) => v.labels.reason === 'read_only')?.value ?? 0;
}

describeOnStore('postgres', 'a database that stops taking writes', (fx) => {
  const h = useApp(fx, { pgPoolSize: 3 });
  const database = () => new URL(fx.db).pathname.slice(1);

  describe('503 while it lasts, writes back by themselves after', () => {
    it(
      'answers 503 + Retry-After, reports it in /readyz and the metrics, and recovers without a restart',
      { timeout: TIMEOUT },
      async () => {
        const token = await h.token('ro-owner');
        const create = (id: number) =>
          h.request({ method: 'POST', url: '/plants', token, json: { id, name: `p${id}` } });
        assert.equal((await create(1)).statusCode, 200);
        const before = await readOnlyCount();

        await query(PG_URL, `ALTER DATABASE ${database()} SET default_transaction_read_only = on`);
        try {
          // The pool's connections were opened before: end them, as a demotion does.
          await terminateServiceBackends(fx.db);
          const statuses: number[] = [];
          for (let id = 100; id < 110; id++) {
            const res = await create(id);
            statuses.push(res.statusCode);
            expectErrorBody({ status: res.statusCode, headers: res.headers, body: res.body }, 503, `create ${id}`);
            assert.equal(res.headers['retry-after'], '1', `create ${id}: Retry-After`);
          }
          const ready = await h.request({ method: 'GET', url: '/readyz' });
          assert.equal(ready.statusCode, 503, `/readyz while read-only: ${ready.body}`);
          assert.ok((await readOnlyCount()) >= before + 10, 'every refused write is counted as read_only');
        } finally {
          await query(PG_URL, `ALTER DATABASE ${database()} RESET default_transaction_read_only`);
        }

        // No connection was kept on a read-only session, so the next ones take writes.
        const again = await create(2);
        assert.equal(again.statusCode, 200, again.body);
        assert.equal((await h.request({ method: 'GET', url: '/readyz' })).statusCode, 200);
        const list = await h.request({ method: 'GET', url: '/plants', token });
        assert.deepEqual(
          (JSON.parse(list.body) as { name: string }[]).map((p) => p.name),
          ['p1', 'p2'],
        );
      },
    );
  });
});
