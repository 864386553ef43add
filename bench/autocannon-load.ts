// The fallback load generator when wrk is not installed: the same workload
// as the wrk script (load.ts), sent by autocannon from its own process.
//   node dist/bench/autocannon-load.js SPEC.json   (prints one RESULT line)
import { readFileSync } from 'node:fs';
import autocannon, { type Request } from 'autocannon';
import { shares, type LoadSpec } from './load.js';
import { plantBody } from './scenarios.js';

const spec = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as LoadSpec;
const { workload: w, tokens } = spec;
const [pList, pCreate] = shares(w);
const auth = tokens.map((t) => ({ authorization: `Bearer ${t}` }));
const pick = () => Math.floor(Math.random() * tokens.length);
let nextId = spec.firstId;
const created: [owner: number, id: number][] = [];
let oldest = 0;
const chains: string[] = [];
let seedAt = 0;

function mixed(req: Request): Request {
  const r = Math.random();
  const t = pick();
  if (r < pList) return { ...req, method: 'GET', path: `/plants?limit=${w.limit}`, headers: auth[t]!, body: '' };
  if (r < pCreate || created.length - oldest < 1000) {
    const id = ++nextId;
    created.push([t, id]);
    const headers = { ...auth[t]!, 'content-type': 'application/json' };
    return { ...req, method: 'POST', path: '/plants', headers, body: JSON.stringify(plantBody(id)) };
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
const instance = autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.seconds,
  timeout: 10,
  requests: [
    {
      setupRequest: w.page ? paging : mixed,
      onResponse: (_status, _body, _context, headers) => {
        const next = w.page ? /cursor=([^>&]+)/.exec(headers?.link ?? '')?.[1] : undefined;
        if (next) chains.push(next);
      },
    },
  ],
});
instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latencies.push(ms));
const r = await instance;
const cpu = process.cpuUsage(cpu0);
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
const result = {
  requests: r.requests.total,
  seconds: r.duration,
  errors: r.non2xx + r.errors + r.timeouts,
  p50Ms: pct(50),
  p99Ms: pct(99),
  cpuSeconds: (cpu.user + cpu.system) / 1e6,
};
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
process.exit(0);
