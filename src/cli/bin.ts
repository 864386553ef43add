#!/usr/bin/env -S node --single-threaded-gc
// The plant-store executable: the one place that hands the real process to main().
//
// --single-threaded-gc keeps garbage collection on the thread that serves requests: on a busy or pinned core, V8's
// helper threads otherwise wait for CPU time in the middle of a collection, and requests wait with them. The line
// above gives it to every launcher that runs the executable (the installed bin, npx, a global install, systemd).
// Started as `node bin.js` without it, the part that can still be changed in a running process is changed here,
// before anything else is loaded: turning the other collector threads off after start crashes V8 (measured).
import { setFlagsFromString } from 'node:v8';

if (!process.execArgv.includes('--single-threaded-gc')) setFlagsFromString('--no-parallel-scavenge');
const { main } = await import('./main.js');

// A reader that stops early (`plant-store token list | head`) closes the pipe: what is left has nowhere to go, which
// is no failure of the command. Any other write error still ends the process as before.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

/**
 * Resolves once everything written to `stream` so far has been handed to the operating system. On a pipe, writes
 * the reader has not taken yet wait in this process, and process.exit() would drop them.
 */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    // Nothing waiting (a file or a terminal is written synchronously): a probe write to a full disk would only fail.
    if (stream.destroyed || stream.writableLength === 0) return resolve();
    stream.once('close', resolve);
    stream.write('', () => resolve());
  });
}

const code = await main(process.argv.slice(2), {
  // process.env is read here and nowhere else: everything below gets it passed in.
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  isTTY: Boolean(process.stdout.isTTY),
  signals: process,
});
await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
process.exit(code);
