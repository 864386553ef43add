// A token revoked with the CLI is refused by every running server within 1 s:
// two servers on one store (in this process, each with its own token cache),
// the revoking CLI as a process of its own.
import assert from 'node:assert/strict';
import { before, it } from '../helpers/requirements.js';
import {
  delay,
  httpRequest,
  migrateWithCli,
  runCli,
  serveArgs,
  useProcessCleanup,
  type ServerProcess,
} from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { runCliInProcess } from '../helpers/cli.js';
import { describeEachStore } from '../helpers/stores.js';

const POLL_MS = 50;
const DEADLINE_MS = 1000;

async function createToken(db: string, owner: string): Promise<{ token: string; id: string }> {
  const r = await runCliInProcess(['token', 'create', '--owner', owner, '--db', db]);
  assert.equal(r.code, 0, r.stderr);
  return { token: r.stdout.trim(), id: /tok_[0-9a-f]+/.exec(r.stderr)![0] };
}

const isInvalidToken = (res: { status: number; headers: Record<string, unknown> }) =>
  res.status === 401 && String(res.headers['www-authenticate'] ?? '').includes('error="invalid_token"');

/** Revokes with the CLI while both servers keep using the token, then times how long each takes to refuse it. */
async function revokeAndTime(db: string, servers: ServerProcess[], token: string, target: string): Promise<number[]> {
  // Keep the token hot in every server's cache while the CLI runs.
  let cliDone = false;
  const warm = (async () => {
    while (!cliDone) {
      await Promise.all(servers.map((s) => httpRequest(`${s.url}/plants?limit=1`, { token }).catch(() => undefined)));
      await delay(POLL_MS);
    }
  })();
  const revoke = await runCli(['token', 'revoke', target, '--db', db]).finally(() => {
    cliDone = true;
  });
  await warm;
  assert.equal(revoke.code, 0, `token revoke: ${revoke.stderr}`);
  const deadline = revoke.exitedAt + DEADLINE_MS;

  return Promise.all(
    servers.map(async (s, i) => {
      let last = '';
      for (;;) {
        const res = await httpRequest(`${s.url}/plants?limit=1`, { token });
        const at = performance.now();
        if (isInvalidToken(res)) return Math.round(at - revoke.exitedAt);
        last = `${res.status} ${String(res.headers['www-authenticate'] ?? '')}`;
        if (at >= deadline)
          assert.fail(
            `server ${i + 1} still answers ${last} ${Math.round(at - revoke.exitedAt)} ms after token revoke exited`,
          );
        await delay(POLL_MS);
      }
    }),
  );
}

describeEachStore('revocation across processes', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  // two servers on the same store (for SQLite: the same file), on different ports
  const start = async (): Promise<ServerProcess[]> => {
    const servers = [await serveInProcess(serveArgs(fx.db)), await serveInProcess(serveArgs(fx.db))];
    assert.notEqual(servers[0]!.port, servers[1]!.port);
    return servers;
  };
  const stopAll = async (servers: ServerProcess[]) => {
    for (const s of servers) s.kill('SIGTERM');
    for (const s of servers) assert.deepEqual(await s.waitExit(), { code: 0, signal: null });
  };

  it('a token revoked by value is refused by both servers within 1 s', { timeout: 30_000 }, async (t) => {
    const victim = await createToken(fx.db, 'rev-a');
    const bystander = await createToken(fx.db, 'rev-a');
    const [a, b] = await start();
    for (const s of [a!, b!]) {
      for (const tok of [victim.token, bystander.token])
        assert.equal((await httpRequest(`${s.url}/plants`, { token: tok })).status, 200, 'works before');
    }
    const created = await httpRequest(`${a!.url}/plants`, {
      method: 'POST',
      token: victim.token,
      json: { id: 1, name: 'before-revoke' },
    });
    assert.equal(created.status, 200);

    const times = await revokeAndTime(fx.db, [a!, b!], victim.token, victim.token);
    t.diagnostic(`revoke by token [${fx.kind}]: refused after ${times.join(' ms and ')} ms`);

    for (const s of [a!, b!]) {
      const read = await httpRequest(`${s.url}/plants`, { token: victim.token });
      assert.ok(isInvalidToken(read), `stays refused: ${read.status}`);
      const write = await httpRequest(`${s.url}/plants`, {
        method: 'POST',
        token: victim.token,
        json: { id: 2, name: 'after-revoke' },
      });
      assert.ok(isInvalidToken(write), `writes refused too: ${write.status}`);
      assert.deepEqual(JSON.parse(write.body), { error: 401, message: JSON.parse(write.body).message });
      const other = await httpRequest(`${s.url}/plants`, { token: bystander.token });
      assert.equal(other.status, 200, 'another token of the same owner still works');
      assert.deepEqual(
        JSON.parse(other.body),
        [{ name: 'before-revoke' }],
        'the revoked token wrote nothing after revocation',
      );
    }
    await stopAll([a!, b!]);
  });

  it('a token revoked by id is refused by both servers within 1 s', { timeout: 30_000 }, async (t) => {
    const victim = await createToken(fx.db, 'rev-b');
    const bystander = await createToken(fx.db, 'rev-c');
    const [a, b] = await start();
    for (const s of [a!, b!])
      assert.equal((await httpRequest(`${s.url}/plants`, { token: victim.token })).status, 200, 'works before');

    const times = await revokeAndTime(fx.db, [a!, b!], victim.token, victim.id);
    t.diagnostic(`revoke by id [${fx.kind}]: refused after ${times.join(' ms and ')} ms`);

    for (const s of [a!, b!]) {
      assert.equal(
        (await httpRequest(`${s.url}/plants`, { token: bystander.token })).status,
        200,
        'other tokens unaffected',
      );
    }
    await stopAll([a!, b!]);
  });
});
