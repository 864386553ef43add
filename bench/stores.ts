// The databases of a run, filled through the store before the servers start: SQLite files, and on PostgreSQL a scratch
// database next to --pg's, with the CPU time of PostgreSQL's processes and pgbench, which runs what the same requests
// need of the database: its ceiling on this machine.
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { issueToken } from '../src/auth/tokens.js';
import { openStore } from '../src/store/open-store.js';
import { LOAD_CPU, cpuSeconds, result, start, stat } from './procs.js';
import { percentile, type Round } from './report.js';
import { ownerName, plantBody } from './scenarios.js';

const BATCH = 100_000;

/** Stores owners owner0.., each with plants 1..rows as both servers have them, never over HTTP; a token per owner. */
export async function preload(db: string, owners: number, rows: number): Promise<string[]> {
  const store = await openStore({ db, durability: 'full', pgPoolSize: 2, pgStatementTimeoutMs: 0 });
  try {
    const tokens: string[] = [];
    for (const owner of Array.from({ length: owners }, (_, i) => ownerName(i))) {
      tokens.push((await issueToken(store.tokens, { owner })).token);
      for (let from = 1; from <= rows; from += BATCH) {
        const batch = Array.from({ length: Math.min(BATCH, rows - from + 1) }, (_, i) => {
          const { id, name, tag } = plantBody(from + i);
          return { id: BigInt(id), name, tag };
        });
        const n = await store.plants.insertMany(owner, batch);
        if (n !== batch.length) throw new Error(`preload stored ${n} of ${batch.length} plants for ${owner}`);
      }
    }
    return tokens;
  } finally {
    await store.close();
  }
}

/** Runs one statement on a connection of its own; `read` gets the rows while it is still open. */
async function sql<R>(url: string, text: string, read?: (rows: Record<string, number>[]) => R) {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    const { rows } = await c.query(text);
    return read?.(rows as Record<string, number>[]);
  } finally {
    await c.end();
  }
}

/**
 * A new database next to `adminUrl`'s, preloaded; `cpu()`: the CPU seconds all of PostgreSQL's processes have used so
 * far (NaN when it runs on another machine).
 */
export async function scratchDatabase(adminUrl: string, owners: number, rows: number) {
  const name = `plant_bench_${process.pid}_${Date.now()}`;
  await sql(adminUrl, `CREATE DATABASE ${name}`);
  const url = Object.assign(new URL(adminUrl), { pathname: `/${name}` }).toString();
  const drop = () => sql(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  try {
    // Not analyzed after the preload: the service must be as fast on a table PostgreSQL has not analyzed yet.
    const tokens = await preload(url, owners, rows);
    // Backends come and go (pgbench opens its own): the postmaster, its children, and those it has reaped count every
    // one of them. A backend's parent is read while its connection is open.
    const backend = await sql(url, 'SELECT pg_backend_pid() AS pid', (r) => stat(r[0]!.pid!));
    const postmaster = backend?.[0] === 'postgres' ? Number(backend[2]) : NaN;
    // The children are listed before the postmaster's reaped time is read, so a backend that exits in between is
    // counted once (as reaped) or not at all.
    const cpu = () => {
      try {
        const children = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').split(' ');
        const live = children.filter((pid) => pid.trim()).map((pid) => cpuSeconds(Number(pid)) || 0);
        return live.reduce((t, sec) => t + sec, cpuSeconds(postmaster, true));
      } catch {
        return NaN;
      }
    };
    const report = (error: Error) => console.error(`  could not drop the scratch database: ${error.message}`);
    return { url, tokens, cpu, drop: () => drop().catch(report) };
  } catch (error) {
    await drop().catch(() => {});
    throw error;
  }
}

type ScratchDatabase = Awaited<ReturnType<typeof scratchDatabase>>;
/** pgbench `-M prepared` running `script` per transaction on the load generator's CPU, as one round. */
export async function pgbench(db: ScratchDatabase, script: string, connections: number, seconds: number, dir: string) {
  writeFileSync(join(dir, 'pgbench.sql'), script);
  const args = ['-n', '-M', 'prepared', '-c', String(connections), '-j', '1', '-T', String(seconds)];
  args.push('-f', join(dir, 'pgbench.sql'), '-l', '--log-prefix', join(dir, 'pgbench-log'), db.url);
  const pg0 = db.cpu();
  const child = start(LOAD_CPU, 'pgbench', args);
  // Its CPU time is gone with its /proc entry: sampled until it exits.
  let own = 0;
  const timer = setInterval(() => (own = cpuSeconds(child.pid!) || own), 100);
  const read = (out: string) => Number(/tps = ([\d.]+)/.exec(out)?.[1]) || undefined;
  const tps = await result(child, 'pgbench', read).finally(() => clearInterval(timer));
  // Its log: one line per transaction, the third field its latency in µs.
  const latencies: number[] = [];
  for (const f of readdirSync(dir).filter((f) => f.startsWith('pgbench-log.'))) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) latencies.push(Number(line.split(' ')[2]));
    rmSync(join(dir, f));
  }
  const per = (sec: number) => (sec * 1e6) / (tps * seconds);
  return {
    rps: tps,
    p99Ms: percentile(latencies.filter(Number.isFinite), 0.99) / 1000,
    requests: Math.round(tps * seconds),
    errors: 0,
    cpu: [per(db.cpu() - pg0), per(own)],
    loadPct: (100 * own) / seconds,
  } satisfies Round;
}
