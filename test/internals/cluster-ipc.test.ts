// The IPC of `serve --workers`, with a real cluster primary (this process)
// and forked workers: a worker's word after a write reaches every other
// worker and not itself, and the primary's readiness question gets each
// worker's own answer, or a timeout.
import assert from 'node:assert/strict';
import cluster, { type Worker } from 'node:cluster';
import { fileURLToPath } from 'node:url';
import { relayEventWords } from '../../src/cli/cluster-events.js';
import { workersNotReady } from '../../src/cli/cluster-readiness.js';
import { after, describe, it } from '../helpers/requirements.js';

const WORKER = fileURLToPath(new URL('../helpers/cluster-ipc-worker.js', import.meta.url));

function fork(ready = 'ready'): Promise<Worker> {
  cluster.setupPrimary({ exec: WORKER, execArgv: process.execArgv, silent: true });
  const worker = cluster.fork({ PLANTS_TEST_READY: ready });
  return new Promise((resolve, reject) => {
    worker.once('message', (m: { test?: string }) =>
      m.test === 'up' ? resolve(worker) : reject(new Error(String(m))),
    );
    worker.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}

/** The words each worker heard, counted as they come. */
function hearing(workers: Worker[]): number[] {
  const heard = workers.map(() => 0);
  workers.forEach((w, i) => w.on('message', (m: { test?: string }) => m.test === 'heard' && heard[i]!++));
  return heard;
}

const settle = () => new Promise((r) => setTimeout(r, 200));

describe('serve --workers over IPC', () => {
  const workers: Worker[] = [];
  after(() => {
    for (const w of workers) w.process.kill('SIGKILL');
  });

  it("passes a worker's word on to every other worker, once per turn of its event loop, not back to itself", async () => {
    workers.push(...(await Promise.all([fork(), fork(), fork()])));
    const stop = relayEventWords(workers);
    try {
      const heard = hearing(workers);
      // Three writes answered in one turn are one word.
      workers[0]!.send({ test: 'announce', times: 3 });
      await settle();
      assert.deepEqual(heard, [0, 1, 1]);
      workers[2]!.send({ test: 'announce' });
      await settle();
      assert.deepEqual(heard, [1, 2, 1]);
    } finally {
      stop();
    }
    // Relaying stopped: nothing passes on.
    const heard = hearing(workers);
    workers[0]!.send({ test: 'announce' });
    await settle();
    assert.deepEqual(heard, [0, 0, 0]);
  });

  it('asks every worker whether it is ready, naming the first that is not', async () => {
    const ready = await Promise.all([fork(), fork()]);
    const full = await fork('the disk is full');
    workers.push(...ready, full);
    assert.equal(await workersNotReady(ready), undefined);
    assert.equal(await workersNotReady([...ready, full]), 'worker 3: the disk is full');
  });

  it('counts a worker that does not answer in time, or has gone, as not ready', async () => {
    const silent = await fork('silent');
    workers.push(silent);
    assert.equal(await workersNotReady([silent], 150), 'worker 1 did not answer within 150 ms');
    silent.disconnect();
    await new Promise((r) => silent.once('exit', r));
    assert.equal(await workersNotReady([silent], 150), 'worker 1 is not connected');
  });
});
