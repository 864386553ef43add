// A Prometheus scrape of `serve --workers N --admin-port P` while the workers
// are still starting is an expected race: it gets a 503 with Retry-After, and
// the log gets one info line, never an error or a stack trace.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, it } from '../helpers/requirements.js';
import { freePort } from '../helpers/ports.js';
import { CLI_PATH, cleanEnv } from '../helpers/server.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-metrics-start-'));
after(() => rmSync(dir, { recursive: true, force: true }));

it('a scrape while --workers start answers 503 and logs one info line', { timeout: 60_000 }, async () => {
  const adminPort = await freePort();
  const child = spawn(
    process.execPath,
    [CLI_PATH, 'serve', '--port', '0', '--workers', '2', '--admin-port', String(adminPort), '--db', join(dir, 'p.db')],
    { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.resume();
  const exited = new Promise((resolve) => child.on('close', resolve));
  try {
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const res = await fetch(`http://127.0.0.1:${adminPort}/metrics`).catch(() => undefined);
      if (res) {
        statuses.push(res.status);
        if (res.status === 503) retryAfter ??= res.headers.get('retry-after');
        await res.arrayBuffer();
        if (res.status === 200) break;
      }
      await sleep(10);
    }
    assert.equal(statuses.at(-1), 200, `metrics are served once the workers listen: ${statuses.join(' ')}`);
    assert.ok(statuses.includes(503), `a scrape during the start got 503: ${statuses.join(' ')}`);
    assert.deepEqual([...new Set(statuses)].sort(), [200, 503]);
    assert.equal(retryAfter, '1');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  const lines = stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg?: string; err?: unknown });
  const told = lines.filter((l) => /metrics are not served until every worker listens/.test(l.msg ?? ''));
  assert.equal(told.length, 1, 'one line, however many scrapes');
  assert.equal(told[0]!.level, 30, 'at info');
  assert.deepEqual(
    lines.filter((l) => l.level >= 50 || l.err !== undefined),
    [],
    'no error line and no stack trace',
  );
});
