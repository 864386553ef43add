// The PostgreSQL scenarios of `npm run bench -- --pg URL`: the service on
// PostgreSQL under the bench's load generator, next to pgbench running the
// statements the same requests need (the database's own ceiling on this
// machine), on the same table, in alternating rounds. A scratch database is
// created next to URL's and dropped at the end.
import { type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { issueToken } from '../src/auth/tokens.js';
import { openStore } from '../src/store/open-store.js';
import { runLoad } from './load.js';
import { plants } from './preload.js';
import { LOAD_CPU, SERVER_CPU, cpuSeconds, freePort, pinning, ready, start, stop } from './procs.js';
import { ownerName, type Workload } from './scenarios.js';
import { best, int, met, x } from './report.js';

export interface PgScenario {
  name: string;
  title: string;
  workload: Workload;
  /** What pgbench runs per transaction. */
  pgbench: string;
  target: { ratio: number; p99Ms: number };
}

const ROWS = 10_000;

export const PG_SCENARIOS: readonly PgScenario[] = [
  {
    name: 'pg-list',
    title: 'GET /plants?limit=10 (one owner, 10k plants) vs pgbench: the same 11 rows by (created_at, id)',
    workload: { list: 1, limit: 10 },
    pgbench: `SELECT name, tag, created_at, id FROM plants WHERE owner = '${ownerName(0)}' ORDER BY created_at, id LIMIT 11;\n`,
    target: { ratio: 0.5, p99Ms: 10 },
  },
  {
    name: 'pg-create',
    title: 'POST /plants (synchronous_commit=on) vs pgbench: one INSERT … ON CONFLICT DO NOTHING per transaction',
    workload: { create: 1, limit: 10 },
    pgbench: `\\set id random(1, 4000000000000000000)
INSERT INTO plants (owner, id, name, tag) VALUES ('pgbench', :id, 'plant', 'fern') ON CONFLICT (owner, id) DO NOTHING;\n`,
    target: { ratio: 0.75, p99Ms: 10 },
  },
];

export interface PgCeilingOptions {
  /** An existing database to connect to for creating and dropping the scratch one. */
  adminUrl: string;
  scenarios: readonly PgScenario[];
  seconds: number;
  rounds: number;
  warmup: number;
  connections: number;
  tool: 'wrk' | 'autocannon';
  dir: string;
  serviceMain: string;
  /** Node flags for the service, e.g. --cpu-prof. */
  nodeFlags: string[];
  serviceFlags: string[];
  env: NodeJS.ProcessEnv;
}

interface Side {
  rps: number;
  p99Ms?: number;
  /** CPU µs per request or transaction. */
  cpu: { server?: number; postgres: number; loadgen: number };
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function admin(url: string, text: string): Promise<void> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    await c.query(text);
  } finally {
    await c.end();
  }
}

/** CPU seconds (user + system) of a process, or undefined once it is gone. */
function cpuOf(pid: number): number | undefined {
  try {
    return cpuSeconds(pid);
  } catch {
    return undefined;
  }
}

/**
 * CPU seconds the PostgreSQL backends of one database use while `work` runs.
 * Backends come and go (pgbench opens its own), so they are looked up every
 * 100 ms; one first seen after the start counts from zero, one that exits
 * counts up to its last sample.
 */
async function backendCpu<T>(sampler: pg.Client, work: () => Promise<T>): Promise<[T, number]> {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const sample = async (initial: boolean) => {
    const { rows } = await sampler.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    for (const { pid } of rows) {
      const t = cpuOf(pid);
      if (t === undefined) continue;
      if (!first.has(pid)) first.set(pid, initial ? t : 0);
      last.set(pid, t);
    }
  };
  await sample(true);
  let running = true;
  const loop = (async () => {
    while (running) {
      await new Promise((r) => setTimeout(r, 100));
      await sample(false);
    }
  })();
  try {
    const result = await work();
    let total = 0;
    for (const [pid, t0] of first) total += last.get(pid)! - t0;
    return [result, total];
  } finally {
    running = false;
    await loop;
  }
}

