// List page reuse as deployed: server processes on one SQLite file (two
// `serve`s, and `serve --workers 2`). A page a process keeps must not outlive
// a write another process acknowledged, also while the process's own writer
// thread keeps committing.
import assert from 'node:assert/strict';
import { before, it } from '../helpers/requirements.js';
import {
  cliToken,
  httpRequest,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  useProcessCleanup,
  type ServerProcess,
} from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';

const TIMEOUT = 60_000;

describeOnStore('sqlite', 'list page reuse across server processes', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  const names = async (s: ServerProcess, token: string): Promise<string[]> => {
    const res = await httpRequest(`${s.url}/plants?limit=1000`, { token, timeoutMs: 10_000 });
    assert.equal(res.status, 200, res.body);
    return (JSON.parse(res.body) as { name: string }[]).map((p) => p.name);
  };
  const create = async (s: ServerProcess, token: string, id: number, name: string) => {
    const res = await httpRequest(`${s.url}/plants`, { method: 'POST', token, json: { id, name }, timeoutMs: 10_000 });
    assert.equal(res.status, 200, res.body);
  };

  it("two servers: one sees the other's creates at once while it writes too", { timeout: TIMEOUT }, async () => {
    const token = await cliToken(fx.db, 'two-servers');
    const busy = await cliToken(fx.db, 'two-servers-busy');
    const a = await startServer(serveArgs(fx.db));
    const b = await startServer(serveArgs(fx.db));
    let stop = false;
    let written = 0;
    // b's own commits keep changing what SQLite reports to it, alongside a's.
    const flow = (async () => {
      for (let id = 1; !stop; id++, written++) await create(b, busy, id, `b${id}`);
    })();
    try {
      for (let i = 1; i <= 10; i++) {
        const before = await names(b, token);
        assert.deepEqual(await names(b, token), before, 'the same page twice');
        await create(a, token, i, `x${i}`);
        assert.deepEqual(await names(b, token), [...before, `x${i}`], `after create ${i}`);
      }
    } finally {
      stop = true;
      await flow;
      await stopGracefully(a, b);
    }
    assert.ok(written > 0, 'the other owner wrote meanwhile');
  });

  it('--workers 2: every answer after a create holds it', { timeout: TIMEOUT }, async () => {
    const token = await cliToken(fx.db, 'workers');
    const server = await startServer(serveArgs(fx.db, '--workers', '2'), { listeners: 2 });
    try {
      const expected: string[] = [];
      for (let i = 1; i <= 10; i++) {
        // Both workers read (and may keep) the page before the create, and after it.
        for (let k = 0; k < 3; k++) assert.deepEqual(await names(server, token), expected, `before create ${i}`);
        await create(server, token, i, `w${i}`);
        expected.push(`w${i}`);
        for (let k = 0; k < 3; k++) assert.deepEqual(await names(server, token), expected, `after create ${i}`);
      }
    } finally {
      await stopGracefully(server);
    }
  });
});
