// Whole-process behaviour: acknowledged writes survive kill -9, SIGTERM drains
// in-flight requests and exits 0, and serve --workers runs a cluster. The same
// kill -9 under --durability normal is in test/slow/kill-durability-normal.test.ts.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { before, it } from '../helpers/requirements.js';
import { runCliInProcess } from '../helpers/cli.js';
import {
  cliToken,
  delay,
  httpRequest,
  listAllNames,
  migrateWithCli,
  serveArgs,
  startServer,
  tokensIn,
  useProcessCleanup,
} from '../helpers/server.js';
import { createVia, deleteVia, killDuringCreates, runLoad, SOCKET_ERRORS, stop } from '../helpers/process-load.js';
import { eventually } from '../helpers/eventually.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { describeEachStore } from '../helpers/stores.js';

describeEachStore('kill -9 durability (default durability)', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it('every create acknowledged with 200 is there after kill -9 and a restart', { timeout: 30_000 }, (t) =>
    killDuringCreates(t, fx, []),
  );

  it('every delete acknowledged with 204 stays deleted after kill -9 and a restart', { timeout: 30_000 }, async (t) => {
    const token = await cliToken(fx.db, 'crash-delete');
    // seed, with plant-store import: enough plants that the deletes are still running at the kill
    const total = 1200;
    const dump = [
      JSON.stringify({ type: 'plant-store-export', version: 1 }),
      ...Array.from({ length: total }, (_, i) =>
        JSON.stringify({ type: 'plant', owner: 'crash-delete', id: i + 1, name: `p-${i + 1}`, tag: 'load' }),
      ),
    ].join('\n');
    const seeded = await runCliInProcess(['import', '--db', fx.db], {}, `${dump}\n`);
    assert.match(seeded.stderr, new RegExp(`0 tokens and ${total} plants were new`), 'seeding created every plant');
    const server = await startServer(serveArgs(fx.db));

    let next = 1;
    const load = runLoad({
      clients: 16,
      nextId: () => (next <= total ? next++ : undefined),
      send: deleteVia(server.url, token),
      maxMs: 15_000,
    });
    // kill mid-load: after 1.5 s, or once a third of the plants are deleted if that comes first
    const started = performance.now();
    await eventually(() => load.acked(204) >= total / 3 || performance.now() - started >= 1500, 10_000, {
      stepMs: 10,
      what: 'deletes to be acknowledged',
    });
    const inFlight = load.inFlight();
    server.kill('SIGKILL');
    await load.done;
    assert.deepEqual(await server.waitExit(), { code: null, signal: 'SIGKILL' });

    const deleted = load.outcomes.filter((o) => o.status === 204).map((o) => o.id);
    const attempted = new Set(load.outcomes.map((o) => o.id));
    assert.ok(inFlight > 0, 'deletes were in flight when the process was killed');
    assert.ok(deleted.length >= 50, `enough deletes before the kill: ${deleted.length}`);
    assert.ok(attempted.size < total, 'the kill came before every plant was deleted');
    assert.deepEqual(
      load.outcomes
        .filter((o) => o.error === undefined && o.status !== 204)
        .map((o) => `${o.id}: ${o.status} ${o.body}`),
      [],
      'every answer before the kill was 204',
    );

    const restarted = await serveInProcess(serveArgs(fx.db));
    const present = new Set(await listAllNames(restarted.url, token));
    await stop(restarted);
    const resurrected = deleted.filter((id) => present.has(`p-${id}`));
    assert.deepEqual(
      resurrected,
      [],
      `acknowledged deletes undone by kill -9 (${resurrected.length} of ${deleted.length})`,
    );
    const untouched = Array.from({ length: total }, (_, i) => i + 1).filter((id) => !attempted.has(id));
    assert.deepEqual(
      untouched.filter((id) => !present.has(`p-${id}`)),
      [],
      'plants nobody deleted are still there',
    );
    t.diagnostic(
      `kill -9 deletes [${fx.kind}]: ${deleted.length} acknowledged, ${inFlight} in flight at the kill, ${present.size} left of ${total}`,
    );
  });
});

