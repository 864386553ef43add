// A server keeps the PostgreSQL connections it opened while idle, so a burst
// after a lull opens none: waited for in real time, past pg's 10 s idle timeout.
import assert from 'node:assert/strict';
import { it } from '../helpers/requirements.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { cliToken, httpRequest, serveArgs, stopGracefully } from '../helpers/server.js';
import { serviceBackends } from '../helpers/pg.js';
import { describeOnStore } from '../helpers/stores.js';

describeOnStore('postgres', 'PostgreSQL connections while idle', (fx) => {
  it('keeps its connections open while idle, so a burst after a lull opens none', { timeout: 60_000 }, async () => {
    const token = await cliToken(fx.db, 'lull');
    const server = await serveInProcess(serveArgs(fx.db, '--pg-pool-size', '4'));
    const burst = async () => {
      const answers = await Promise.all(
        Array.from({ length: 16 }, () => httpRequest(`${server.url}/plants?limit=5`, { token })),
      );
      for (const res of answers) assert.equal(res.status, 200, res.body);
    };
    try {
      await burst();
      const before = await serviceBackends(fx.db);
      assert.ok(before.length > 0, 'the server talked to PostgreSQL');
      // Longer than the 10 s after which pg closes an idle connection by default.
      await new Promise((r) => setTimeout(r, 11_000));
      assert.deepEqual(await serviceBackends(fx.db), before, 'connections closed while idle');
      await burst();
      const after = await serviceBackends(fx.db);
      for (const pid of before) assert.ok(after.includes(pid), `connection ${pid} was replaced`);
    } finally {
      await stopGracefully(server);
    }
  });
});
