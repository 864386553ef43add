// One scenario on one backend. The service's store is preloaded first; then
// the baseline and the service run side by side, each with its own load
// generator, are warmed up, and are measured in alternating rounds
// (B S, S B, B S, ...) so that drift and bursts of other load on the machine
// fall on both alike.
import { randomBytes } from 'node:crypto';
import { LatencyHistogram } from './histogram.js';
import type { LoadResult, RoundResult } from './load-types.js';
import { LoadGenerator } from './loadgen.js';
import type { BenchOptions } from './options.js';
import { BASELINE_MAIN, SERVICE_MAIN } from './paths.js';
import type { Pinning } from './pinning.js';
import { TICKS_PER_SECOND, cpuTicks, machineBusyTicks, treeCpuTicks } from './procfs.js';
import type { Scenario } from './scenarios.js';
import { startServer, type RunningServer } from './servers.js';
import type { StoreTarget } from './targets-store.js';

/** Average CPU use during the measured rounds, in % of one core. */
export interface CpuShare {
  server: number;
  loadGenerator: number;
  /** PostgreSQL backends serving the service's database (0 for SQLite and the baseline). */
  database: number;
  /** Everything else on the machine: other processes, the kernel's share not charged to ours, steal. */
  others: number;
  /**
   * Server CPU time per answered request, in µs. Unlike req/s this hardly
   * moves when other work on the machine steals time, so it is the fairest
   * measure of what the service costs over the baseline.
   */
  serverUsPerRequest: number;
}

export interface Measurement {
  server: 'baseline' | 'service';
  workers: number;
  /** CPUs the server's main process was allowed to use. */
  cpus: string | undefined;
  load: LoadResult;
  cpu: CpuShare;
  /** VmHWM at the end of the scenario, summed over the server's processes. */
  peakRssKiB: number;
  /** Error log lines and other stderr output of the server. */
  problems: string[];
}

export interface RunContext {
  options: BenchOptions;
  pinning: Pinning;
  log(line: string): void;
}

interface Contender {
  kind: Measurement['server'];
  workers: number;
  server: RunningServer;
  gen: LoadGenerator;
  rounds: RoundResult[];
  warmupRequests: number;
  serverTicks: number;
  databaseTicks: number;
  otherTicks: number;
  databasePids: () => Promise<number[]>;
  loadCpuMs: number;
  wallS: number;
}

function summarize(c: Contender): Measurement {
  const latency = new LatencyHistogram();
  const statusCounts: Record<string, number> = {};
  let requests = 0;
  let durationS = 0;
  let non2xx = 0;
  let socketErrors = 0;
  let timeouts = 0;
  for (const r of c.rounds) {
    latency.add(r.latency);
    requests += r.requests;
    durationS += r.durationS;
    non2xx += r.non2xx;
    socketErrors += r.socketErrors;
    timeouts += r.timeouts;
    for (const [code, n] of Object.entries(r.statusCounts)) statusCounts[code] = (statusCounts[code] ?? 0) + n;
  }
  const pct = (ticks: number) => Math.round((ticks / TICKS_PER_SECOND / c.wallS) * 100);
  return {
    server: c.kind,
    workers: c.workers,
    cpus: c.server.cpus,
    load: {
      rounds: c.rounds.length,
      requests,
      durationS,
      rps: requests / durationS,
      p50Ms: latency.percentile(50),
      p99Ms: latency.percentile(99),
      maxMs: latency.percentile(100),
      non2xx,
      socketErrors,
      timeouts,
      statusCounts,
      warmupRequests: c.warmupRequests,
    },
    cpu: {
      server: pct(c.serverTicks),
      loadGenerator: Math.round((c.loadCpuMs / 1000 / c.wallS) * 100),
      database: pct(c.databaseTicks),
      others: Math.max(0, pct(c.otherTicks)),
      serverUsPerRequest: requests > 0 ? Math.round(((c.serverTicks / TICKS_PER_SECOND) * 1e6) / requests) : 0,
    },
    peakRssKiB: c.server.peakRssKiB(),
    problems: c.server.problems(),
  };
}

async function measureRound(c: Contender, seconds: number): Promise<void> {
  const dbPids = await c.databasePids();
  const t0 = performance.now();
  const busy0 = machineBusyTicks();
  const ours0 = treeCpuTicks(process.pid);
  const server0 = treeCpuTicks(c.server.pid);
  const db0 = cpuTicks(dbPids);
  const result = await c.gen.run(seconds);
  const db = cpuTicks(dbPids) - db0;
  c.serverTicks += treeCpuTicks(c.server.pid) - server0;
  c.databaseTicks += db;
  c.otherTicks += machineBusyTicks() - busy0 - (treeCpuTicks(process.pid) - ours0) - db;
  c.wallS += (performance.now() - t0) / 1000;
  c.loadCpuMs += result.cpuMs;
  c.rounds.push(result);
}

