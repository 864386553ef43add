// Starting, pinning, watching and stopping the processes of a run.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism } from 'node:os';

const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Servers on CPU 0, the load generator on CPU 1, so neither steals the other's time. */
export const pinning = ((): { on: boolean; why?: string } => {
  if (availableParallelism() < 2) return { on: false, why: 'fewer than 2 CPUs' };
  if (!hasTaskset()) return { on: false, why: 'taskset not found (util-linux)' };
  return { on: true };
})();
export const SERVER_CPU = '0';
export const LOAD_CPU = '1';

export function start(
  cpu: string,
  command: string,
  args: string[],
  opts: { log?: string; env?: NodeJS.ProcessEnv; noPin?: boolean } = {},
): ChildProcess {
  const pin = pinning.on && !opts.noPin;
  const out = opts.log === undefined ? 'pipe' : openSync(opts.log, 'a');
  const child = spawn(pin ? 'taskset' : command, pin ? ['-c', cpu, command, ...args] : args, {
    stdio: ['ignore', out, out],
    env: opts.env ?? process.env,
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.once('error', reject);
  });
}

/** Waits until `url` answers 200 with this token (503: not yet), or the process exits. */
export async function ready(child: ChildProcess, url: string, token: string, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}`);
    try {
      const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      if (res.ok) return;
      if (res.status !== 503) throw new Error(`${what} answered ${res.status} to ${url}`);
    } catch (error) {
      if ((error as Error).message.includes(' answered ')) throw error;
    }
    if (Date.now() > deadline) throw new Error(`${what} did not answer ${url} within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** CPU seconds (user + system, all threads) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  } catch {
    return 100;
  }
})();
