// The list commands with stdout on a pipe whose reader is slow or stops early:
// the real executable, because what is under test is how the process writes
// its output and exits. A pipe holds 64 KiB; thousands of tokens are far more.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { issueToken } from '../../src/auth/tokens.js';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { CLI_PATH, cleanEnv, delay } from '../helpers/server.js';

const TOKENS = 3000;

type Cli = ChildProcessByStdio<null, Readable, Readable>;

/** Killed when the file ends, should a test fail while one still waits for its reader. */
const children = new Set<Cli>();

function spawnCli(args: string[]): Cli {
  const child = spawn(process.execPath, [CLI_PATH, ...args], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/** Everything a stream gives until it ends. */
async function readAll(stream: Readable): Promise<string> {
  let text = '';
  for await (const chunk of stream.setEncoding('utf8')) text += chunk as string;
  return text;
}

/**
 * Runs the CLI with a reader that takes nothing until the command has written
 * its output and had time to exit (it must not: the pipe is full), then reads
 * it all. The 'readable' listener is there from the start: without one, Node
 * would start reading the pipe itself, into nowhere, once the child exits.
 */
async function runWithSlowReader(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args);
  const stderr = readAll(child.stderr);
  const exited = once(child, 'exit');
  let stdout = '';
  let reading = false;
  const take = () => {
    for (let chunk; reading && (chunk = child.stdout.read() as string | null) !== null;) stdout += chunk;
  };
  child.stdout.setEncoding('utf8').on('readable', take);
  const ended = once(child.stdout, 'end');
  await once(child.stdout, 'readable');
  await Promise.race([exited, delay(200)]);
  reading = true;
  take();
  await ended;
  const [code] = (await exited) as [number | null];
  return { code, stdout, stderr: await stderr };
}

describe('list commands on a pipe', () => {
  let dir: string;
  let db: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-list-pipe-'));
    db = join(dir, 'plants.db');
    const store = await openStore(loadConfig({ db, durability: 'normal' }, {}));
    try {
      for (let i = 0; i < TOKENS; i++) await issueToken(store.tokens, { owner: `owner-${i}` });
    } finally {
      await store.close();
    }
  });
  after(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('token list --json delivers every line to a reader that is slow to start reading', async () => {
    const r = await runWithSlowReader(['token', 'list', '--json', '--db', db]);
    assert.equal(r.stderr, '');
    assert.equal(r.code, 0);
    const lines = r.stdout.split('\n');
    assert.equal(lines.pop(), '', 'the output ends with a newline');
    assert.equal(lines.length, TOKENS);
    assert.deepEqual(
      lines.map((l) => (JSON.parse(l) as { owner: string }).owner).sort(),
      Array.from({ length: TOKENS }, (_, i) => `owner-${i}`).sort(),
    );
  });

  it('token list delivers the whole table to a reader that is slow to start reading', async () => {
    const r = await runWithSlowReader(['token', 'list', '--db', db]);
    assert.equal(r.stderr, '');
    assert.equal(r.code, 0);
    const lines = r.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^ID\s+OWNER\s+SCOPES/);
    assert.equal(lines.length, TOKENS + 1);
    assert.match(lines.at(-1)!, /owner-\d+/);
  });

  it('exits 0 with nothing on stderr when the reader stops early (| head)', async () => {
    const child = spawnCli(['token', 'list', '--json', '--db', db]);
    const stderr = readAll(child.stderr);
    await once(child.stdout, 'readable');
    child.stdout.destroy();
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(await stderr, '');
    assert.equal(code, 0);
  });
});