/** Runs pgbench; resolves to its tps, its own CPU seconds and its p99 latency in ms (from its transaction log). */
function pgbench(
  url: string,
  script: string,
  o: PgCeilingOptions,
  seconds: number,
): Promise<[tps: number, cpu: number, p99Ms: number]> {
  const u = new URL(url);
  const logPrefix = join(o.dir, 'pgbench-log');
  const args = ['-n', '-M', 'prepared', '-c', String(o.connections), '-j', '1', '-T', String(seconds), '-f', script];
  args.push('-l', '--log-prefix', logPrefix);
  args.push('-h', u.hostname, '-p', u.port || '5432', '-U', decodeURIComponent(u.username || 'postgres'));
  args.push(decodeURIComponent(u.pathname.slice(1)));
  const child: ChildProcess = start(LOAD_CPU, 'pgbench', args, {
    env: { ...process.env, ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}) },
  });
  let out = '';
  for (const s of [child.stdout!, child.stderr!]) s.setEncoding('utf8').on('data', (d: string) => (out += d));
  let cpu = 0;
  const timer = setInterval(() => (cpu = cpuOf(child.pid!) ?? cpu), 100);
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => {
      clearInterval(timer);
      // One line per transaction: client, number, latency in µs, ...
      const latencies: number[] = [];
      for (const f of readdirSync(o.dir).filter((f) => f.startsWith('pgbench-log.'))) {
        for (const line of readFileSync(join(o.dir, f), 'utf8').split('\n')) {
          const us = Number(line.split(' ')[2]);
          if (line && Number.isFinite(us)) latencies.push(us);
        }
        rmSync(join(o.dir, f));
      }
      latencies.sort((a, b) => a - b);
      const p99 = (latencies[Math.floor(latencies.length * 0.99)] ?? NaN) / 1000;
      const tps = /tps = ([\d.]+)/.exec(out)?.[1];
      if (code === 0 && tps) resolve([Number(tps), cpu, p99]);
      else reject(new Error(`pgbench failed (exit ${code}): ${out.slice(-2000)}`));
    }),
  );
}

