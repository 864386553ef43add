// A worker for test/internals/cluster-ipc.test.ts: the real IPC pieces of
// `serve --workers` (the event word, the readiness question) in a process
// forked by a cluster primary, without a server. PLANTS_TEST_READY says what
// its /readyz answers ("silent": it never answers the question).
import { ClusterEventSignal } from '../../src/cli/cluster-events.js';
import { answerReadiness } from '../../src/cli/cluster-readiness.js';

const ready = process.env['PLANTS_TEST_READY'] ?? 'ready';
const signal = new ClusterEventSignal();
signal.start();
signal.listen(() => process.send?.({ test: 'heard' }));
if (ready !== 'silent') {
  answerReadiness({
    // What Fastify's inject gives for GET /readyz, as this worker would answer it.
    inject: (() =>
      Promise.resolve(
        ready === 'ready'
          ? { statusCode: 200, body: '{"status":"ready"}' }
          : { statusCode: 503, body: JSON.stringify({ error: 503, message: ready }) },
      )) as never,
  });
}
process.on('message', (message: { test?: string; times?: number }) => {
  if (message.test === 'announce') for (let i = 0; i < (message.times ?? 1); i++) signal.announce();
  if (message.test === 'close') void signal.close().then(() => process.disconnect());
});
process.send?.({ test: 'up' });
