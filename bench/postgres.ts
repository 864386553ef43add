// The PostgreSQL scenarios' own parts: a scratch database next to --pg's,
// the CPU time of PostgreSQL's processes, and pgbench, which runs what the
// same requests need of the database: its ceiling on this machine.
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { issueToken } from '../src/auth/tokens.js';
import { openStore } from '../src/store/open-store.js';
import { plants } from './preload.js';
import { LOAD_CPU, cpuSeconds, output, start, stat } from './procs.js';
import { percentile, type Round } from './report.js';

async function sql<T, R = void>(url: string, text: string, read?: (rows: T[]) => R) {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    const { rows } = await c.query(text);
    return read?.(rows as T[]);
  } finally {
    await c.end();
  }
}

export interface ScratchDatabase {
  url: string;
  /** A token of the owner of the plants. */
  token: string;
  /** CPU seconds all of PostgreSQL's processes have used so far (NaN when it runs on another machine). */
  cpu(): number;
  drop(): Promise<void>;
}

/** A new database next to `adminUrl`'s, holding `rows` plants of `owner`. */
export async function scratchDatabase(adminUrl: string, owner: string, rows: number): Promise<ScratchDatabase> {
  const name = `plant_bench_${process.pid}_${Date.now()}`;
  await sql(adminUrl, `CREATE DATABASE ${name}`);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const drop = () => sql(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  try {
    const store = await openStore({ db: url, durability: 'full', pgPoolSize: 2, pgStatementTimeoutMs: 0 });
    const { token } = await issueToken(store.tokens, { owner });
    await store.plants.insertMany(owner, plants(1, rows));
    await store.close();
    await sql(url, 'VACUUM ANALYZE plants');
    // Backends come and go (pgbench opens its own): the postmaster, its
    // children, and those it has reaped count every one of them. A backend's
    // parent is read while its connection is open.
    const backend = await sql<{ pid: number }>(url, 'SELECT pg_backend_pid() AS pid', (r) => stat(r[0]!.pid));
    const postmaster = backend?.[0] === 'postgres' ? Number(backend[2]) : NaN;
    // The children are listed before the postmaster's reaped time is read, so
    // a backend that exits in between is counted once (as reaped) or not at all.
    const cpu = () => {
      try {
        const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').split(' ');
        return children.reduce(
          (t, pid) => t + (pid.trim() ? cpuSeconds(Number(pid)) || 0 : 0),
          cpuSeconds(postmaster, true),
        );
      } catch {
        return NaN;
      }
    };
    return { url, token, cpu, drop };
  } catch (error) {
    await drop().catch(() => {});
    throw error;
  }
}

/** pgbench `-M prepared` running `script` per transaction on the load generator's CPU, as one round. */
export async function pgbench(db: ScratchDatabase, script: string, connections: number, seconds: number, dir: string) {
  const u = new URL(db.url);
  const [file, logs] = [join(dir, 'pgbench.sql'), join(dir, 'pgbench-log')];
  writeFileSync(file, script);
  const args = ['-n', '-M', 'prepared', '-c', String(connections), '-j', '1', '-T', String(seconds), '-f', file];
  args.push('-l', '--log-prefix', logs, '-h', u.hostname, '-p', u.port || '5432');
  args.push('-U', decodeURIComponent(u.username || 'postgres'), u.pathname.slice(1));
  const env = { ...process.env, ...(u.password ? { PGPASSWORD: decodeURIComponent(u.password) } : {}) };
  const pg0 = db.cpu();
  const child = start(LOAD_CPU, 'pgbench', args, undefined, env);
  // Its CPU time is gone with its /proc entry: sampled until it exits.
  let own = 0;
  const timer = setInterval(() => (own = cpuSeconds(child.pid!) || own), 100);
  const [code, out] = await output(child);
  clearInterval(timer);
  // Its log: one line per transaction, the third field its latency in µs.
  const latencies: number[] = [];
  for (const f of readdirSync(dir).filter((f) => f.startsWith('pgbench-log.'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const us = Number(line.split(' ')[2]);
      if (line && Number.isFinite(us)) latencies.push(us);
    }
    rmSync(join(dir, f));
  }
  const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1]);
  if (code !== 0 || !tps) throw new Error(`pgbench failed (exit ${String(code)}): ${out.slice(-2000)}`);
  const per = (sec: number) => (sec * 1e6) / (tps * seconds);
  return {
    rps: tps,
    p99Ms: percentile(latencies, 0.99) / 1000,
    requests: Math.round(tps * seconds),
    errors: 0,
    cpu: [per(db.cpu() - pg0), per(own)],
    loadPct: (100 * own) / seconds,
  } satisfies Round;
}
