// npm run bench [-- options] [-- extra service flags]
// The service started as `npm start` starts it, next to an in-memory
// baseline, under the same load generator, in alternating rounds.
import * as fs from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startIssuer } from './jwt.js';
import { runLoad, wrkVersion, type LoadSpec } from './load.js';
import { preload } from './preload.js';
import { SERVER_CPU, cpuSeconds, freePort, pinning, ready, start, stop } from './procs.js';
import { best, report, type Outcome, type Round } from './report.js';
import { PG_SCENARIOS, runPgCeiling } from './pg-ceiling.js';
import { SCENARIOS, ownerName, readOnly, type Scenario } from './scenarios.js';

const here = (p: string) => fileURLToPath(new URL(p, import.meta.url));
const SERVICE_MAIN = here('../src/cli/bin.js');
const BASELINE_MAIN = here('./baseline.js');

const HELP = `npm run bench [-- options] [-- service flags]

  --scenarios a,b    ${[...SCENARIOS, ...PG_SCENARIOS].map((s) => s.name).join(', ')} (default: all)
  --pg URL           also run ${PG_SCENARIOS.map((s) => s.name).join(' and ')}: the service on PostgreSQL next to
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
const picked = o.scenarios?.split(',') ?? [...SCENARIOS, ...(o.pg ? PG_SCENARIOS : [])].map((s) => s.name);
const pgScenarios = PG_SCENARIOS.filter((s) => picked.includes(s.name));
if (pgScenarios.length > 0 && !o.pg) throw new Error(`${pgScenarios.map((s) => s.name).join(', ')} need --pg URL`);
const scenarios = picked
  .filter((n) => !PG_SCENARIOS.some((s) => s.name === n))
  .map((n) => {
    const s = SCENARIOS.find((x) => x.name === n);
    if (!s)
      throw new Error(
        `unknown scenario "${n}"; known: ${[...SCENARIOS, ...PG_SCENARIOS].map((x) => x.name).join(', ')}`,
      );
    return s;
  });
const [seconds = 5, rounds = 5, warmup = 2, connections = 32] = [o.seconds, o.rounds, o.warmup, o.connections].map(
  Number,
);

// The service reads these; the bench leaves nothing from the caller's shell in them.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(HOST|PORT|DATABASE_URL|LOG_LEVEL|PLANTS_.*)$/.test(k)),
);
const dir = fs.mkdtempSync(join(tmpdir(), 'plant-bench-'));
let runs = 0;

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
  ms.sort((a, b) => a - b);
  return [ms[100]!, ms[198]!];
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

const prepared = new Map<string, string[]>();
async function prepare(s: Scenario, db: string): Promise<{ db: string; tokens: string[] }> {
  // Read-only scenarios on the same data share one file.
  const key = join(dir, `${s.owners}x${s.rowsPerOwner}.db`);
  if (readOnly(s.workload) && prepared.has(key)) return { db: key, tokens: prepared.get(key)! };
  const path = readOnly(s.workload) ? key : db;
  const t0 = performance.now();
  const tokens = await preload(path, s.owners, s.rowsPerOwner);
  console.log(`  stored ${s.owners * s.rowsPerOwner} plants in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  if (readOnly(s.workload)) prepared.set(key, tokens);
  return { db: path, tokens };
}

