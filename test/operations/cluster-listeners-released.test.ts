// The primary of `serve --workers` run in-process (its workers are real
// processes of the built executable): once it has stopped, it has taken back
// the listeners it put on node:cluster, which is one object per process. While
// it runs, its admin port answers for the whole cluster.
import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { CLI_PATH, delay, httpRequest } from '../helpers/server.js';

const ADMIN_LINE = /Admin listener \([^)]*\) at (http:\/\/127\.0\.0\.1:\d+)/;

/** Takes every write, as text. */
class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`waited ${ms} ms for ${what}`);
    await delay(20);
  }
}

describe('serve --workers, the primary in this process', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-cluster-listeners-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'answers readiness and metrics for the cluster on its admin port, and removes its cluster listeners once its workers have stopped',
    { timeout: 30_000 },
    async () => {
      const db = join(dir, 'plants.db');
      const args = ['serve', '--db', db, '--host', '127.0.0.1', '--port', '0', '--workers', '2', '--admin-port', '0'];
      // The workers run the executable with the same arguments; their output is not read.
      cluster.setupPrimary({ exec: CLI_PATH, args, silent: true });
      const before = { listening: cluster.listenerCount('listening'), exit: cluster.listenerCount('exit') };
      const stdout = new Capture();
      const stderr = new Capture();
      const signals = new EventEmitter();
      const exited = main(args, { env: {}, stdin: Readable.from([]), stdout, stderr, isTTY: false, signals });

      try {
        await until(() => stdout.text.includes('2 workers listening'), 20_000, `the workers to listen\n${stdout.text}`);
        assert.ok(cluster.listenerCount('exit') > before.exit, 'the primary watches its workers');
        // The primary's admin port answers for the cluster: ready once every worker says so, and one scrape.
        const admin = ADMIN_LINE.exec(stdout.text)?.[1];
        assert.ok(admin, `the admin listener's address in the log\n${stdout.text}`);
        const ready = await httpRequest(`${admin}/readyz`);
        assert.equal(ready.status, 200, ready.body);
        const metrics = await httpRequest(`${admin}/metrics`);
        assert.equal(metrics.status, 200, metrics.body);
        assert.match(metrics.body, /^process_cpu_seconds_total /m);
      } catch (error) {
        // Stop the primary and its workers, or they would keep this process running.
        signals.emit('SIGTERM', 'SIGTERM');
        await Promise.race([exited, delay(10_000)]);
        for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
        throw error;
      }
      signals.emit('SIGTERM', 'SIGTERM');
      assert.equal(await exited, 0, stderr.text);

      assert.deepEqual({ listening: cluster.listenerCount('listening'), exit: cluster.listenerCount('exit') }, before);
    },
  );
});
