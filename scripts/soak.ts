// npm run soak: the server as `npm start` runs it, under 10 minutes of mixed
// load (lists, creates, deletes, bad requests across many owners). Samples the
// server's resident memory and open file descriptors, and reports their slope
// over the run and every unexpected answer. Flags: --minutes N, --connections N.
import { spawn } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { START_NODE_FLAGS } from './npm-start.js';

const { values } = parseArgs({
  options: { minutes: { type: 'string', default: '10' }, connections: { type: 'string', default: '16' } },
});
const minutes = Number(values.minutes);
const connections = Number(values.connections);
const OWNERS = 20;

const dir = mkdtempSync(join(tmpdir(), 'plant-store-soak-'));
const log = openSync(join(dir, 'server.log'), 'w');
const cli = new URL('../src/cli/bin.js', import.meta.url).pathname;
const serve = [cli, 'serve', '--port', '0', '--db', join(dir, 'plants.db')];
const server = spawn(process.execPath, [...START_NODE_FLAGS, ...serve], { stdio: ['ignore', log, 'pipe'] });
let stderr = '';
server.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));

async function waitFor<T>(get: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const url = await waitFor(
  () => /http:\/\/127\.0\.0\.1:\d+/.exec(readFileSync(join(dir, 'server.log'), 'utf8'))?.[0],
  'the server',
);
const admin = await waitFor(() => /plnt_[A-Za-z0-9_-]{43}/.exec(stderr)?.[0], 'the first token');

// One token per owner, made through the CLI as an operator would.
const tokens: string[] = [];
for (let i = 0; i < OWNERS; i++) {
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn(process.execPath, [cli, 'token', 'create', '--owner', `soak-${i}`, '--db', join(dir, 'plants.db')]);
    let text = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
    p.on('close', (code) => (code === 0 ? resolve(text.trim()) : reject(new Error(`token create exited ${code}`))));
  });
  tokens.push(out);
}
void admin;

function sample(): { rss: number; fds: number } {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
  return { rss, fds: readdirSync(`/proc/${server.pid}/fd`).length };
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

const counts = new Map<string, number>();
const unexpected: string[] = [];
const count = (key: string) => counts.set(key, (counts.get(key) ?? 0) + 1);
const end = Date.now() + minutes * 60_000;
let nextId = 0;
const live: bigint[][] = tokens.map(() => []);

async function one(): Promise<void> {
  const who = Math.floor(Math.random() * OWNERS);
  const auth = { authorization: `Bearer ${tokens[who]}` };
  const r = Math.random();
  let expected: number[];
  let res: Response;
  if (r < 0.7) {
    expected = [200];
    res = await fetch(`${url}/plants?limit=${1 + Math.floor(Math.random() * 20)}`, { headers: auth });
  } else if (r < 0.88) {
    const id = BigInt(++nextId) * 1_000_003n;
    expected = [200];
    res = await fetch(`${url}/plants`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: `{"id":${id},"name":"soak ${id}","tag":"t"}`,
    });
    if (res.status === 200) live[who]!.push(id);
  } else if (r < 0.97) {
    const id = live[who]!.shift() ?? 1n;
    expected = [204, 404];
    res = await fetch(`${url}/plants/${id}`, { method: 'DELETE', headers: auth });
  } else {
    expected = [400];
    res = await fetch(`${url}/plants`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"id":1.5}',
    });
  }
  await res.arrayBuffer();
  count(String(res.status));
  if (!expected.includes(res.status)) unexpected.push(`${res.status} on ${res.url}`);
}

const samples: { t: number; rss: number; fds: number }[] = [];
const started = Date.now();
const sampler = setInterval(() => samples.push({ t: (Date.now() - started) / 60_000, ...sample() }), 5000);
samples.push({ t: 0, ...sample() });
let errors = 0;
await Promise.all(
  Array.from({ length: connections }, async () => {
    while (Date.now() < end) {
      try {
        await one();
      } catch (error) {
        errors++;
        if (errors <= 5) unexpected.push(`request failed: ${(error as Error).message}`);
      }
    }
  }),
);
clearInterval(sampler);
samples.push({ t: (Date.now() - started) / 60_000, ...sample() });
server.kill('SIGTERM');
const exit = await new Promise<number | null>((r) => server.on('close', r));

// The first minute is warm-up (JIT, caches, SQLite page cache); the slope is taken over the rest.
const steady = samples.filter((s) => s.t >= Math.min(1, minutes / 4));
const total = [...counts.values()].reduce((a, b) => a + b, 0);
const report = {
  minutes,
  connections,
  requests: total,
  perSecond: Math.round(total / ((Date.now() - started) / 1000)),
  statuses: Object.fromEntries([...counts].sort()),
  unexpected: unexpected.length,
  failedRequests: errors,
  rssMiB: { start: samples[0]!.rss, end: samples.at(-1)!.rss, max: Math.max(...samples.map((s) => s.rss)) },
  rssSlopeMiBPerMinute: Number(
    slope(
      steady.map((s) => s.t),
      steady.map((s) => s.rss),
    ).toFixed(3),
  ),
  fds: { start: samples[0]!.fds, end: samples.at(-1)!.fds, max: Math.max(...samples.map((s) => s.fds)) },
  fdSlopePerMinute: Number(
    slope(
      steady.map((s) => s.t),
      steady.map((s) => s.fds),
    ).toFixed(3),
  ),
  serverExit: exit,
};
console.log(JSON.stringify(report, null, 2));
for (const u of unexpected.slice(0, 10)) console.log(`unexpected: ${u}`);
rmSync(dir, { recursive: true, force: true });
process.exit(unexpected.length === 0 && errors === 0 && exit === 0 ? 0 : 1);
