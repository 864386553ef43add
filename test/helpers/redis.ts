// Redis for the rate-limit suites: a PING probe, key prefixes of a test's own,
// a private redis-server that a test stops and starts, and requests that a
// cluster's workers take in turn.
import net from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { delay, httpRequest, type HttpResponse, type ServerProcess } from './server.js';

/** Sends PING to a Redis server; resolves with why it did not answer PONG, or undefined. */
export function redisProblem(url: string): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port || 6379), hostname);
    let data = '';
    const done = (problem: string | undefined) => {
      socket.destroy();
      resolve(problem);
    };
    socket.setTimeout(2000, () => done(`Redis at ${url} did not answer within 2 s`));
    socket.on('error', (error) => done(`Redis at ${url} is unreachable: ${error.message}`));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => {
      data += d.toString();
      if (data.includes('\r\n')) done(data.startsWith('+PONG') ? undefined : `Redis at ${url} answered ${data.trim()}`);
    });
  });
}

/** A key prefix of our own, so that test runs sharing a Redis never count into each other. */
export const testPrefix = () => `plant-store-test-${process.pid}-${randomBytes(4).toString('hex')}:`;

/** Requests one at a time, each on a new connection, so that the workers of a cluster take turns. */
export async function sequentially(n: number, url: string, token: string): Promise<HttpResponse[]> {
  const out: HttpResponse[] = [];
  for (let i = 0; i < n; i++) out.push(await httpRequest(url, { token }));
  return out;
}

export const statuses = (responses: HttpResponse[]) => {
  const counts: Record<number, number> = {};
  for (const r of responses) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
};

/** The pids that wrote a request line for `url` (the log is buffered: wait for them). */
export async function servedBy(server: ServerProcess, url: string, expected: number): Promise<Set<unknown>> {
  const pids = () =>
    new Set(
      server
        .logLines()
        .filter((l) => l.msg === 'request completed' && l.url === url)
        .map((l) => l.pid),
    );
  await server.waitForOutput(() => pids().size >= expected, 5000).catch(() => {});
  return pids();
}

/** A private redis-server on a fixed port that the test stops and starts again. */
export class PrivateRedis {
  #child: ChildProcess | undefined;
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no'],
      { stdio: 'ignore' },
    );
    this.#child = child;
    const deadline = Date.now() + 10_000;
    while ((await redisProblem(this.url)) !== undefined) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`redis-server did not start on ${this.port}`);
      await delay(50);
    }
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}
