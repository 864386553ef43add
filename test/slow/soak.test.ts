// The soak run (scripts/soak.ts, `npm run soak`) as a test: the server as
// `npm start` runs it under a few minutes of mixed load must give no
// unexpected answer, no request error, and exit 0 on SIGTERM.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { it } from '../helpers/requirements.js';

const SOAK = fileURLToPath(new URL('../../scripts/soak.js', import.meta.url));
const MINUTES = process.env.PLANTS_SOAK_MINUTES ?? '2';

it(`soak: ${MINUTES} minutes of mixed load without an unexpected answer`, { timeout: 15 * 60_000 }, async (t) => {
  const child = spawn(process.execPath, ['--enable-source-maps', SOAK, '--minutes', MINUTES, '--connections', '8'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.diagnostic(out.trim().split('\n').slice(-12).join('\n'));
  assert.equal(code, 0, out);
});
