// kill -9 while large batches are being written, on every store: after a
// restart each batch is there whole or not at all, and every batch answered
// 200 is there whole.
import assert from 'node:assert/strict';
import { before, it } from '../helpers/requirements.js';
import { eventually } from '../helpers/eventually.js';
import { runLoad, stop } from '../helpers/process-load.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import {
  cliToken,
  delay,
  httpRequest,
  listAllNames,
  migrateWithCli,
  serveArgs,
  startServer,
  useProcessCleanup,
} from '../helpers/server.js';
import { describeEachStore } from '../helpers/stores.js';

const BATCH = 1000;
// Long names make each batch's transaction longer, so that the kill lands inside one.
const NAME_PAD = 'n'.repeat(200);

describeEachStore('kill -9 in the middle of batches', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it('each batch is stored whole or not at all, and every 200 whole', { timeout: 90_000 }, async (t) => {
    const token = await cliToken(fx.db, 'crash-batch');
    const server = await startServer(serveArgs(fx.db));
    let next = 0;
    const load = runLoad({
      clients: 4,
      nextId: () => next++,
      send: (batch, reqId, agent, onFlushed) =>
        httpRequest(`${server.url}/plants`, {
          method: 'POST',
          json: Array.from({ length: BATCH }, (_, i) => ({
            id: batch * BATCH + i,
            name: `b${batch}-${i}-${NAME_PAD}`,
          })),
          token,
          agent,
          onFlushed,
          headers: { 'x-request-id': reqId },
          timeoutMs: 20_000,
        }),
      maxMs: 30_000,
    });
    await delay(500);
    await eventually(() => load.acked(200) >= 3, 20_000, { stepMs: 5, what: '3 acknowledged batches' });
    // Kill while a batch is on its way in, as soon as one is.
    await eventually(() => load.inFlight() > 0, 5_000, { stepMs: 1, what: 'a batch in flight' });
    const inFlight = load.inFlight();
    server.kill('SIGKILL');
    await load.done;
    assert.deepEqual(await server.waitExit(), { code: null, signal: 'SIGKILL' });

    const acked = load.outcomes.filter((o) => o.status === 200).map((o) => o.id);
    assert.deepEqual(
      load.outcomes.filter((o) => o.error === undefined && o.status !== 200).map((o) => `${o.id}: ${o.status}`),
      [],
      'every answer before the kill was 200',
    );
    const restarted = await serveInProcess(serveArgs(fx.db));
    const names = await listAllNames(restarted.url, token, 1000, 1000);
    await stop(restarted);
    const perBatch = new Map<number, number>();
    for (const name of names) {
      const batch = Number(/^b(\d+)-/.exec(name)![1]);
      perBatch.set(batch, (perBatch.get(batch) ?? 0) + 1);
    }
    const partial = [...perBatch].filter(([, n]) => n !== BATCH);
    assert.deepEqual(partial, [], 'batches stored in part');
    const lost = acked.filter((b) => perBatch.get(b) !== BATCH);
    assert.deepEqual(lost, [], 'acknowledged batches lost');
    const attempted = load.outcomes.length;
    t.diagnostic(
      `kill -9 batches [${fx.kind}]: ${acked.length} acknowledged, ${inFlight} in flight at the kill, ` +
        `${perBatch.size} of ${attempted} attempted stored whole after the restart, none in part`,
    );
  });
});
