// Connections cannot be held open for free: a connection that sends nothing,
// a request head or body trickled a byte at a time, an idle keep-alive
// connection and a request whose handler is stuck are all cut within their
// configured time, and a cap bounds how many connections are open at once.
// Raw sockets against a real server (in this process) with short timeouts; the
// default 10 s head timeout is waited for in test/slow/default-timeouts.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { delay, httpRequest, serveArgs, stopGracefully, tokensIn, type ServerProcess } from '../helpers/server.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { exchange, trickle } from '../helpers/raw-socket.js';

/** The status line, lower-cased headers and body of one raw HTTP response. */
function parseResponse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', body = ''] = raw.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

/** A response in the Error shape with the security headers. */
function expectJsonError(raw: string, status: number, message: RegExp): void {
  const res = parseResponse(raw);
  assert.equal(res.status, status, `expected ${status}: ${JSON.stringify(raw)}`);
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['cache-control'], 'no-store');
  assert.match(res.headers['content-security-policy'] ?? '', /default-src 'none'/);
  const body = JSON.parse(res.body) as { error: number; message: string };
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message']);
  assert.equal(body.error, status);
  assert.match(body.message, message);
}

// Servers are stopped by each test or suite (helpers/server.ts kills leftovers
// when the file ends); useProcessCleanup would kill the shared one after each test.
describe('connection timeouts, deadline and cap', () => {
  let dir: string;
  let n = 0;
  const newDb = () => join(dir, `plants-${++n}.db`);
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-conn-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  // Each test waits on its own connection's timers: they run at once.
  describe('with short timeouts (head 1 s, request 2 s, keep-alive 0.5 s)', { concurrency: true }, () => {
    let server: ServerProcess;
    let db: string;
    let token: string;
    before(async () => {
      db = newDb();
      server = await serveInProcess(
        serveArgs(db, '--headers-timeout-ms', '1000', '--request-timeout-ms', '2000', '--keep-alive-timeout-ms', '500'),
      );
      token = tokensIn(server.stderr)[0]!;
      assert.ok(token, `the first token on stderr: ${server.stderr}`);
    });
    after(() => stopGracefully(server));

    it('closes a connection that sends nothing within the head timeout, without answering', async () => {
      const r = await exchange(server.port, () => {}, 5000);
      assert.equal(r.data, '');
      assert.ok(r.closedAfterMs >= 800 && r.closedAfterMs <= 1800, `closed after ${r.closedAfterMs} ms`);
    });

    it('answers 408 to a request head trickled a line at a time, within the head timeout', async () => {
      const r = await exchange(
        server.port,
        (s) => {
          s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
          trickle(s, 'X-Slow: y\r\n', 200);
        },
        5000,
      );
      expectJsonError(r.data, 408, /did not arrive in time/);
      assert.ok(r.closedAfterMs <= 1800, `closed after ${r.closedAfterMs} ms`);
    });

    it('answers 408 to a body trickled a byte every 300 ms to POST /plants, with a valid token, within the request timeout', async () => {
      const r = await exchange(
        server.port,
        (s) => {
          s.write(
            'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n' +
              `Authorization: Bearer ${token}\r\n\r\n`,
          );
          trickle(s, ' ', 300);
        },
        6000,
      );
      expectJsonError(r.data, 408, /did not arrive in time/);
      assert.ok(r.closedAfterMs >= 1500 && r.closedAfterMs <= 2800, `closed after ${r.closedAfterMs} ms`);
    });

    it('answers a body trickled to an unknown path, without a token, with 401 at once, reading none of it', async () => {
      const r = await exchange(
        server.port,
        (s) => {
          s.write(
            'POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n',
          );
          trickle(s, ' ', 300);
        },
        6000,
      );
      expectJsonError(r.data, 401, /authentication required/);
      assert.ok(r.closedAfterMs <= 1000, `closed after ${r.closedAfterMs} ms`);
    });

    it('closes an idle keep-alive connection after the keep-alive timeout (and Node’s 1 s grace)', async () => {
      const r = await exchange(server.port, (s) => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'), 5000);
      assert.equal(parseResponse(r.data).status, 200);
      assert.ok(r.closedAfterMs >= 400 && r.closedAfterMs <= 2000, `closed after ${r.closedAfterMs} ms`);
    });

    it('answers a request without Host with the JSON 400 and the security headers', async () => {
      const r = await exchange(server.port, (s) => s.write('GET /healthz HTTP/1.1\r\n\r\n'), 3000);
      expectJsonError(r.data, 400, /Host/);
      assert.ok(parseResponse(r.data).headers['x-request-id'], 'a request id');
      // HTTP/1.0 has no Host requirement.
      const old = await exchange(server.port, (s) => s.write('GET /healthz HTTP/1.0\r\n\r\n'), 3000);
      assert.equal(parseResponse(old.data).status, 200, old.data);
    });

    it('cuts a request whose handler is stuck past the request timeout with a 503', async () => {
      // Another connection holds SQLite's write lock: the create waits for it
      // (busy_timeout is 10 s), far longer than the 2 s request timeout.
      const blocker = new Database(db);
      blocker.pragma('busy_timeout = 5000');
      blocker.exec('BEGIN IMMEDIATE');
      try {
        const started = performance.now();
        const res = await httpRequest(`${server.url}/plants`, {
          method: 'POST',
          token,
          json: { id: 1, name: 'stuck' },
          timeoutMs: 8000,
        });
        const tookMs = performance.now() - started;
        assert.equal(res.status, 503, res.body);
        assert.match(res.body, /did not complete within 2000 ms/);
        assert.equal(res.headers['connection'], 'close');
        assert.ok(tookMs >= 900 && tookMs <= 3100, `answered after ${tookMs} ms`);
      } finally {
        blocker.exec('ROLLBACK');
        blocker.close();
      }
      // The server goes on serving.
      assert.equal((await httpRequest(`${server.url}/healthz`)).status, 200);
    });
  });

  it('caps open connections, says so in the log, and takes new ones once some close', async () => {
    const server = await serveInProcess(serveArgs(newDb(), '--max-connections', '5', '--headers-timeout-ms', '20000'));
    const held: net.Socket[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const s = net.connect(server.port, '127.0.0.1');
        s.on('error', () => {});
        await new Promise((resolve) => s.once('connect', resolve));
        held.push(s);
      }
      await delay(100);
      // The sixth is closed at once, before it can send anything.
      const refused = await exchange(server.port, (s) => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'), 3000);
      assert.equal(refused.data, '');
      assert.ok(refused.closedAfterMs < 1000, `closed after ${refused.closedAfterMs} ms`);
      await server.waitForOutput((out) => out.includes('connection limit reached'), 3000);
      const line = server.logLines().find((l) => String(l.msg).includes('connection limit reached'))!;
      assert.equal(line.level, 40, 'logged as a warning');
      assert.equal(line.maxConnections, 5);

      for (const s of held.splice(0)) s.destroy();
      await delay(200);
      assert.equal((await httpRequest(`${server.url}/healthz`)).status, 200);
    } finally {
      for (const s of held) s.destroy();
      await stopGracefully(server);
    }
  });

  it('shuts down at once past connections that never sent a byte, however long the head timeout', async () => {
    const server = await serveInProcess(serveArgs(newDb(), '--headers-timeout-ms', '20000'));
    // As a browser or an HTTP client's pool opens them ahead of need.
    const silent = net.connect(server.port, '127.0.0.1');
    silent.on('error', () => {});
    await new Promise((resolve) => silent.once('connect', resolve));
    const closedBy = new Promise<'server'>((resolve) => silent.once('close', () => resolve('server')));
    try {
      await delay(100);
      const started = performance.now();
      const stopped = stopGracefully(server);
      assert.equal(
        await Promise.race([closedBy, delay(5000).then(() => 'still open after 5 s')]),
        'server',
        'the server closed the connection that sent nothing',
      );
      await stopped;
      // Before, the stop waited out the 20 s head timeout.
      assert.ok(performance.now() - started < 10_000);
    } finally {
      silent.destroy();
    }
  });

  it('refuses a head timeout longer than the request timeout, naming both settings', async () => {
    await assert.rejects(
      serveInProcess(serveArgs(newDb(), '--headers-timeout-ms', '5000', '--request-timeout-ms', '4000'), {
        timeoutMs: 5000,
      }),
      /--headers-timeout-ms \(5000\) must not exceed --request-timeout-ms \(4000\)/,
    );
  });
});