/** Runs the scenarios and returns the report's PostgreSQL section (Markdown). */
export async function runPgCeiling(o: PgCeilingOptions): Promise<string> {
  const database = `plant_bench_${process.pid}_${Date.now()}`;
  await admin(o.adminUrl, `CREATE DATABASE ${database}`);
  const url = withDatabase(o.adminUrl, database);
  const sampler = new pg.Client({ connectionString: url });
  let service: ChildProcess | undefined;
  const rows: string[] = [];
  try {
    const store = await openStore({ db: url, durability: 'full', pgPoolSize: 2, pgStatementTimeoutMs: 0 });
    const { token } = await issueToken(store.tokens, { owner: ownerName(0) });
    await store.plants.insertMany(ownerName(0), plants(1, ROWS));
    await store.close();
    await admin(url, 'VACUUM ANALYZE plants');
    await sampler.connect();

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    service = start(
      SERVER_CPU,
      process.execPath,
      [...o.nodeFlags, o.serviceMain, 'serve', '--db', url, '--port', String(port), ...o.serviceFlags],
      {
        log: join(o.dir, 'pg-service.log'),
        env: o.env,
        // Not pinned, like PostgreSQL, whose backends do half the work of a request.
        noPin: true,
      },
    );
    const pid = service.pid!;
    await ready(service, `${base}/plants?limit=1`, token, 'service on PostgreSQL');

    let firstId = 4e15;
    const serviceRound = async (s: PgScenario, seconds: number): Promise<Side> => {
      const node0 = cpuSeconds(pid);
      const spec = { url: base, connections: o.connections, seconds, workload: s.workload, tokens: [token], seeds: [] };
      const [r, pgCpu] = await backendCpu(sampler, () =>
        runLoad({ ...spec, firstId: (firstId += 1e9) }, o.tool, join(o.dir, 'pg-load.tmp')),
      );
      if (r.errors) throw new Error(`${s.name}: ${r.errors} failed requests against the service`);
      const per = (sec: number) => (sec * 1e6) / r.requests;
      return {
        rps: r.requests / r.seconds,
        p99Ms: r.p99Ms,
        cpu: { server: per(cpuSeconds(pid) - node0), postgres: per(pgCpu), loadgen: per(r.cpuSeconds) },
      };
    };
    const ceilingRound = async (s: PgScenario, seconds: number): Promise<Side> => {
      const script = join(o.dir, `${s.name}.sql`);
      writeFileSync(script, s.pgbench);
      const [[tps, benchCpu, p99Ms], pgCpu] = await backendCpu(sampler, () => pgbench(url, script, o, seconds));
      const per = (sec: number) => (sec * 1e6) / (tps * seconds);
      return { rps: tps, p99Ms, cpu: { postgres: per(pgCpu), loadgen: per(benchCpu) } };
    };

    for (const s of o.scenarios) {
      console.log(`\n${s.name}: ${s.title}`);
      if (o.warmup > 0) {
        await serviceRound(s, o.warmup);
        await ceilingRound(s, o.warmup);
      }
      const measured: { service: Side[]; pgbench: Side[] } = { service: [], pgbench: [] };
      for (let i = 0; i < o.rounds; i++) {
        const order = i % 2 === 0 ? (['service', 'pgbench'] as const) : (['pgbench', 'service'] as const);
        for (const side of order) {
          const r = side === 'service' ? await serviceRound(s, o.seconds) : await ceilingRound(s, o.seconds);
          measured[side].push(r);
          console.log(
            `  ${side.padEnd(8)} ${int(r.rps).padStart(7)} ${side === 'service' ? 'req/s' : 'tps  '}` +
              (r.p99Ms === undefined ? '' : `  p99 ${r.p99Ms.toFixed(2)} ms`) +
              `  CPU µs each: ${r.cpu.server === undefined ? '' : `node ${int(r.cpu.server)}, `}PostgreSQL ${int(r.cpu.postgres)}, ${side === 'service' ? o.tool : 'pgbench'} ${int(r.cpu.loadgen)}`,
          );
        }
      }
      const [svc, ceil] = [best(measured.service), best(measured.pgbench)];
      const ratio = svc.rps / ceil.rps;
      rows.push(
        `| ${s.name} | ${int(svc.rps)} | ${svc.p99Ms!.toFixed(2)} ms | ${int(ceil.rps)} | ${ceil.p99Ms!.toFixed(2)} ms | ${x(ratio)} | ` +
          `≥ ${s.target.ratio}×, p99 ≤ ${s.target.p99Ms} ms: ${met(ratio >= s.target.ratio && svc.p99Ms! <= s.target.p99Ms)} | ` +
          `${int(svc.cpu.server!)} + ${int(svc.cpu.postgres)} | ${int(ceil.cpu.postgres)} + ${int(ceil.cpu.loadgen)} |`,
      );
    }
  } finally {
    if (service) await stop(service);
    await sampler.end().catch(() => {});
    await admin(o.adminUrl, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
  }
  const version = readFileSync('/proc/version', 'utf8').split(' ')[2] ?? '';
  return [
    '## PostgreSQL: the service next to pgbench',
    '',
    `- Service: \`serve --db <scratch database>\`${o.serviceFlags.length ? ` \`${o.serviceFlags.join(' ')}\`` : ''} on PostgreSQL (${new URL(o.adminUrl).host}), ${ROWS.toLocaleString('en-US')} plants of one owner; the same load generator and connections as above.`,
    `- Ceiling: pgbench \`-M prepared -c ${o.connections} -j 1\` on the same table, running per transaction what a request needs from the database.`,
    `- ${pinning.on ? 'pgbench and the load generator on CPU 1; the service and PostgreSQL not pinned, since each request needs both' : `not pinned: ${pinning.why}`} (kernel ${version}).`,
    '- Best round of each; CPU per request or transaction from /proc, PostgreSQL counting every backend of the scratch database.',
    '',
    '| scenario | service req/s | service p99 | pgbench tps | pgbench p99 | service / pgbench | target | CPU µs/request: node + PostgreSQL | CPU µs/transaction: PostgreSQL + pgbench |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
