// The log sink's drain at exit: every line written so far reaches the
// destination before it resolves, and a drain with nothing waiting resolves
// at once. closeLogger finds the sink from Fastify's app.log, so a process
// that exits right after it has written every line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogSink } from '../../src/app/log-sink.js';
import { after, describe, it } from '../helpers/requirements.js';
import { eventually } from '../helpers/eventually.js';

describe('LogSink.drain', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-log-sink-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const open = (name: string) => {
    const path = join(dir, name);
    return { path, fd: openSync(path, 'w') };
  };

  it('writes every buffered line before it resolves, though none filled the buffer', async () => {
    const { path, fd } = open('buffered.log');
    const sink = new LogSink({ fd, minLength: 1 << 20 });
    const lines = Array.from({ length: 500 }, (_, i) => `{"n":${i}}\n`);
    for (const line of lines) sink.write(line);
    assert.equal(readFileSync(path, 'utf8'), '', 'still buffered');
    await sink.drain(5000);
    assert.equal(readFileSync(path, 'utf8'), lines.join(''));
    closeSync(fd);
  });

  it('also waits for lines written while it drains', async () => {
    const { path, fd } = open('during.log');
    const sink = new LogSink({ fd, minLength: 64 });
    for (let i = 0; i < 100; i++) sink.write(`{"before":${i}}\n`);
    const drained = sink.drain(5000);
    sink.write('{"last":true}\n');
    await drained;
    const text = readFileSync(path, 'utf8');
    assert.equal(text.split('\n').filter(Boolean).length, 101);
    assert.ok(text.endsWith('{"last":true}\n'));
    closeSync(fd);
  });

  it('writes a buffered line once it has waited maxDelayMs, though the buffer is far from full', async () => {
    const { path, fd } = open('delayed.log');
    const sink = new LogSink({ fd, minLength: 1 << 20, maxDelayMs: 50 });
    sink.write('{"n":1}\n');
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(readFileSync(path, 'utf8'), '', 'still waiting');
    await eventually(() => readFileSync(path, 'utf8') === '{"n":1}\n', 2000, { what: 'the line to be written' });
    closeSync(fd);
  });

  it('resolves at once with nothing waiting', async () => {
    const { fd } = open('idle.log');
    const sink = new LogSink({ fd, minLength: 0 });
    const started = performance.now();
    await sink.drain(5000);
    assert.ok(performance.now() - started < 100);
    closeSync(fd);
  });
});

describe('closeLogger', () => {
  it("drains the sink behind Fastify's app.log before a process exits", () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-close-logger-'));
    try {
      const path = join(dir, 'stdout.log');
      const fd = openSync(path, 'w');
      const logger = new URL('../../src/app/logger.js', import.meta.url).href;
      // 2000 lines logged at once fill the buffer while its first write is under way; exit follows the drain at once.
      const script = `
        import Fastify from ${JSON.stringify(import.meta.resolve('fastify'))};
        import { createLogger, closeLogger } from ${JSON.stringify(logger)};
        const app = Fastify({ loggerInstance: createLogger({ logLevel: 'info', logPretty: false }) });
        for (let i = 0; i < 2000; i++) app.log.info({ n: i }, 'line');
        await closeLogger(app.log);
        process.exit(0);`;
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['ignore', fd, 'pipe'],
        encoding: 'utf8',
      });
      closeSync(fd);
      assert.equal(run.status, 0, run.stderr);
      const lines = readFileSync(path, 'utf8').split('\n').filter(Boolean);
      assert.equal(lines.length, 2000, 'every line logged before the exit was written');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
