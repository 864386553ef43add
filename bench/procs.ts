// Starting, pinning, watching and stopping the processes of a run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';

const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

/** Servers on CPU 0, the load generator on CPU 1, so neither steals the other's time. */
export const pinning: { on: boolean; why?: string } =
  availableParallelism() < 2
    ? { on: false, why: 'fewer than 2 CPUs' }
    : spawnSync('taskset', ['-V']).status === 0
      ? { on: true }
      : { on: false, why: 'taskset not found (util-linux)' };
export const [SERVER_CPU, LOAD_CPU] = ['0', '1'];

/** Starts `command` on `cpu` (unpinned without one), its output appended to `log`, or piped. */
export function start(cpu: string | undefined, command: string, args: string[], log?: string, env = process.env) {
  const pin = pinning.on && cpu !== undefined;
  const out = log === undefined ? 'pipe' : openSync(log, 'a');
  const child = spawn(pin ? 'taskset' : command, pin ? ['-c', cpu, command, ...args] : args, {
    stdio: ['ignore', out, out],
    env,
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Everything the process writes to stdout and stderr (started without a log), and its exit code. */
export function output(child: ChildProcess): Promise<[code: number | null, out: string]> {
  let out = '';
  for (const s of [child.stdout!, child.stderr!]) s.setEncoding('utf8').on('data', (d: string) => (out += d));
  return new Promise((resolve) => child.once('exit', (code) => resolve([code, out])));
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
      const { port } = s.address() as AddressInfo;
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
    const status = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).then(
      async (res) => (await res.arrayBuffer(), res.status),
      () => 0,
    );
    if (status === 200) return;
    if (status !== 0 && status !== 503) throw new Error(`${what} answered ${status} to ${url}`);
    if (Date.now() > deadline) throw new Error(`${what} did not answer ${url} within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** /proc/PID/stat from its second field on (comm, state, ppid, …), or undefined once the process is gone. */
export function stat(pid: number): string[] | undefined {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const end = s.lastIndexOf(')');
    return [s.slice(s.indexOf('(') + 1, end), ...s.slice(end + 2).split(' ')];
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds (user + system, all threads) a process has used so far, with
 * `reaped` also those of its children that have exited; NaN once it is gone.
 * /proc counts in USER_HZ, which is 100 on Linux.
 */
export function cpuSeconds(pid: number, reaped = false): number {
  const f = stat(pid)?.map(Number);
  return f ? (f[12]! + f[13]! + (reaped ? f[14]! + f[15]! : 0)) / 100 : NaN;
}
