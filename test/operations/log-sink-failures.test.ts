// A log destination that fails cannot stop the service: with stdout on a full
// disk (/dev/full, ENOSPC) or on a pipe whose reader has gone (EPIPE), a real
// `serve --access-log` process keeps answering the API and the admin
// /healthz, drops the lines it cannot write, counts them in
// plant_store_log_lines_dropped_total, says so once on stderr, and exits 0
// promptly on SIGTERM.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import { CLI_PATH, cleanEnv, httpRequest, tokensIn } from '../helpers/server.js';

const devFull = await requirement('/dev/full (a device that refuses every write with ENOSPC)', () => {
  if (!existsSync('/dev/full')) throw new Error('/dev/full is missing');
});

const NOTICE = /log lines are being dropped: writing them to stdout failed \((ENOSPC|EPIPE)\)/g;

interface Served {
  child: ChildProcess;
  url: string;
  adminUrl: string;
  stderr: () => string;
}

/**
 * Starts `serve --access-log` with stdout on `stdout`, and waits until it
 * answers. Its ports are picked here (with stdout lost, the log cannot tell
 * them), so another test's process may take one first: then again, on others.
 */
async function serve(db: string, stdout: number | 'pipe'): Promise<Served> {
  for (let attempt = 1; ; attempt++) {
    try {
      // A store of its own each time, so that each start makes (and prints) the first token.
      return await serveOnFreePorts(attempt === 1 ? db : `${db}.${attempt}`, stdout);
    } catch (error) {
      if (attempt === 3 || !/EADDRINUSE/.test(String(error))) throw error;
    }
  }
}

async function serveOnFreePorts(db: string, stdout: number | 'pipe'): Promise<Served> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const args = ['--db', db, '--host', '127.0.0.1', '--port', String(port), '--admin-port', String(adminPort)];
  const child = spawn(process.execPath, [CLI_PATH, 'serve', '--access-log', ...args], {
    env: cleanEnv(),
    stdio: ['ignore', stdout, 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}: ${stderr}`);
      return (await httpRequest(`${url}/healthz`).catch(() => undefined))?.status === 200;
    },
    // Generous: on a busy machine a process takes a while to start.
    45_000,
    { what: 'serve to answer /healthz' },
  );
  return { child, url, adminUrl: `http://127.0.0.1:${adminPort}`, stderr: () => stderr };
}

/** 61 requests, the API and the admin /healthz in turn, each answered 200; then the dropped-lines count. */
async function keepsServing(server: Served): Promise<number> {
  const token = tokensIn(server.stderr())[0];
  assert.ok(token, server.stderr());
  for (let i = 0; i < 30; i++) {
    const created = await httpRequest(`${server.url}/plants`, {
      method: 'POST',
      token,
      json: { id: i, name: `p${i}` },
    });
    assert.equal(created.status, 200, `create ${i}: ${created.body}`);
    assert.equal((await httpRequest(`${server.adminUrl}/healthz`, { timeoutMs: 2000 })).status, 200);
  }
  const list = await httpRequest(`${server.url}/plants`, { token, timeoutMs: 2000 });
  assert.equal(list.status, 200);
  assert.equal((JSON.parse(list.body) as unknown[]).length, 30);
  // The access lines of the 31 API requests at least, once the buffer has gone out (every second).
  let dropped = 0;
  await eventually(
    async () => {
      const metrics = (await httpRequest(`${server.adminUrl}/metrics`, { timeoutMs: 2000 })).body;
      dropped = Number(/^plant_store_log_lines_dropped_total (\d+)$/m.exec(metrics)?.[1]);
      return dropped >= 31;
    },
    5000,
    { what: 'plant_store_log_lines_dropped_total to count the access lines' },
  );
  return dropped;
}

/** keepsServing, then SIGTERM: exit 0 within 5 s, and the drop said once on stderr; says what it saw. */
async function keepsServingThenStops(server: Served): Promise<string> {
  const dropped = await keepsServing(server);
  assert.ok(dropped >= 31, `dropped ${dropped}`);
  const stopped = await stop(server.child);
  assert.equal(stopped.code, 0, server.stderr());
  assert.ok(stopped.ms < 5000, `exited ${stopped.ms} ms after SIGTERM`);
  assert.equal(server.stderr().match(NOTICE)?.length, 1, server.stderr());
  return `${dropped} log lines dropped; exit ${stopped.code} ${stopped.ms} ms after SIGTERM`;
}

/** SIGTERM, and how long until the process exited, with its code. */
async function stop(child: ChildProcess): Promise<{ code: number | null; ms: number }> {
  const started = performance.now();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  const code = await exited;
  clearTimeout(timer);
  return { code, ms: Math.round(performance.now() - started) };
}

describe('a log destination that fails', () => {
  let dir: string;
  let n = 0;
  const children: ChildProcess[] = [];
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-log-sink-'));
  });
  after(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  needs(devFull, () => {
    it('stdout on /dev/full: keeps serving, counts the dropped lines, says so once, stops on SIGTERM', async (t) => {
      const full = openSync('/dev/full', 'w');
      let server: Served;
      try {
        server = await serve(join(dir, `${++n}.db`), full);
      } finally {
        closeSync(full);
      }
      children.push(server.child);
      t.diagnostic(await keepsServingThenStops(server));
    });
  });

  it('stdout on a pipe whose reader closed: keeps serving, counts the dropped lines, stops on SIGTERM', async (t) => {
    const server = await serve(join(dir, `${++n}.db`), 'pipe');
    children.push(server.child);
    // The reader goes away: every later write to the pipe is EPIPE.
    server.child.stdout!.destroy();
    t.diagnostic(await keepsServingThenStops(server));
  });
});
