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

const code = await main(process.argv.slice(2), {
  // process.env is read here and nowhere else: everything below gets it passed in.
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  isTTY: Boolean(process.stdout.isTTY),
  signals: process,
});
process.exit(code);
