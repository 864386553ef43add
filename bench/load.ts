// The load generator, run as its own process (pinned to its own CPU when
// possible) so that sending requests never competes with the orchestrator's
// event loop. It stays up for the whole scenario, so its JIT stays warm and
// its id counter runs on across rounds: argv[2] is a LoadSpec, BENCH_TOKEN
// the token; each line on stdin ({"durationS": n}) runs one round and
// answers one RoundResult line on stdout. Exits when stdin closes.
import { createInterface } from 'node:readline';
import autocannon, { type Request } from 'autocannon';
import { LatencyHistogram } from './histogram.js';
import type { LoadSpec, RoundCommand, RoundResult, Workload } from './load-types.js';
import { plantFor } from './plant-data.js';

function buildRequests(workload: Workload, auth: Record<string, string>): Request[] {
  let next = 'firstId' in workload ? workload.firstId : 0;
  const json = { ...auth, 'content-type': 'application/json' };
  // A fresh headers object per built request: autocannon writes Content-Length
  // into the headers object it is given.
  const create = (): Request => ({
    method: 'POST',
    path: '/plants',
    setupRequest: (req) => ({
      ...req,
      method: 'POST',
      path: '/plants',
      headers: { ...json },
      body: JSON.stringify(plantFor(next++)),
    }),
  });
  switch (workload.kind) {
    case 'list':
      return [{ method: 'GET', path: `/plants?limit=${workload.limit}`, headers: auth }];
    case 'create':
      return [create()];
    case 'delete':
      return [
        {
          method: 'DELETE',
          path: '/plants/0',
          setupRequest: (req) => ({ ...req, method: 'DELETE', path: `/plants/${next++}`, headers: { ...auth } }),
        },
      ];
    case 'mix': {
      // Each connection cycles through this sequence, so the share of
      // creates is exact rather than random.
      const list: Request = { method: 'GET', path: `/plants?limit=${workload.limit}`, headers: auth };
      return [...Array.from({ length: workload.createEvery - 1 }, () => ({ ...list })), create()];
    }
  }
}

async function round(spec: LoadSpec, requests: Request[], durationS: number): Promise<RoundResult> {
  const latency = new LatencyHistogram();
  const cpuBefore = process.cpuUsage();
  const instance = autocannon({
    url: spec.url,
    connections: spec.connections,
    duration: durationS,
    timeout: 10,
    requests,
  });
  instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => latency.record(ms));
  const r = await instance;
  const cpu = process.cpuUsage(cpuBefore);
  const statusCounts: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(r.statusCodeStats)) statusCounts[code] = count;
  return {
    requests: r.requests.total,
    durationS: r.duration,
    non2xx: r.non2xx,
    socketErrors: r.errors,
    timeouts: r.timeouts,
    statusCounts,
    latency: latency.toJSON(),
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

const spec = JSON.parse(process.argv[2] ?? '') as LoadSpec;
const requests = buildRequests(spec.workload, { authorization: `Bearer ${process.env.BENCH_TOKEN ?? ''}` });
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const { durationS } = JSON.parse(line) as RoundCommand;
  process.stdout.write(`${JSON.stringify(await round(spec, requests, durationS))}\n`);
}
