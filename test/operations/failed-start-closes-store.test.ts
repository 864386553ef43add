// `serve` when its start-up fails after the store was opened: the store is
// closed again before the failure is reported. Run in-process, where a store
// left open would be seen (file handles, a writer thread keeping the process
// alive) and where stdout can be made to fail.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { openHandles } from '../helpers/open-handles.js';
import { after, before, describe, it } from '../helpers/requirements.js';

/** Takes every write, as text. */
class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

/** A stdout that throws on every write, as the log line that says which store is used is written. */
class BrokenStdout extends Writable {
  override _write(): void {
    throw new Error('stdout is broken');
  }
}

describe('serve start-up that fails', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-start-failure-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('closes the store it opened when the start-up log cannot be written', async () => {
    const db = join(dir, 'plants.db');
    const stderr = new Capture();
    const code = await main(['serve', '--db', db, '--host', '127.0.0.1', '--port', '0'], {
      env: {},
      stdin: Readable.from([]),
      stdout: new BrokenStdout(),
      stderr,
      isTTY: false,
      signals: new EventEmitter(),
    });
    assert.equal(code, 1, stderr.text);
    assert.match(stderr.text, /stdout is broken/);
    assert.ok(existsSync(db), 'the store was opened (and migrated) before the failure');
    assert.equal(openHandles(db), 0, 'the store is still open');
  });
});
