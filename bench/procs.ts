// Starting, pinning, watching and stopping the processes of a run.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { availableParallelism } from 'node:os';

const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((c) => c.kill('SIGKILL')));

/** Servers on CPU 0, the load generator on CPU 1, so neither steals the other's time; or why not. */
export const unpinned =
  availableParallelism() < 2
    ? 'fewer than 2 CPUs'
    : spawnSync('taskset', ['-V']).status === 0
      ? undefined
      : 'taskset not found (util-linux)';
export const [SERVER_CPU, LOAD_CPU] = ['0', '1'];

/** Starts `command` on `cpu` (unpinned without one), its output appended to `log`, or piped. */
export function start(cpu: string | undefined, command: string, args: string[], log?: string, env = process.env) {
  const out = log === undefined ? 'pipe' : openSync(log, 'a');
  const [cmd, argv] = cpu && !unpinned ? ['taskset', ['-c', cpu, command, ...args]] : [command, args];
  const child = spawn(cmd, argv, { stdio: ['ignore', out, out], env });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** What a process started without a log printed, once it has exited 0 and `read` finds its result in it. */
export async function result<T>(child: ChildProcess, what: string, read: (out: string) => T | undefined): Promise<T> {
  let out = '';
  for (const s of [child.stdout!, child.stderr!]) s.setEncoding('utf8').on('data', (d: string) => (out += d));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  const found = code === 0 ? read(out) : undefined;
  if (found === undefined) throw new Error(`${what} failed (exit ${String(code)}): ${out.slice(-2000)}`);
  return found;
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
  clearTimeout(timer);
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve, reject) => s.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** Waits until `url` answers 200 with this token (503: not yet), or the process exits. */
export async function ready(child: ChildProcess, url: string, token: string, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}`);
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined); // not up yet
    await res?.arrayBuffer();
    if (res?.status === 200) return;
    if (res && res.status !== 503) throw new Error(`${what} answered ${res.status} to ${url}`);
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
 * CPU seconds (user + system, all threads) a process has used so far, with `reaped` also those of its children that
 * have exited; NaN once it is gone. /proc counts in USER_HZ, which is 100 on Linux.
 */
export function cpuSeconds(pid: number, reaped = false): number {
  const f = stat(pid)?.map(Number);
  return f ? (f[12]! + f[13]! + (reaped ? f[14]! + f[15]! : 0)) / 100 : NaN;
}
