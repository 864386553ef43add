// npm run bench [-- options] [-- extra service flags]
// The service started as `npm start` starts it, next to an in-memory
// baseline (or on PostgreSQL, next to pgbench), under the same load, in
// alternating rounds.
import { spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startIssuer, type Issuer } from './jwt.js';
import { runLoad, wrkVersion } from './load.js';
import { pgbench, scratchDatabase, type ScratchDatabase } from './postgres.js';
import { preload } from './preload.js';
import { SERVER_CPU, cpuSeconds, freePort, pinning, ready, start, stop } from './procs.js';
import { best, percentile, report, roundLine, type Outcome, type Round } from './report.js';
import { SCENARIOS, ownerName, readOnly, type Scenario } from './scenarios.js';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const names = SCENARIOS.map((s) => s.name);
const HELP = `npm run bench [-- options] [-- service flags]

  --scenarios a,b    ${names.join(', ')}
                     (default: all, the pg- ones only with --pg)
  --pg URL           a PostgreSQL server for the pg- scenarios: the service on PostgreSQL next to
                     pgbench (its ceiling), in a scratch database created next to URL's
  --seconds N        length of a measured round (default 5)
  --rounds N         measured rounds per server, best kept (default 5)
  --warmup N         seconds of load before measuring (default 2)
  --connections N    keep-alive connections (default 32)
  --loadgen NAME     wrk or autocannon (default: wrk when installed)
  --cpu-prof DIR     write the service's CPU profiles to DIR (slows it down)
  --out FILE         the report (default bench/latest.md; "-" for none)
  --keep             keep the temporary folder (databases, logs)

Flags after a second "--" go to the service, e.g. -- --log-level warn.`;

