// The fallback load generator when wrk is not installed: the wrk script's workload (load.ts), sent by autocannon from
// its own process.
//   node dist/bench/autocannon-load.js SPEC.json   (prints one RESULT line)
import type { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { LoadResult, LoadSpec } from './load.js';
import { percentile } from './report.js';
import { plantBody, shares } from './scenarios.js';

// autocannon ships no types: the part of its API used here.
type Request = { method?: string; path?: string; headers?: Record<string, string>; body?: string };
type Result = { requests: { total: number }; duration: number; non2xx: number; errors: number; timeouts: number };
const autocannon = createRequire(import.meta.url)('autocannon') as (o: object) => EventEmitter & PromiseLike<Result>;

const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as LoadSpec;
const { workload: w, tokens } = spec;
const [pList, pCreate] = shares(w);
const auth = tokens.map((t) => ({ authorization: `Bearer ${t}` }));
let [nextId, oldest, seedAt] = [spec.firstId, 0, 0];
const created: [owner: number, id: number][] = [];
const chains: string[] = [];

function mixed(req: Request): Request {
  const [r, t] = [Math.random(), Math.floor(Math.random() * tokens.length)];
  if (r < pList) return { ...req, method: 'GET', path: `/plants?limit=${w.limit}`, headers: auth[t]!, body: '' };
  if (r < pCreate || created.length - oldest < 1000) {
    created.push([t, ++nextId]);
    const headers = { ...auth[t]!, 'content-type': 'application/json' };
    return { ...req, method: 'POST', path: '/plants', headers, body: JSON.stringify(plantBody(nextId)) };
  }
  const [owner, id] = created[oldest++]!;
  return { ...req, method: 'DELETE', path: `/plants/${id}`, headers: auth[owner]!, body: '' };
}

function paging(req: Request): Request {
  const cursor = chains.pop() ?? spec.seeds[seedAt++ % spec.seeds.length]!;
  const path = `/plants?limit=${w.limit}${cursor === '' ? '' : `&cursor=${cursor}`}`;
  return { ...req, method: 'GET', path, headers: auth[0]!, body: '' };
}

const latencies: number[] = [];
const cpu0 = process.cpuUsage();
const onResponse = (_s: number, _b: string, _c: unknown, headers?: Record<string, string>) => {
  const next = w.page ? /cursor=([^>&]+)/.exec(headers?.link ?? '')?.[1] : undefined;
  if (next) chains.push(next);
};
const run = autocannon({
  ...{ url: spec.url, connections: spec.connections, duration: spec.seconds, timeout: 10 },
  requests: [{ setupRequest: w.page ? paging : mixed, onResponse }],
});
run.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms));
const r = await run;
const cpu = process.cpuUsage(cpu0);
const result: LoadResult = {
  requests: r.requests.total,
  seconds: r.duration,
  errors: r.non2xx + r.errors + r.timeouts,
  p99Ms: percentile(latencies, 0.99),
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
};
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
process.exit(0);
