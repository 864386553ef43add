// Tests that need something from outside this repository: PostgreSQL, Redis,
// chromium, pgbouncer, promtool... When it is missing, those tests are still
// registered and reported as skipped with the reason, so `tests N, skipped M`
// shows what did not run; under CI=true they fail with the reason instead.
//
//   import { before, describe, it, needs, requirement, tcpProbe } from './helpers/requirements.js';
//
//   const redis = await requirement('Redis at 127.0.0.1:6379', tcpProbe('127.0.0.1', 6379));
//   // or commandProbe('/usr/bin/chromium'), commandProbe('/usr/sbin/pgbouncer'), commandProbe('promtool'),
//   // or any function that throws (or rejects) saying what is wrong.
//   needs(redis, () => {
//     describe('rate limits shared through Redis', () => {
//       before(connectRedis); // not registered when Redis is missing
//       it('counts across instances', async () => {}); // skipped: "needs Redis at 127.0.0.1:6379: connect ECONNREFUSED …"
//     });
//   });
//
// describe/it/test and the hooks exported here are node:test's own, except
// while a needs() body with a reason runs: then tests are registered skipped
// (or failing, under CI=true) and hooks are dropped. So every suite in test/
// takes them from here (a lint rule says so). Two node:test behaviours are
// why this exists: a describe() with `skip` never runs its body, so its tests
// vanish from the totals; and a suite's before() hooks run even when every
// test in it is skipped.
import { access, constants } from 'node:fs/promises';
import net from 'node:net';
import { delimiter, join } from 'node:path';
import * as nodeTest from 'node:test';
import type { TestFn, TestOptions } from 'node:test';

const IN_CI = process.env.CI === 'true';

/**
 * A test's time limit unless its options give one, so that a hang fails the
 * test in a minute and a half instead of stalling the run (`npm test` gives
 * each test file ten minutes in all).
 */
export const TEST_TIMEOUT_MS = 90_000;

/** node:test's it/test with TEST_TIMEOUT_MS as the default timeout. */
function timed(real: typeof nodeTest.it): typeof nodeTest.it {
  const declare = (...args: unknown[]) => {
    const { name, options, fn } = testArgs(args);
    return real(name, { timeout: TEST_TIMEOUT_MS, ...options }, fn);
  };
  return Object.assign(declare, { skip: real.skip, todo: real.todo, only: real.only }) as typeof nodeTest.it;
}

// Live bindings: needs() swaps them while its body declares tests.
export let describe = nodeTest.describe;
export let it = timed(nodeTest.it);
export let test = timed(nodeTest.test);
export let before = nodeTest.before;
export let after = nodeTest.after;
export let beforeEach = nodeTest.beforeEach;
export let afterEach = nodeTest.afterEach;

/** Why the tests being declared cannot run (set only while a needs() body runs). */
let missing: string | undefined;

/**
 * Probes for something a test needs. Resolves to undefined when `probe`
 * succeeds, or to the reason to give (`needs NAME: what went wrong`) when it
 * throws or rejects. Await it at the top of the test file, before any test
 * is declared (node:test starts a top-level test at once, so a file-level
 * after() hook could run during the await).
 */
export async function requirement(name: string, probe: () => unknown): Promise<string | undefined> {
  try {
    await probe();
    return undefined;
  } catch (error) {
    return `needs ${name}: ${(error as Error)?.message || String(error)}`;
  }
}

/**
 * Declares the suites and tests of `body` (synchronous) with a requirement:
 * when `reason` is a string, the it/test exported here register every test
 * as skipped with that reason (failing with it under CI=true), and the hooks
 * exported here register nothing.
 */
export function needs(reason: string | undefined, body: () => void): void {
  if (reason === undefined || missing !== undefined) return body();
  const saved = { describe, it, test, before, after, beforeEach, afterEach };
  missing = reason;
  describe = unrunnableSuite(reason);
  it = unrunnable(nodeTest.it, reason);
  test = unrunnable(nodeTest.test, reason);
  before = after = beforeEach = afterEach = () => {};
  try {
    body();
  } finally {
    missing = undefined;
    ({ describe, it, test, before, after, beforeEach, afterEach } = saved);
  }
}

/** A probe that connects to host:port (and closes at once). */
export function tcpProbe(host: string, port: number, timeoutMs = 2000): () => Promise<void> {
  return () =>
    new Promise((resolve, reject) => {
      const socket = net.connect({ host, port, timeout: timeoutMs });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('timeout', () => {
        socket.destroy();
        reject(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`));
      });
      socket.once('error', reject);
    });
}

/** A probe that finds an executable: an absolute path, or a name looked up on PATH. */
export function commandProbe(command: string): () => Promise<void> {
  return async () => {
    const candidates = command.includes('/')
      ? [command]
      : (process.env.PATH ?? '').split(delimiter).map((dir) => join(dir || '.', command));
    for (const path of candidates) if (await isExecutable(path)) return;
    throw new Error(command.includes('/') ? `${command} is not an executable file` : `${command} is not on PATH`);
  };
}

const isExecutable = (path: string) =>
  access(path, constants.X_OK).then(
    () => true,
    () => false,
  );

/** (name, options?, fn?) as node:test takes them. */
function testArgs(args: unknown[]): { name: string; options: TestOptions; fn: TestFn | undefined } {
  const [name, second, third] = args;
  const fn = (typeof second === 'function' ? second : third) as TestFn | undefined;
  const options = typeof second === 'object' && second !== null ? (second as TestOptions) : {};
  return { name: typeof name === 'string' && name !== '' ? name : fn?.name || '<anonymous>', options, fn };
}

/** it/test that register a test which cannot run: skipped with the reason, or failing with it under CI=true. */
function unrunnable(real: typeof nodeTest.it, reason: string): typeof nodeTest.it {
  const declare = (...args: unknown[]) => {
    const { name, options, fn } = testArgs(args);
    if (IN_CI)
      return real(name, options, () => {
        throw new Error(`CI=true, so this may not be skipped: ${reason}`);
      });
    return real(name, { ...options, skip: reason }, fn);
  };
  return Object.assign(declare, { skip: declare, todo: declare, only: declare }) as typeof nodeTest.it;
}

/** describe() whose body still runs, so its tests are declared (with the swapped it/test). */
function unrunnableSuite(reason: string): typeof nodeTest.describe {
  const declare = (...args: unknown[]) => {
    const { name, options, fn } = testArgs(args);
    return nodeTest.describe(name, options, (ctx) => {
      // A test declared here with node:test's own it() would run against what
      // is missing: make it fail, saying why.
      if (!IN_CI)
        nodeTest.beforeEach(() => {
          throw new Error(
            `declared with node:test's own it/test, so it cannot be skipped (${reason}); declare it with it/test from test/helpers/requirements.js`,
          );
        });
      return (fn as unknown as nodeTest.SuiteFn | undefined)?.(ctx);
    });
  };
  return Object.assign(declare, { skip: declare, todo: declare, only: declare }) as typeof nodeTest.describe;
}
