// What an operator sees when stopping serve: a repeated signal does not cut
// the drain short unless it comes later, on purpose; a planned shutdown under
// load is one summary line, not a screen of errors.
import assert from 'node:assert/strict';
import net from 'node:net';
import { before, it } from '../helpers/requirements.js';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  cliToken,
  migrateWithCli,
  serveArgs,
  startServer,
  useProcessCleanup,
  type ServerProcess,
} from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';

const LIMIT = { timeout: 60_000 };

/**
 * A create whose body is still on its way: authenticated (the bearer check
 * runs before the body is read) and in flight until finish() sends the rest.
 */
async function halfSentCreate(server: ServerProcess, token: string, id: number) {
  const body = JSON.stringify({ id, name: 'Slow fern' });
  const socket = net.connect(server.port, '127.0.0.1');
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let response = '';
  socket.setEncoding('utf8').on('data', (d: string) => (response += d));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
  );
  // Let the server take the headers in and check the token.
  await sleep(300);
  return {
    /** Sends the rest of the body, and `more` (pipelined requests) behind it. */
    async finish(more = ''): Promise<string> {
      // write, not end: a half-closed connection would abort the request.
      // The server closes it after answering, since it is shutting down.
      socket.write(body.slice(5) + more);
      await closed;
      return response;
    },
    async closed(): Promise<string> {
      await closed;
      return response;
    },
  };
}

describeOnStore('sqlite', 'repeated shutdown signals', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it('copies of the signal arriving together do not cut the drain short', LIMIT, async () => {
    const token = await cliToken(fx.db, 'repeat');
    const server = await startServer(serveArgs(fx.db));
    const create = await halfSentCreate(server, token, 1);
    // What `timeout`, `npm start` and a terminal's process group deliver: the same request several times.
    server.kill('SIGTERM');
    server.kill('SIGTERM');
    server.kill('SIGINT');
    await server.waitForOutput((out) => /shutting down/.test(out));
    await sleep(1500);
    assert.equal(server.exited, false, `still draining:\n${server.stdout}`);
    // Signals pending together are handled in no set order: the hint names the one handled first.
    assert.match(
      server.stdout,
      /shutting down: finishing in-flight requests \((send SIGTERM|press Ctrl-C) again to force\)/,
    );
    const answer = await create.finish();
    assert.match(answer, /^HTTP\/1\.1 200 /, answer);
    assert.deepEqual(await server.waitExit(), { code: 0, signal: null });
    assert.doesNotMatch(server.stdout, /again: exiting now/);
  });

  it('Ctrl-C again, a second or more later, exits at once with 130', LIMIT, async () => {
    const token = await cliToken(fx.db, 'force');
    const server = await startServer(serveArgs(fx.db));
    const create = await halfSentCreate(server, token, 2);
    server.kill('SIGINT');
    await server.waitForOutput((out) => /press Ctrl-C again to force/.test(out));
    await sleep(1200);
    assert.equal(server.exited, false, 'draining, waiting for the half-sent request');
    const forcedAt = performance.now();
    server.kill('SIGINT');
    assert.deepEqual(await server.waitExit(5000), { code: 130, signal: null });
    assert.ok(performance.now() - forcedAt < 5000);
    assert.match(server.stdout, /SIGINT again: exiting now, without waiting for in-flight requests/);
    assert.doesNotMatch(await create.closed(), /^HTTP\/1\.1 200/, 'the unfinished request was not answered 200');
  });
});

describeOnStore('sqlite', 'planned shutdown with requests still arriving', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it('requests refused while draining are one info line, not errors with stacks', LIMIT, async () => {
    const token = await cliToken(fx.db, 'busy');
    const server = await startServer(serveArgs(fx.db));
    // Connections with a create in flight stay open through the drain; each
    // then sends the rest of its body and, pipelined behind it, one more
    // request, which arrives while the server closes. The create's answer
    // says Connection: close, so the request behind it is refused unanswered
    // (RFC 9112 9.6); a client sends it again elsewhere.
    const creates = await Promise.all([10, 11, 12, 13, 14].map((id) => halfSentCreate(server, token, id)));
    server.kill('SIGTERM');
    await server.waitForOutput((out) => /shutting down/.test(out));
    const answers = await Promise.all(
      creates.map((c) => c.finish(`GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`)),
    );
    assert.deepEqual(await server.waitExit(), { code: 0, signal: null });

    for (const answer of answers) {
      const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
      assert.deepEqual(statuses, [200], `the create is answered, and nothing after it:\n${answer}`);
      assert.match(answer, /\r\nConnection: close\r\n/i, answer);
    }
    assert.deepEqual(
      // A busy machine may make a request slow, and that has a warning of its own.
      server.logLines().filter((l) => (l.level as number) >= 40 && l.msg !== 'slow request'),
      [],
      'no warning or error lines',
    );
    assert.doesNotMatch(server.stdout, /"stack"/);
    const summary = server.logLines().filter((l) => /while shutting down/.test(String(l.msg)));
    assert.equal(summary.length, 1, `one summary line:\n${server.stdout}`);
    assert.equal(summary[0]!.level, 30, 'at info');
    assert.equal(summary[0]!.refused, creates.length, 'it counts the refused requests');
    assert.equal(summary[0]!.msg, `refused ${creates.length} requests while shutting down`);
    assert.equal(
      server.logLines().filter((l) => l.statusCode === 503).length,
      0,
      'no request line per refused request',
    );
  });
});
