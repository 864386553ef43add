// Starting the two servers under test the same way: spawned (pinned when
// possible), port found, then probed with an authenticated list request
// before any load is sent.
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { spawnTracked, stopChild } from './children.js';
import type { Pinning } from './pinning.js';
import { allowedCpus, listeningPort, peakRssKiB } from './procfs.js';

export interface RunningServer {
  label: string;
  pid: number;
  url: string;
  /** The CPUs the kernel lets the server's main process use. */
  cpus: string | undefined;
  peakRssKiB(): number;
  /** Log lines at level error or fatal, and anything on stderr, since start. */
  problems(): string[];
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 60_000;
const TAIL_LINES = 40;

// Settings the service reads from the environment; the bench passes what it
// means by flags, so that a developer's shell does not change what is measured.
const SERVICE_ENV = /^(HOST|PORT|DATABASE_URL|LOG_LEVEL|PLANTS_.*)$/;

function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!SERVICE_ENV.test(k)) env[k] = v;
  return { ...env, ...extra };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function probe(url: string, token: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/plants?limit=1`, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    if (res.status === 200) return true;
    throw new Error(`probe answered ${res.status}`);
  } catch (error) {
    if ((error as Error).message.startsWith('probe answered')) throw error;
    return false;
  }
}

function watchOutput(child: ChildProcess, onListening: (url: string) => void) {
  const tail: string[] = [];
  const problems: string[] = [];
  const keep = (line: string) => {
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  };
  // A problem is a log line at level error (50) or above, or anything on
  // either stream that is not a log line at all.
  const onLine = (line: string) => {
    keep(line);
    const url = /Server listening at (http:\/\/[^\s"]+)/.exec(line)?.[1];
    if (url) onListening(url);
    if (line.trim() === '') return;
    let level: number | undefined;
    try {
      level = (JSON.parse(line) as { level?: number }).level;
    } catch {
      // Not a log line.
    }
    if (level === undefined || level >= 50) problems.push(line);
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  return { tail, problems };
}

export async function startServer(opts: {
  label: string;
  args: string[];
  cpus: string;
  pinning: Pinning;
  token: string;
  env?: Record<string, string>;
}): Promise<RunningServer> {
  const [command, args] = opts.pinning.wrap(opts.cpus, process.execPath, opts.args);
  const child = spawnTracked(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv(opts.env ?? {}) });
  let logged: string | undefined;
  const out = watchOutput(child, (url) => (logged ??= url));
  let exit: string | undefined;
  child.once('exit', (code, signal) => (exit = `exited with ${signal ?? code}`));
  const fail = (why: string) => {
    void stopChild(child);
    return new Error(`${opts.label} ${why}\n--- last output ---\n${out.tail.join('\n')}`);
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  let url: string | undefined;
  while (!url) {
    if (exit) throw fail(exit);
    if (Date.now() > deadline) throw fail('did not start listening in time');
    const port = logged ? undefined : listeningPort(child.pid!);
    url = logged ?? (port ? `http://127.0.0.1:${port}` : undefined);
    if (!url) await sleep(50);
  }
  for (;;) {
    let ready: boolean;
    try {
      ready = await probe(url, opts.token);
    } catch (error) {
      throw fail((error as Error).message);
    }
    if (ready) break;
    if (exit) throw fail(exit);
    if (Date.now() > deadline) throw fail(`did not answer ${url}/plants in time`);
    await sleep(50);
  }
  const pid = child.pid!;
  return {
    label: opts.label,
    pid,
    url,
    cpus: allowedCpus(pid),
    peakRssKiB: () => peakRssKiB(pid),
    problems: () => [...out.problems],
    stop: () => stopChild(child),
  };
}
