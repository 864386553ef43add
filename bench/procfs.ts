// Linux /proc readers: the port a process listens on (the service is started
// with --port 0 and, at --log-level warn, does not log it) and its peak RSS.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** `pid` and every process below it (cluster workers). */
export function processTree(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // The command name in field 2 may contain spaces; fields after ")" are fixed.
    const stat = readOrEmpty(`/proc/${entry}/stat`);
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (Number.isFinite(ppid)) parentOf.set(Number(entry), ppid);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) {
    for (const [child, parent] of parentOf) if (parent === tree[i]) tree.push(child);
  }
  return tree;
}

function statusField(pid: number, field: string): string | undefined {
  return new RegExp(`^${field}:\\s*(.+)$`, 'm').exec(readOrEmpty(`/proc/${pid}/status`))?.[1]?.trim();
}

/**
 * Peak resident memory (VmHWM) in KiB, summed over the process tree. For a
 * cluster this is the sum of each process's own peak, an upper bound on the
 * peak of the sum.
 */
export function peakRssKiB(pid: number): number {
  let total = 0;
  for (const p of processTree(pid)) total += Number.parseInt(statusField(p, 'VmHWM') ?? '0', 10) || 0;
  return total;
}

/** The CPUs a process may run on, e.g. "0" or "0-1", as the kernel reports it. */
export function allowedCpus(pid: number): string | undefined {
  return statusField(pid, 'Cpus_allowed_list');
}

function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  let fds: string[] = [];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // The fd closed while we looked.
    }
  }
  return inodes;
}

/** A TCP port the process tree is listening on, if any yet. */
export function listeningPort(pid: number): number | undefined {
  const inodes = new Set<string>();
  for (const p of processTree(pid)) for (const i of socketInodes(p)) inodes.add(i);
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readOrEmpty(table).split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // cols: sl local_address rem_address st ... inode (10th)
      if (cols[3] === '0A' && inodes.has(cols[9] ?? '')) return Number.parseInt(cols[1]!.split(':')[1]!, 16);
    }
  }
  return undefined;
}

/** CPU time (user + system, in clock ticks) used so far by these processes. */
export function cpuTicks(pids: Iterable<number>): number {
  let ticks = 0;
  for (const p of pids) {
    const stat = readOrEmpty(`/proc/${p}/stat`);
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    ticks += (Number(fields[11]) || 0) + (Number(fields[12]) || 0);
  }
  return ticks;
}

/** CPU time (clock ticks) used so far by `pid` and the processes below it. */
export function treeCpuTicks(pid: number): number {
  return cpuTicks(processTree(pid));
}

/**
 * Busy clock ticks of the whole machine so far, steal included (time the
 * hypervisor gave to other guests). Interrupt time is left out: most of it is
 * the loopback traffic of the bench itself, which no process is charged for.
 */
export function machineBusyTicks(): number {
  const cpu = readOrEmpty('/proc/stat').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const [user = 0, nice = 0, system = 0, , , , , steal = 0] = cpu;
  return user + nice + system + steal;
}

function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

/** Clock ticks per second of the numbers above (USER_HZ). */
export const TICKS_PER_SECOND = clockTicks();