describeEachStore('graceful shutdown', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it(
    'SIGTERM under load: in-flight requests complete, acknowledged creates persist, exit 0',
    { timeout: 30_000 },
    async (t) => {
      const token = await cliToken(fx.db, 'drain');
      const server = await startServer(serveArgs(fx.db, '--access-log', '--trust-request-id'));
      let next = 1;
      const load = runLoad({
        clients: 200,
        nextId: () => next++,
        send: createVia(server.url, token),
        maxMs: 15_000,
      });
      await eventually(() => load.acked(200) >= 200, 10_000, { stepMs: 10, what: 'the load to get going' });
      const inFlight = load.inFlight();
      const termAt = performance.now();
      server.kill('SIGTERM');
      const exit = await server.waitExit(20_000);
      const exitedAt = performance.now();
      await load.done;

      assert.deepEqual(exit, { code: 0, signal: null }, `exit after SIGTERM\n${server.stderr}`);
      if (fx.kind === 'sqlite') {
        // SQLite checkpoints and removes the WAL when the last connection closes cleanly
        assert.equal(existsSync(`${fx.db}-wal`), false, 'the store was closed');
      }
      assert.ok(inFlight > 0, 'requests were in flight at SIGTERM');

      const answered = load.outcomes.filter((o) => o.status !== undefined);
      assert.deepEqual(
        answered.filter((o) => o.status !== 200 && o.status !== 503).map((o) => `${o.reqId}: ${o.status} ${o.body}`),
        [],
        'every answer is 200, or 503 while shutting down',
      );
      const early503 = answered.filter((o) => o.status === 503 && o.doneAt < termAt);
      assert.deepEqual(
        early503.map((o) => o.reqId),
        [],
        '503 only after SIGTERM',
      );
      for (const o of answered.filter((x) => x.status === 503)) {
        const body = JSON.parse(o.body!) as { error: unknown; message: unknown };
        assert.equal(body.error, 503, `503 body has the Error shape: ${o.body}`);
        assert.equal(typeof body.message, 'string');
      }
      const errors = load.outcomes.filter((o) => o.error !== undefined);
      assert.deepEqual(
        errors.filter((o) => !SOCKET_ERRORS.has(o.error!) || o.doneAt < termAt).map((o) => `${o.reqId}: ${o.error}`),
        [],
        'the only failures are closed or refused connections after SIGTERM',
      );
      // A request written before SIGTERM on a connection the server had already accepted (and served)
      // reached the server before closing began: it must get an answer, not a reset. (A first request on
      // a brand-new connection may still sit in the accept backlog, which closing the listener resets.)
      assert.deepEqual(
        errors.filter((o) => o.reused && o.flushedAt > 0 && o.flushedAt < termAt).map((o) => `${o.reqId}: ${o.error}`),
        [],
        'no reset for requests that reached an accepted connection before SIGTERM',
      );

      // What the server logged as answered, the client received: no accepted request was cut off.
      const logged = new Map<string, number>();
      for (const line of server.logLines()) {
        if (typeof line.reqId === 'string' && typeof line.statusCode === 'number')
          logged.set(line.reqId, line.statusCode);
      }
      const cutOff = errors
        .filter((o) => logged.has(o.reqId))
        .map((o) => `${o.reqId}: server answered ${logged.get(o.reqId)}, client got ${o.error}`);
      assert.deepEqual(cutOff, [], 'requests the server answered reached the client');
      const acked = load.outcomes.filter((o) => o.status === 200);
      assert.deepEqual(
        acked.filter((o) => logged.get(o.reqId) !== 200).map((o) => o.reqId),
        [],
        'every 200 the client got is in the server log',
      );

      const restarted = await serveInProcess(serveArgs(fx.db));
      const present = new Set(await listAllNames(restarted.url, token));
      await stop(restarted);
      const lost = acked.filter((o) => !present.has(`p-${o.id}`)).map((o) => o.id);
      assert.deepEqual(lost, [], 'acknowledged creates are all there after the restart');
      const early = errors.filter((o) => o.flushedAt > 0 && o.flushedAt < termAt);
      t.diagnostic(
        `drain [${fx.kind}]: ${acked.length} x 200, ${answered.length - acked.length} x 503, ${errors.length} socket errors, ` +
          `${inFlight} in flight at SIGTERM, exit ${Math.round(exitedAt - termAt)} ms after SIGTERM; ` +
          `socket errors on requests fully written before SIGTERM: ${early.length} ` +
          `(${early.filter((o) => o.reused).length} on kept-alive connections, ${early.filter((o) => !o.reused).length} on new ones; ` +
          `earliest written ${Math.round(Math.max(0, ...early.map((o) => termAt - o.flushedAt)))} ms before SIGTERM; ` +
          `codes ${[...new Set(errors.map((o) => o.error))].join(',')}); ` +
          `503s for requests written before SIGTERM: ${answered.filter((o) => o.status === 503 && o.flushedAt < termAt).length}`,
      );
    },
  );

  it(
    'SIGTERM: new connections are refused, a request in flight completes, one that arrives during shutdown gets the 503 Error body',
    { timeout: 30_000 },
    async (t) => {
      const token = await cliToken(fx.db, 'drain-raw');
      const server = await startServer(serveArgs(fx.db));
      const connect = async () => {
        const socket = net.connect(server.port, '127.0.0.1');
        const c = { socket, received: '', closed: false };
        socket.setEncoding('utf8').on('data', (d: string) => (c.received += d));
        socket.on('close', () => (c.closed = true));
        socket.on('error', () => {});
        await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
        return c;
      };
      const a = await connect();
      const b = await connect();
      const body = JSON.stringify({ id: 4242, name: 'in-flight' });
      // A: headers and half the body; the handler waits for the rest
      a.socket.write(
        `POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: raw-a\r\n\r\n${body.slice(0, 10)}`,
      );
      // B: the start of a request, its headers unfinished
      b.socket.write('GET /plants HTTP/1.1\r\nHost: 127.0.0.1\r\n');
      await delay(200);
      const termAt = performance.now();
      server.kill('SIGTERM');
      await server.waitForOutput((out) => out.includes('shutting down'), 10_000);
      await delay(100);
      assert.equal(server.exited, false, 'the server waits for the request in flight');
      await assert.rejects(
        httpRequest(`${server.url}/healthz`, { timeoutMs: 5000 }),
        { code: 'ECONNREFUSED' },
        'no new connections are accepted',
      );

      a.socket.write(body.slice(10));
      b.socket.write(`Authorization: Bearer ${token}\r\nX-Request-Id: raw-b\r\n\r\n`);
      const exit = await server.waitExit(15_000);
      await eventually(() => a.closed && b.closed, 5000, { stepMs: 10, what: 'the server to close both connections' });
      assert.deepEqual(exit, { code: 0, signal: null });
      t.diagnostic(`raw drain [${fx.kind}]: exit ${Math.round(performance.now() - termAt)} ms after SIGTERM`);

      const split = (raw: string) => {
        const [head, ...rest] = raw.split('\r\n\r\n');
        return { head: head!, body: rest.join('\r\n\r\n') };
      };
      const ra = split(a.received);
      assert.match(ra.head, /^HTTP\/1\.1 200 /, `the request in flight completes:\n${a.received}`);
      // Its connection closes after the answer: the answer must not invite another request.
      assert.match(ra.head, /\r\nconnection: close(\r\n|$)/i, ra.head);
      assert.doesNotMatch(ra.head, /keep-alive/i, ra.head);
      assert.equal(ra.body, JSON.stringify({ name: 'in-flight' }));
      const rb = split(b.received);
      assert.match(rb.head, /^HTTP\/1\.1 503 /, `the request that arrived during shutdown:\n${b.received}`);
      assert.match(rb.head, /\r\nconnection: close\r\n/i);
      assert.match(rb.head, /\r\ncontent-type: application\/json/i);
      const errorBody = JSON.parse(rb.body) as Record<string, unknown>;
      assert.deepEqual(Object.keys(errorBody).sort(), ['error', 'message']);
      assert.equal(errorBody.error, 503);
      assert.equal(typeof errorBody.message, 'string');

      const restarted = await serveInProcess(serveArgs(fx.db));
      assert.deepEqual(await listAllNames(restarted.url, token), ['in-flight'], 'the request in flight was stored');
      await stop(restarted);
    },
  );
});

