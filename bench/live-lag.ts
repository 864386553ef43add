// How long a create takes to reach a live stream held by another process:
// servers as real processes, plants created through one, GET /plants/events
// held on the other, the time from the create's answer to its event.
//
//   npm run bench:live -- [--samples N] [--pg URL] [--poll-ms MS]
//
// Setups, on SQLite and with --pg also on PostgreSQL: the stream on the
// process that wrote (for comparison), two instances on one file or
// database, and one instance with --workers 2. The load average is printed
// with the figures: on a busy machine the lag is mostly waiting for a core. With --workers the
// process that answered is told by the X-Request-Id prefix, which is per
// process: only creates answered by the worker that does not hold the stream
// count.
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { issueToken } from '../src/auth/tokens.js';
import { openStore } from '../src/store/open-store.js';
import { freePort, ready, start, stop } from './procs.js';
import { scratchDatabase } from './stores.js';

const { values: o } = parseArgs({
  options: {
    samples: { type: 'string', default: '400' },
    pg: { type: 'string' },
    'poll-ms': { type: 'string', default: '100' },
  },
});
const SAMPLES = Number(o.samples);
const BIN = join(import.meta.dirname, '../src/cli/bin.js');

const prefixOf = (id: string | string[] | undefined) => String(id).split('-')[0]!;

/** A live stream: the time each plant's created event arrived, by plant id. */
async function openStream(url: string, token: string) {
  const arrived = new Map<number, number>();
  const waiting = new Map<number, () => void>();
  const res = await new Promise<http.IncomingMessage>((resolve, reject) =>
    http
      .get(`${url}/plants/events`, { agent: false, headers: { authorization: `Bearer ${token}` } }, resolve)
      .on('error', reject),
  );
  if (res.statusCode !== 200) throw new Error(`the stream answered ${res.statusCode}`);
  let buffer = '';
  res.setEncoding('utf8').on('data', (chunk: string) => {
    const now = performance.now();
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const m = /^data: .*"id":(\d+)/m.exec(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (!m) continue;
      const id = Number(m[1]);
      arrived.set(id, now);
      waiting.get(id)?.();
    }
  });
  const event = (id: number) =>
    arrived.has(id)
      ? Promise.resolve(arrived.get(id)!)
      : new Promise<number>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no event for plant ${id} within 10 s`)), 10_000);
          waiting.set(id, () => {
            clearTimeout(timer);
            waiting.delete(id);
            resolve(arrived.get(id)!);
          });
        });
  return { event, processId: prefixOf(res.headers['x-request-id']), close: () => res.destroy() };
}

/** One create on a connection of its own; when it was answered and which process answered. */
function create(url: string, token: string, id: number): Promise<{ at: number; processId: string }> {
  const body = JSON.stringify({ id, name: `lag ${id}` });
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}/plants`,
      {
        method: 'POST',
        agent: false,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume().once('end', () => {
          if (res.statusCode !== 200) reject(new Error(`create answered ${res.statusCode}`));
          else resolve({ at: performance.now(), processId: prefixOf(res.headers['x-request-id']) });
        });
      },
    );
    req.on('error', reject).end(body);
  });
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;

/** Starts `serve` with these arguments on a free port; its URL and how to stop it. */
async function serve(db: string, token: string, args: string[]) {
  const port = await freePort();
  const child = start(
    undefined,
    process.execPath,
    [BIN, 'serve', '--db', db, '--port', String(port), ...args],
    '/dev/null',
  );
  const url = `http://127.0.0.1:${port}`;
  await ready(child, `${url}/plants?limit=1`, token, 'serve');
  return { url, stop: () => stop(child) };
}

/** Creates through `writeUrl` until SAMPLES of them were answered by another process than the stream's (or by its own, `same`). */
async function measure(streamUrl: string, writeUrl: string, token: string, same: boolean): Promise<number[]> {
  const stream = await openStream(streamUrl, token);
  const lags: number[] = [];
  try {
    for (let id = 1; lags.length < SAMPLES; id++) {
      if (id > 20 * SAMPLES)
        throw new Error(`only ${lags.length} of ${id - 1} creates were answered by another process`);
      const { at, processId } = await create(writeUrl, token, id);
      const arrived = await stream.event(id);
      if ((processId === stream.processId) === same) lags.push(Math.max(0, arrived - at));
      // A random pause, so that creates fall anywhere in the poll's period.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
    }
  } finally {
    stream.close();
  }
  return lags.sort((a, b) => a - b);
}

async function setup(name: string, db: string, token: string, instances: string[][], same = false): Promise<void> {
  const servers = [];
  try {
    for (const args of instances) servers.push(await serve(db, token, [...args, '--events-poll-ms', o['poll-ms']!]));
    const lags = await measure(servers.at(-1)!.url, servers[0]!.url, token, same);
    const f = (ms: number) => ms.toFixed(1).padStart(7);
    console.log(
      `${name.padEnd(28)} ${String(lags.length).padStart(7)} ${f(percentile(lags, 0.5))} ${f(percentile(lags, 0.99))} ${f(lags.at(-1)!)}`,
    );
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
console.log(`create-to-event lag on another process, ms (poll every ${o['poll-ms']} ms; load average ${load()})`);
console.log(`${'setup'.padEnd(28)} samples     p50     p99     max`);
// The first of each store, for comparison: the stream on the process that wrote, which needs no word between processes.
const SETUPS = [
  ['same process', [[]], true],
  ['2 instances', [[], []], false],
  ['--workers 2', [['--workers', '2']], false],
] as const;
const dir = mkdtempSync(join(tmpdir(), 'plant-lag-'));
try {
  for (const [name, instances, same] of SETUPS) {
    // A file of its own each time: one setup's processes never hear another's.
    const file = join(dir, `${name.replace(/\W+/g, '-')}.db`);
    const store = await openStore({ db: file, durability: 'full', pgPoolSize: 1, pgStatementTimeoutMs: 0 });
    const { token } = await issueToken(store.tokens, { owner: 'lag' }).finally(() => store.close());
    await setup(
      `sqlite, ${name}`,
      file,
      token,
      instances.map((a) => [...a]),
      same,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
if (o.pg) {
  for (const [name, instances, same] of SETUPS) {
    const db = await scratchDatabase(o.pg, 1, 0);
    try {
      await setup(
        `postgres, ${name}`,
        db.url,
        db.tokens[0]!,
        instances.map((a) => [...a]),
        same,
      );
    } finally {
      await db.drop();
    }
  }
}
console.log(`load average at the end: ${load()}`);
