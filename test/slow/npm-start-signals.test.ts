// `npm start` under a process manager: a SIGTERM sent to npm alone (not to its
// process group) must reach the server, which drains and exits, instead of
// leaving it running as an orphan.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, it, needs, requirement } from '../helpers/requirements.js';
import { cleanEnv } from '../helpers/server.js';
import { commandProbe } from '../helpers/requirements.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'plant-store-npm-start-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const npm = await requirement('npm on PATH', commandProbe('npm'));

needs(npm, () => {
  it('a SIGTERM to npm stops the server it started', { timeout: 60_000 }, async () => {
    const child = spawn('npm', ['start'], {
      cwd: ROOT,
      env: cleanEnv({ PLANTS_PORT: '0', PLANTS_DB: join(dir, 'p.db') }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.resume();
    const npmExited = new Promise((resolve) => child.on('close', resolve));
    let serverPid: number | undefined;
    try {
      const deadline = Date.now() + 30_000;
      while (!/Server listening at/.test(stdout) && Date.now() < deadline) await sleep(50);
      serverPid = Number(/"pid":(\d+)[^\n]*Server listening at/.exec(stdout)?.[1]);
      assert.ok(serverPid > 0, `the server's log names its pid:\n${stdout}`);
      assert.notEqual(serverPid, child.pid, 'npm runs the server in a process of its own');

      child.kill('SIGTERM');
      await npmExited;
      const stopBy = Date.now() + 15_000;
      while (alive(serverPid) && Date.now() < stopBy) await sleep(50);
      assert.equal(alive(serverPid), false, 'the server exited too, not left as an orphan');
      assert.match(stdout, /shutting down: finishing in-flight requests/, 'it drained, as on its own SIGTERM');
    } finally {
      if (serverPid && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
      child.kill('SIGKILL');
    }
  });
});
