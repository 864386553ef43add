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
// Inside needs(), declare suites, tests and hooks with the functions exported
// here; outside it they are exactly node:test's, and every suite in test/
// takes them from here (a lint rule says so). Two node:test behaviours are
// why this exists: a describe() with `skip` never runs its body, so its tests
// vanish from the totals; and a suite's before() hooks run even when every
// test in it is skipped.
import { access, constants } from 'node:fs/promises';
import net from 'node:net';
import { delimiter, join } from 'node:path';
import * as nodeTest from 'node:test';
import type { HookFn, HookOptions, SuiteContext, TestFn, TestOptions } from 'node:test';

type SuiteFn = (s: SuiteContext) => void;

const IN_CI = process.env.CI === 'true';

/** What is missing for the suites being declared now (set only while a needs() body runs). */
let missing: string | undefined;

/**
 * Probes for something a test needs. Resolves to undefined when `probe`
 * succeeds, or to the reason to give (`needs NAME: what went wrong`) when it
 * throws or rejects. Call it at the top of the test file (top-level await).
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
 * when `reason` is a string, this module's it/test register every test as
 * skipped with that reason (failing with it under CI=true), and its hooks
 * are not registered.
 */
export function needs(reason: string | undefined, body: () => void): void {
  const outer = missing;
  missing = outer ?? reason;
  try {
    body();
  } finally {
    missing = outer;
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

function declareTest(real: typeof nodeTest.it, args: unknown[]): Promise<void> {
  if (missing === undefined) return (real as (...a: unknown[]) => Promise<void>)(...args);
  const reason = missing;
  const { name, options, fn } = testArgs(args);
  if (IN_CI)
    return real(name, options, () => {
      throw new Error(`CI=true, so this may not be skipped: ${reason}`);
    });
  return real(name, { ...options, skip: reason }, fn);
}

export function it(name: string, fn?: TestFn): Promise<void>;
export function it(name: string, options: TestOptions, fn?: TestFn): Promise<void>;
export function it(...args: unknown[]): Promise<void> {
  return declareTest(nodeTest.it, args);
}

export function test(name: string, fn?: TestFn): Promise<void>;
export function test(name: string, options: TestOptions, fn?: TestFn): Promise<void>;
export function test(...args: unknown[]): Promise<void> {
  return declareTest(nodeTest.test, args);
}

export function describe(name: string, fn: SuiteFn): Promise<void>;
export function describe(name: string, options: TestOptions, fn: SuiteFn): Promise<void>;
export function describe(name: string, second: TestOptions | SuiteFn, third?: SuiteFn): Promise<void> {
  const options = typeof second === 'function' ? {} : second;
  const fn = (typeof second === 'function' ? second : third)!;
  const reason = missing;
  if (reason === undefined) return nodeTest.describe(name, options, fn);
  return nodeTest.describe(name, options, (ctx) => {
    // A test declared here with node:test's own it() would run against what
    // is missing; say why it fails instead.
    if (!IN_CI)
      nodeTest.beforeEach(() => {
        throw new Error(
          `declared with node:test's own it/test, so it cannot be skipped (${reason}); declare it with it/test from test/helpers/requirements.js`,
        );
      });
    needs(reason, () => fn(ctx));
  });
}

function hook(real: typeof nodeTest.before): (fn?: HookFn, options?: HookOptions) => void {
  return (fn, options) => {
    if (missing === undefined) real(fn, options);
  };
}

export const before = hook(nodeTest.before);
export const after = hook(nodeTest.after);
export const beforeEach = hook(nodeTest.beforeEach);
export const afterEach = hook(nodeTest.afterEach);
