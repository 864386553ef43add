// Behind a real HAProxy (option forwardfor), bad tokens from one client lock
// out that client only when the server trusts the proxy (--trust-proxy);
// without it, every client behind the proxy shares the proxy's address, and
// one client's failures make every client's requests 429. Clients are told
// apart by their loopback source address (127.0.0.2, 127.0.0.3).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/ports.js';
import { after, before, describe, it, needs, requirement } from '../helpers/requirements.js';
import {
  cliToken,
  httpRequest,
  jsonLines,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  useProcessCleanup,
  type ServerProcess,
} from '../helpers/server.js';

const HAPROXY = '/usr/sbin/haproxy';
const haproxy = await requirement(`HAProxy at ${HAPROXY} (Debian package haproxy)`, () => {
  if (!existsSync(HAPROXY)) throw new Error(`${HAPROXY} is missing`);
});

const BAD = `plnt_${'A'.repeat(43)}`;
const ATTACKER = '127.0.0.2';
const NEIGHBOUR = '127.0.0.3';

/** HAProxy on a free loopback port in front of `backendPort`, adding X-Forwarded-For; stopped by its PID. */
async function startHaproxy(dir: string, backendPort: number): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const cfg = join(dir, `haproxy-${port}.cfg`);
  writeFileSync(
    cfg,
    [
      'global',
      '  maxconn 256',
      'defaults',
      '  mode http',
      '  timeout connect 5s',
      '  timeout client 30s',
      '  timeout server 30s',
      'frontend api',
      `  bind 127.0.0.1:${port}`,
      '  option forwardfor',
      '  default_backend plants',
      'backend plants',
      `  server plants1 127.0.0.1:${backendPort}`,
      '',
    ].join('\n'),
  );
  const proc = spawn(HAPROXY, ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () => {
      if (proc.exitCode !== null) throw new Error(`haproxy exited ${proc.exitCode}: ${stderr}`);
      return (await httpRequest(`${url}/healthz`).catch(() => undefined))?.status === 200;
    },
    10_000,
    { what: 'HAProxy to pass /healthz on' },
  );
  return { url, proc };
}

function stopHaproxy(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
    process.kill(proc.pid!, 'SIGTERM');
  });
}

needs(haproxy, () => {
  describe('--trust-proxy behind HAProxy', () => {
    useProcessCleanup();
    let dir: string;
    let db: string;
    let token: string;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'plant-store-haproxy-'));
      db = join(dir, 'plants.db');
      await migrateWithCli(db);
      token = await cliToken(db, 'neighbour');
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    /** 25 bad tokens from the attacker through HAProxy, then what the neighbour and the attacker get with a good one. */
    async function scenario(trust: string[]) {
      let server: ServerProcess | undefined;
      let proxy: ChildProcess | undefined;
      try {
        server = await startServer(serveArgs(db, '--auth-fail-limit', '20/1m', '--access-log', ...trust));
        const started = await startHaproxy(dir, Number(new URL(server.url).port));
        proxy = started.proc;
        const statuses: number[] = [];
        for (let i = 0; i < 25; i++) {
          statuses.push((await httpRequest(`${started.url}/plants`, { token: BAD, localAddress: ATTACKER })).status);
        }
        const neighbour = await httpRequest(`${started.url}/plants`, { token, localAddress: NEIGHBOUR });
        const attacker = await httpRequest(`${started.url}/plants`, { token, localAddress: ATTACKER });
        await stopHaproxy(proxy);
        await stopGracefully(server);
        const clients = new Set(
          jsonLines(server.stdout)
            .filter((l) => l.msg === 'request completed' && l.url === '/plants')
            .map((l) => l.client),
        );
        return { statuses, neighbour: neighbour.status, attacker: attacker.status, clients };
      } finally {
        await stopHaproxy(proxy);
        await stopGracefully(server);
      }
    }

    it("without --trust-proxy: one client's 20 bad tokens make every client 429", async () => {
      const run = await scenario([]);
      assert.deepEqual(run.statuses.slice(0, 20), Array(20).fill(401));
      assert.deepEqual(run.statuses.slice(20), Array(5).fill(429));
      assert.equal(run.neighbour, 429, 'the neighbour is locked out with the attacker');
      assert.deepEqual([...run.clients], ['127.0.0.1']);
    });

    it('with --trust-proxy 127.0.0.1: only the client that sent them is locked out', async () => {
      const run = await scenario(['--trust-proxy', '127.0.0.1,::1']);
      assert.deepEqual(run.statuses.slice(0, 20), Array(20).fill(401));
      assert.deepEqual(run.statuses.slice(20), Array(5).fill(429));
      assert.equal(run.neighbour, 200, 'the neighbour is served');
      assert.equal(run.attacker, 429, 'the attacker stays locked out, good token or not');
      assert.deepEqual([...run.clients].sort(), [ATTACKER, NEIGHBOUR]);
    });
  });
});
