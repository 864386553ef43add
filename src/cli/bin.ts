#!/usr/bin/env node
// The plant-store executable: the one place that hands the real process to main().
import { main } from './main.js';

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