function describe(m: Measurement): string {
  const l = m.load;
  const errs = l.non2xx + l.socketErrors > 0 ? `, non-2xx ${l.non2xx}, socket errors ${l.socketErrors}` : '';
  return (
    `${Math.round(l.rps).toLocaleString('en-US')} req/s, p50 ${l.p50Ms.toFixed(2)} ms, p99 ${l.p99Ms.toFixed(2)} ms${errs}` +
    ` (CPU: server ${m.cpu.server} % = ${m.cpu.serverUsPerRequest} µs/request, load generator ${m.cpu.loadGenerator} %${m.cpu.database > 0 ? `, database ${m.cpu.database} %` : ''}, others ${m.cpu.others} %)`
  );
}

function startBaseline(ctx: RunContext, scenario: Scenario, token: string): Promise<RunningServer> {
  return startServer({
    label: 'baseline',
    args: [BASELINE_MAIN, '--port', '0', '--preload', String(scenario.rows)],
    cpus: ctx.pinning.serverCpus(1),
    pinning: ctx.pinning,
    token,
    env: { BENCH_TOKEN: token },
  });
}

function startService(
  ctx: RunContext,
  db: string,
  workers: number,
  token: string,
  backend: string,
  extraArgs: readonly string[] = [],
): Promise<RunningServer> {
  return startServer({
    label: `service (${backend}, workers=${workers})`,
    // The service exactly as `npm start` runs it; only the settings differ.
    args: [
      SERVICE_MAIN,
      'serve',
      '--port',
      '0',
      '--db',
      db,
      '--log-level',
      'warn',
      '--workers',
      String(workers),
      '--durability',
      ctx.options.durability,
      ...extraArgs,
    ],
    cpus: ctx.pinning.serverCpus(workers),
    pinning: ctx.pinning,
    token,
  });
}

/** Measures the service (with `workers` processes) and, unless `withBaseline` is false, the baseline next to it. */
export async function runScenario(
  ctx: RunContext,
  target: StoreTarget,
  scenario: Scenario,
  opts: { workers: number; withBaseline: boolean },
): Promise<{ baseline?: Measurement; service: Measurement }> {
  const o = ctx.options;
  // Before any server starts, so the preload's CPU and I/O disturb nothing.
  const { db, token } = await target.prepare(`${scenario.name}-w${opts.workers}`, scenario.rows);
  const contenders: Contender[] = [];
  const spec = { connections: o.connections, workload: scenario.workload };
  const enlist = (kind: Contender['kind'], workers: number, server: RunningServer, tok: string) => {
    const gen = LoadGenerator.start({ ...spec, url: server.url }, tok, ctx.pinning);
    const databasePids = kind === 'service' ? () => target.databasePids(db) : async () => [];
    contenders.push({
      kind,
      workers,
      server,
      gen,
      rounds: [],
      warmupRequests: 0,
      serverTicks: 0,
      databaseTicks: 0,
      otherTicks: 0,
      databasePids,
      loadCpuMs: 0,
      wallS: 0,
    });
  };
  try {
    if (opts.withBaseline) {
      // Same shape and length as the service's tokens, so requests are byte-for-byte the same size.
      const baselineToken = `plnt_${randomBytes(32).toString('base64url')}`;
      enlist('baseline', 1, await startBaseline(ctx, scenario, baselineToken), baselineToken);
    }
    enlist(
      'service',
      opts.workers,
      await startService(ctx, db, opts.workers, token, target.kind, scenario.serviceArgs),
      token,
    );

    if (o.warmupS > 0) for (const c of contenders) c.warmupRequests = (await c.gen.run(o.warmupS)).requests;
    const roundS = o.durationS / o.rounds;
    for (let i = 0; i < o.rounds; i++) {
      const order = i % 2 === 0 ? contenders : [...contenders].reverse();
      for (const c of order) await measureRound(c, roundS);
    }

    const measured = contenders.map(summarize);
    for (const m of measured) ctx.log(`  ${m.server.padEnd(8)} workers=${m.workers}  ${describe(m)}`);
    for (const p of measured.flatMap((m) => m.problems).slice(0, 3)) ctx.log(`    server said: ${p.slice(0, 300)}`);
    const baseline = measured.find((m) => m.server === 'baseline');
    return { ...(baseline ? { baseline } : {}), service: measured.find((m) => m.server === 'service')! };
  } finally {
    await Promise.all(contenders.flatMap((c) => [c.gen.close(), c.server.stop()]));
    target.release(db);
  }
}