const { values: o, positionals: serviceFlags } = parseArgs({
  allowPositionals: true,
  options: {
    scenarios: { type: 'string' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '32' },
    loadgen: { type: 'string', default: wrkVersion ? 'wrk' : 'autocannon' },
    'cpu-prof': { type: 'string' },
    pg: { type: 'string' },
    out: { type: 'string', default: here('../../bench/latest.md') },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (o.help) {
  console.log(HELP);
  process.exit(0);
}
const tool = o.loadgen as 'wrk' | 'autocannon';
if (tool !== 'wrk' && tool !== 'autocannon') throw new Error('--loadgen must be wrk or autocannon');
if (tool === 'wrk' && !wrkVersion) throw new Error('wrk is not installed (apt-get install wrk)');
if (o.pg && spawnSync('pgbench', ['--version']).status !== 0)
  throw new Error('pgbench is not installed (apt-get install postgresql-client)');
const scenarios = (o.scenarios?.split(',') ?? names.filter((n) => o.pg || !n.startsWith('pg-'))).map((n) => {
  const s = SCENARIOS.find((x) => x.name === n);
  if (!s) throw new Error(`unknown scenario "${n}"; known: ${names.join(', ')}`);
  if (s.pgbench && !o.pg) throw new Error(`${n} needs --pg URL`);
  return s;
});
const [seconds = 5, rounds = 5, warmup = 2, connections = 32] = [o.seconds, o.rounds, o.warmup, o.connections].map(
  Number,
);
const prof = o['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', o['cpu-prof']] : [];
if (o['cpu-prof']) fs.mkdirSync(o['cpu-prof'], { recursive: true });

// The service reads these; the bench leaves nothing from the caller's shell in them.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(HOST|PORT|DATABASE_URL|LOG_LEVEL|PLANTS_.*)$/.test(k)),
);
const dir = fs.mkdtempSync(join(tmpdir(), 'plant-bench-'));
let runs = 0;

/** The share of all CPUs' time spent busy over `seconds` while the bench waits: other work on the machine. */
async function busyShare(seconds: number): Promise<number> {
  // One snapshot of all CPUs each time, so idle and total are read at the same instant.
  const times = () =>
    cpus().reduce<[idle: number, all: number]>(
      ([idle, all], { times: t }) => [idle + t.idle, all + t.user + t.nice + t.sys + t.idle + t.irq],
      [0, 0],
    );
  const [idle0, all0] = times();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const [idle1, all1] = times();
  return 1 - (idle1 - idle0) / Math.max(1, all1 - all0);
}

/** fsync latency of the disk under the temporary folder: a create is answered only after one. */
function fsyncMs(): [p50: number, p99: number] {
  const fd = fs.openSync(join(dir, 'fsync.tmp'), 'w');
  const ms: number[] = [];
  for (let i = 0; i < 200; i++) {
    fs.writeSync(fd, Buffer.alloc(4096, i));
    const t0 = performance.now();
    fs.fsyncSync(fd);
    ms.push(performance.now() - t0);
  }
  fs.closeSync(fd);
  return [percentile(ms, 0.5), percentile(ms, 0.99)];
}

/** Cursors at evenly spread points of the list, found by walking it with pages of 1000. */
async function seedsFor(url: string, token: string, rows: number, count: number): Promise<string[]> {
  const every = Math.max(1, Math.floor(rows / 1000 / count));
  const seeds = [''];
  let path: string | undefined = '/plants?limit=1000';
  for (let page = 1; path !== undefined && seeds.length < count; page++) {
    const res = await fetch(url + path, { headers: { authorization: `Bearer ${token}` } });
    await res.arrayBuffer();
    const cursor = /cursor=([^>&]+)/.exec(res.headers.get('link') ?? '')?.[1];
    if (cursor && page % every === 0) seeds.push(cursor);
    path = cursor && `/plants?limit=1000&cursor=${cursor}`;
  }
  return seeds;
}

/** A SQLite file with the scenario's plants; read-only scenarios on the same data share one. */
const prepared = new Map<string, string[]>();
async function sqliteFile(s: Scenario): Promise<{ db: string; tokens: string[] }> {
  const key = join(dir, `${s.owners}x${s.rowsPerOwner}.db`);
  const db = readOnly(s.workload) ? key : join(dir, `${s.name}.db`);
  if (!prepared.has(db)) {
    const t0 = performance.now();
    prepared.set(db, await preload(db, s.owners, s.rowsPerOwner));
    console.log(`  stored ${s.owners * s.rowsPerOwner} plants in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  return { db, tokens: prepared.get(db)! };
}

/** A server under the load generator: one round measures its rate, p99 and CPU (with PostgreSQL's, `pgCpu`). */
async function httpSide(
  s: Scenario,
  name: string,
  child: ChildProcess,
  port: number,
  tokens: string[],
  pgCpu?: () => number,
) {
  const url = `http://127.0.0.1:${port}`;
  // With JWTs on, /readyz answers 503 until the service has fetched the JWKS; a JWT before that gets 401.
  if (s.jwt && name === 'service') await ready(child, `${url}/readyz`, '', name);
  await ready(child, `${url}/plants?limit=1`, tokens[0]!, name);
  const seeds = s.workload.page ? await seedsFor(url, tokens[0]!, s.rowsPerOwner, connections) : [];
  return async (secs: number): Promise<Round> => {
    const [own0, pg0] = [cpuSeconds(child.pid!), pgCpu?.() ?? 0];
    const spec = { url, connections, workload: s.workload, tokens, seeds, seconds: secs, firstId: 1e9 * ++runs };
    const r = await runLoad(spec, tool, join(dir, 'load.tmp'));
    const per = (sec: number) => (sec * 1e6) / r.requests;
    const cpu = [per(cpuSeconds(child.pid!) - own0), ...(pgCpu ? [per(pgCpu() - pg0)] : [])];
    return { ...r, rps: r.requests / r.seconds, cpu, loadPct: (100 * r.cpuSeconds) / r.seconds };
  };
}

async function runScenario(s: Scenario): Promise<Outcome> {
  console.log(`\n${s.name}: ${s.title}`);
  const log = join(dir, `${s.name}-service.log`);
  const children: ChildProcess[] = [];
  let pg: ScratchDatabase | undefined;
  let issuer: Issuer | undefined;
  try {
    pg = s.pgbench ? await scratchDatabase(o.pg!, ownerName(0), s.rowsPerOwner) : undefined;
    const { db, tokens: opaque } = pg ? { db: pg.url, tokens: [pg.token] } : await sqliteFile(s);
    issuer = s.jwt ? await startIssuer() : undefined;
    // Both servers get the JWTs as the tokens: the baseline looks them up like any bearer string.
    const tokens = issuer ? await Promise.all(opaque.map((_, i) => issuer!.token(ownerName(i)))) : opaque;
    const sPort = await freePort();
    // Exactly `npm start` (node dist/src/cli/bin.js serve), on its own database and port. On
    // PostgreSQL not pinned, like PostgreSQL itself: each request needs both.
    const flags = ['serve', '--db', db, '--port', String(sPort), ...(issuer?.flags ?? []), ...serviceFlags];
    children.push(
      start(pg ? undefined : SERVER_CPU, process.execPath, [...prof, here('../src/cli/bin.js'), ...flags], log, env),
    );
    let reference: (secs: number) => Promise<Round>;
    const onPg = pg;
    if (onPg) reference = (secs) => pgbench(onPg, s.pgbench!, connections, secs, dir);
    else {
      const [spec, bPort] = [join(dir, `${s.name}-baseline.json`), await freePort()];
      const owners = tokens.map((token, i) => ({ owner: ownerName(i), token, rows: s.rowsPerOwner }));
      fs.writeFileSync(spec, JSON.stringify({ owners }));
      const args = [here('./baseline.js'), spec, String(bPort)];
      children.push(start(SERVER_CPU, process.execPath, args, join(dir, `${s.name}-baseline.log`)));
      reference = await httpSide(s, 'baseline', children[1]!, bPort, tokens);
    }
    const sides = [
      { name: pg ? 'pgbench' : 'baseline', round: reference, rounds: [] as Round[] },
      {
        name: 'service',
        round: await httpSide(s, 'service', children[0]!, sPort, tokens, pg?.cpu),
        rounds: [] as Round[],
      },
    ];
    if (warmup > 0) for (const side of sides) await side.round(warmup);
    for (let i = 0; i < rounds; i++) {
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        side.rounds.push(await side.round(seconds));
        console.log(roundLine(side.name, side.rounds.at(-1)!));
      }
    }
    const [ref, svc] = sides.map((side) => side.rounds);
    return {
      scenario: s,
      service: best(svc!),
      reference: best(ref!),
      errors: [...ref!, ...svc!].reduce((n, r) => n + r.errors, 0),
      serviceRequests: svc!.reduce((n, r) => n + r.requests, 0),
      serviceLogBytes: fs.statSync(log).size,
    };
  } finally {
    for (const child of children) await stop(child);
    await issuer?.close().catch(() => {});
    await pg?.drop().catch((error: Error) => console.error(`  could not drop the scratch database: ${error.message}`));
  }
}

const startedAt = new Date();
const BUSY_SAMPLE_SECONDS = 3;
const busy = { share: await busyShare(BUSY_SAMPLE_SECONDS), seconds: BUSY_SAMPLE_SECONDS };
const fsync = fsyncMs();
console.log(
  `bench: ${scenarios.map((s) => s.name).join(', ')}; ${rounds} × ${seconds} s per server, ${connections} connections, ` +
    `${tool}${pinning.on ? ', server on CPU 0 and load generator on CPU 1' : `, not pinned (${pinning.why})`}`,
);
const outcomes: Outcome[] = [];
try {
  for (const s of scenarios) outcomes.push(await runScenario(s));
} finally {
  if (o.keep) console.log(`\nkept ${dir}`);
  else fs.rmSync(dir, { recursive: true, force: true });
}
const md = report(outcomes, {
  startedAt,
  command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  machine: `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Linux ${release()}, Node ${process.versions.node}`,
  method:
    `${tool === 'wrk' ? `wrk ${wrkVersion}, 1 thread` : 'autocannon'}, ${connections} connections; ` +
    `best of ${rounds} rounds of ${seconds} s per server, alternating, after ${warmup} s of warm-up; ` +
    (pinning.on ? 'servers on CPU 0, load generator on CPU 1' : `not pinned: ${pinning.why}`),
  serviceFlags,
  busy,
  fsync,
  pgHost: o.pg && new URL(o.pg).host,
});
console.log(`\n${md}`);
if (o.out !== '-') fs.writeFileSync(o.out, md);
