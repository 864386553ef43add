// The plant-store CLI in this process: main(argv, io) with captured output
// and only the environment given. For commands that do not need a process of
// their own (token, migrate, help, usage errors); serve runs as a real
// process (helpers/server.ts) wherever signals or exits matter.
import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import type { CliResult } from './server.js';

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    this.text += chunk.toString();
    callback();
  }
}

// One run at a time: SQLite waits for a busy lock by blocking its thread, so
// two runs in one process could each wait on a lock the other can release
// only when the event loop moves on. Separate processes never meet that.
let queue: Promise<unknown> = Promise.resolve();

/** Runs `plant-store ARGS` in-process with exactly the environment `env` and `stdin` as input; runs queue up. */
export function runCliInProcess(args: string[], env: Record<string, string> = {}, stdin = ''): Promise<CliResult> {
  const run = queue.then(async () => {
    const stdout = new Capture();
    const stderr = new Capture();
    const code = await main(args, {
      env,
      stdin: Readable.from([stdin]),
      stdout,
      stderr,
      isTTY: false,
      signals: new EventEmitter(),
    });
    return { code, signal: null, stdout: stdout.text, stderr: stderr.text, exitedAt: performance.now() };
  });
  queue = run.catch(() => {});
  return run;
}
