// CPU pinning with taskset: the server on CPU 0, the load generator on CPU 1,
// so that the two do not steal each other's time slices unpredictably. On a
// machine with fewer than two CPUs, or without taskset, nothing is pinned and
// the report says so.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface Pinning {
  enabled: boolean;
  /** Why pinning is off, when it is. */
  reason?: string;
  cpuCount: number;
  /** The CPU list for a server with this many processes. */
  serverCpus(workers: number): string;
  loadCpus: string;
  /** The command line that starts `command args` restricted to `cpus`. */
  wrap(cpus: string, command: string, args: readonly string[]): [string, string[]];
}

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export function detectPinning(disabled: boolean): Pinning {
  const cpuCount = availableParallelism();
  const reason = disabled
    ? 'disabled by --no-pin'
    : cpuCount < 2
      ? `only ${cpuCount} CPU`
      : !hasTaskset()
        ? 'taskset not found'
        : undefined;
  const enabled = reason === undefined;
  return {
    enabled,
    ...(reason ? { reason } : {}),
    cpuCount,
    // Several workers cannot share one CPU usefully, so a clustered server
    // gets every CPU, the load generator's included.
    serverCpus: (workers) => (workers > 1 ? `0-${Math.min(cpuCount, workers) - 1}` : '0'),
    loadCpus: '1',
    wrap: (cpus, command, args) => (enabled ? ['taskset', ['-c', cpus, command, ...args]] : [command, [...args]]),
  };
}