describeEachStore('serve --workers 2', (fx) => {
  useProcessCleanup();
  before(() => migrateWithCli(fx.db));

  it('prints the bootstrap token once with a curl example that reaches the cluster', { timeout: 30_000 }, async () => {
    const server = await startServer(serveArgs(fx.db, '--workers', '2'), { listeners: 2 });
    await server.waitForOutput((_, err) => /curl/.test(err), 10_000);
    const tokens = tokensIn(server.stderr);
    assert.ok(tokens.length > 0, `a bootstrap token on stderr:\n${server.stderr}`);
    assert.ok(
      tokens.every((t) => t === tokens[0]),
      'one token',
    );
    const token = tokens[0]!;
    assert.equal((await httpRequest(`${server.url}/plants`, { token })).status, 200, 'the bootstrap token works');
    const curl = server.stderr.split('\n').filter((l) => l.includes('curl'));
    assert.equal(curl.length, 1, 'one curl example (not one per worker)');
    await stop(server);
    assert.ok(
      curl[0]!.includes(`${server.url}/plants`),
      `the curl example uses the listening URL ${server.url}: ${curl[0]}`,
    );
  });

  it('answers on both workers and exits 0 on SIGTERM, taking its workers with it', { timeout: 30_000 }, async () => {
    const token = await cliToken(fx.db, 'cluster');
    const server = await startServer(serveArgs(fx.db, '--workers', '2', '--access-log'), { listeners: 2 });
    const ports = new Set(server.stdout.match(/Server listening at http:\/\/127\.0\.0\.1:\d+/g));
    assert.equal(ports.size, 1, `both workers listen on one port: ${[...ports].join(', ')}`);
    const workerPids = server.logPids();
    assert.equal(workerPids.size, 2, 'two worker processes');
    assert.ok(!workerPids.has(server.pid), 'the workers are not the primary');

    // one connection per request, so the primary spreads them over the workers
    for (let i = 1; i <= 20; i++) {
      const res = await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: i, name: `w-${i}` } });
      assert.equal(res.status, 200, res.body);
    }
    const names = await listAllNames(server.url, token);
    assert.deepEqual(
      names,
      Array.from({ length: 20 }, (_, i) => `w-${i + 1}`),
    );

    await stop(server);
    // worker logs reach stdout asynchronously: read them once everything has exited
    const served = new Set(
      server
        .logLines()
        .filter((l) => l.msg === 'request completed')
        .map((l) => l.pid),
    );
    assert.deepEqual([...served].sort(), [...workerPids].sort(), 'both workers answered requests');
    await eventually(
      () =>
        [...workerPids].every((pid) => {
          try {
            process.kill(pid, 0);
            return false;
          } catch {
            return true;
          }
        }),
      5000,
      { stepMs: 10, what: 'the workers to exit' },
    );
  });
});
