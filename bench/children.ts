// Every process the bench starts is spawned through here, into a process
// group of its own, so that the whole tree (a clustered service's workers
// included) can be stopped by group id, on success, on error and on Ctrl-C.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

const live = new Set<ChildProcess>();

export function spawnTracked(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  live.add(child);
  child.once('exit', () => live.delete(child));
  child.once('error', () => live.delete(child));
  return child;
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** SIGTERM, then SIGKILL for whatever has not exited after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  signalGroup(child, 'SIGTERM');
  const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
  // Workers of a cluster may outlive their primary by a moment.
  signalGroup(child, 'SIGKILL');
  live.delete(child);
}

export async function stopAll(graceMs = 3000): Promise<void> {
  await Promise.all([...live].map((c) => stopChild(c, graceMs)));
}

/** For process.on('exit'), where nothing asynchronous runs any more. */
export function killAllNow(): void {
  for (const child of live) signalGroup(child, 'SIGKILL');
  live.clear();
}