async function runScenario(s: Scenario): Promise<Outcome> {
  console.log(`\n${s.name}: ${s.title}`);
  const { db, tokens: opaque } = await prepare(s, join(dir, `${s.name}.db`));
  const issuer = s.jwt ? await startIssuer() : undefined;
  // Both servers get the JWTs as the tokens: the baseline looks them up like any bearer string.
  const tokens = issuer ? await Promise.all(opaque.map((_, i) => issuer.token(ownerName(i)))) : opaque;
  const spec = join(dir, `${s.name}-baseline.json`);
  fs.writeFileSync(
    spec,
    JSON.stringify({ owners: tokens.map((token, i) => ({ owner: ownerName(i), token, rows: s.rowsPerOwner })) }),
  );
  const log = join(dir, `${s.name}-service.log`);
  const [bPort, sPort] = [await freePort(), await freePort()];
  const servers = [
    {
      name: 'baseline' as const,
      url: `http://127.0.0.1:${bPort}`,
      child: start(SERVER_CPU, process.execPath, [BASELINE_MAIN, spec, String(bPort)], {
        log: join(dir, `${s.name}-baseline.log`),
      }),
    },
    {
      name: 'service' as const,
      url: `http://127.0.0.1:${sPort}`,
      // Exactly `npm start` (node dist/src/cli/bin.js serve), on its own file and port.
      child: start(
        SERVER_CPU,
        process.execPath,
        [
          ...prof,
          SERVICE_MAIN,
          'serve',
          '--db',
          db,
          '--port',
          String(sPort),
          ...(issuer?.flags ?? []),
          ...serviceFlags,
        ],
        { log, env },
      ),
    },
  ];
  try {
    const sent = { baseline: 0, service: 0 };
    const measured: Record<'baseline' | 'service', Round[]> = { baseline: [], service: [] };
    const load = new Map<string, Omit<LoadSpec, 'seconds' | 'firstId'>>();
    for (const srv of servers) {
      // With JWTs on, /readyz answers 503 until the service has fetched the JWKS; a JWT before that gets 401.
      if (issuer && srv.name === 'service') await ready(srv.child, `${srv.url}/readyz`, '', 'service');
      await ready(srv.child, `${srv.url}/plants?limit=1`, tokens[0]!, srv.name);
      const seeds = s.workload.page ? await seedsFor(srv.url, tokens[0]!, s.rowsPerOwner, connections) : [];
      load.set(srv.name, { url: srv.url, connections, workload: s.workload, tokens, seeds });
    }
    const round = async (srv: (typeof servers)[number], secs: number) => {
      const pid = srv.child.pid!;
      const cpu0 = cpuSeconds(pid);
      const firstId = 1e9 * ++runs;
      const r = await runLoad({ ...load.get(srv.name)!, seconds: secs, firstId }, tool, join(dir, 'load.tmp'));
      sent[srv.name] += r.requests;
      return { ...r, rps: r.requests / r.seconds, serverCpuSeconds: cpuSeconds(pid) - cpu0 };
    };
    if (warmup > 0) for (const srv of servers) await round(srv, warmup);
    for (let i = 0; i < rounds; i++) {
      for (const srv of i % 2 === 0 ? servers : [...servers].reverse()) {
        const r = await round(srv, seconds);
        measured[srv.name].push(r);
        console.log(
          `  ${srv.name.padEnd(8)} ${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p99 ${r.p99Ms.toFixed(2)} ms` +
            `  server ${Math.round((r.serverCpuSeconds * 1e6) / r.requests)} µs/req` +
            `  ${tool} CPU ${Math.round((100 * r.cpuSeconds) / r.seconds)} %${r.errors ? `  ERRORS ${r.errors}` : ''}`,
        );
      }
    }
    return {
      scenario: s,
      baseline: best(measured.baseline),
      service: best(measured.service),
      errors: [...measured.baseline, ...measured.service].reduce((n, r) => n + r.errors, 0),
      serviceRequests: sent.service,
      serviceLogBytes: fs.statSync(log).size,
    };
  } finally {
    for (const srv of servers) await stop(srv.child);
    await issuer?.close();
  }
}

const startedAt = new Date();
const load0 = loadavg()[0]!;
const fsync = fsyncMs();
console.log(
  `bench: ${scenarios.map((s) => s.name).join(', ')}; ${rounds} × ${seconds} s per server, ${connections} connections, ` +
    `${tool}${pinning.on ? ', server on CPU 0 and load generator on CPU 1' : `, not pinned (${pinning.why})`}`,
);
const prof = o['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', o['cpu-prof']] : [];
if (o['cpu-prof']) fs.mkdirSync(o['cpu-prof'], { recursive: true });
const outcomes: Outcome[] = [];
let pgSection = '';
try {
  for (const s of scenarios) outcomes.push(await runScenario(s));
  if (pgScenarios.length > 0) {
    pgSection = await runPgCeiling({
      adminUrl: o.pg!,
      scenarios: pgScenarios,
      ...{ seconds, rounds, warmup, connections, tool, dir, serviceFlags, env },
      serviceMain: SERVICE_MAIN,
      nodeFlags: prof,
    });
  }
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
  loadavg: [load0, loadavg()[0]!],
  cpus: cpus().length,
  fsync,
});
const full = pgSection ? `${md}\n${pgSection}` : md;
console.log(`\n${full}`);
if (o.out !== '-') fs.writeFileSync(o.out, full);
