// Live-changes cost on SQLite: the time from a create's answer to its event
// on an open stream (p50/p99), and create throughput with 0 and with 100
// open streams. The server runs in a child process (the real CLI); this
// process is the client. Run: npm run build && node dist/scripts/event-latency.js
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEventStream } from '../packages/client/src/event-stream.js';

const CLI = fileURLToPath(new URL('../src/cli/bin.js', import.meta.url));
const CREATES = Number(process.env.CREATES ?? 1000);
const LOAD_MS = Number(process.env.LOAD_MS ?? 5000);

const dir = mkdtempSync(join(tmpdir(), 'plant-store-events-'));
const db = join(dir, 'plants.db');
const env = { ...process.env, LOG_LEVEL: 'warn', PLANTS_EVENTS_MAX_STREAMS_PER_OWNER: '200' };

function run(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args, '--db', db], { env });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited ${code}`))));
  });
}

await run(['migrate']);
const token = (await run(['token', 'create', '--owner', 'bench'])).match(/plnt_[A-Za-z0-9_-]{43}/)![0];
const server = spawn(process.execPath, [CLI, 'serve', '--db', db, '--port', '0'], {
  env: { ...env, LOG_LEVEL: 'info' },
});
const base = await new Promise<string>((resolve) => {
  let text = '';
  server.stdout.on('data', (d: Buffer) => {
    text += d.toString();
    const m = /https?:\/\/127\.0\.0\.1:\d+/.exec(text);
    if (m) resolve(m[0]);
  });
});
const auth = { authorization: `Bearer ${token}` };
let nextId = 1;
const create = async () => {
  const res = await fetch(`${base}/plants`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: `{"id":${nextId++},"name":"p"}`,
  });
  await res.arrayBuffer();
  return performance.now();
};

async function openStream(): Promise<{ events: AsyncGenerator<{ data: string }>; close(): void }> {
  const controller = new AbortController();
  const res = await fetch(`${base}/plants/events`, { headers: auth, signal: controller.signal });
  return { events: readEventStream(res.body!), close: () => controller.abort() };
}

const pct = (xs: number[], p: number) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

// Latency: one create at a time, each event awaited.
const stream = await openStream();
const latencies: number[] = [];
for (let i = 0; i < CREATES; i++) {
  const answered = await create();
  await stream.events.next();
  latencies.push(performance.now() - answered);
}
stream.close();

async function throughput(): Promise<number> {
  let done = 0;
  const until = performance.now() + LOAD_MS;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < until) {
        await create();
        done++;
      }
    }),
  );
  return done / (LOAD_MS / 1000);
}

const idle = await throughput();
const streams = await Promise.all(Array.from({ length: 100 }, () => openStream()));
// Every stream is read, as a real client would.
for (const s of streams)
  void (async () => {
    try {
      for await (const _ of s.events);
    } catch {
      /* closed */
    }
  })();
const busy = await throughput();
for (const s of streams) s.close();
server.kill('SIGTERM');
await new Promise((resolve) => server.once('exit', resolve));
rmSync(dir, { recursive: true, force: true });

console.log(
  `create answered -> event received, ${CREATES} creates: p50 ${pct(latencies, 0.5).toFixed(2)} ms, p99 ${pct(latencies, 0.99).toFixed(2)} ms, max ${Math.max(...latencies).toFixed(2)} ms`,
);
console.log(
  `creates/s, 16 clients: no stream ${idle.toFixed(0)}, 100 open streams ${busy.toFixed(0)} (ratio ${(busy / idle).toFixed(2)})`,
);
