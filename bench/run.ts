// npm run bench [-- options] [-- extra service flags]
// The service started as its installed executable (`plant-store serve`), next to a durable SQLite reference (the
// store's ceiling) and an in-memory baseline (the HTTP ceiling), or on PostgreSQL next to pgbench, under the same load,
// in alternating rounds.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { eventPathCost } from './event-path.js';
import { startIssuer } from './jwt.js';
import { startOtlpSink } from './otlp-sink.js';
import { runLoad, wrkVersion } from './load.js';
import { PlantStoreClient } from '../src/client/index.js';
import { SERVER_CPU, cpuSeconds, freePort, ready, start, stop, unpinned } from './procs.js';
import { percentile, report, roundLine, type Outcome, type Round } from './report.js';
import { SCENARIOS, ownerName, type Scenario } from './scenarios.js';
import { pgbench, preload, scratchDatabase } from './stores.js';

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
  --cpu-prof DIR     write the service's CPU profiles to DIR (slows it down)
  --out FILE         the report (default bench/latest.md; "-" for none)
  --keep             keep the temporary folder (databases, logs)
  --compare BIN      also run another build's executable (such as a worktree's dist/src/cli/bin.js) as a
                     side of its own, on a copy of the service's database, in the same alternating rounds

Flags after a second "--" go to the service, e.g. -- --log-level warn.`;

const { values: o, positionals: serviceFlags } = parseArgs({
  allowPositionals: true,
  options: {
    scenarios: { type: 'string' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '32' },
    'cpu-prof': { type: 'string' },
    pg: { type: 'string' },
    out: { type: 'string', default: here('../../bench/latest.md') },
    keep: { type: 'boolean', default: false },
    compare: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (o.help) {
  console.log(HELP);
  process.exit(0);
}
if (!wrkVersion) throw new Error('wrk is not installed (apt-get install wrk)');
// The executable as npm installs it: run through its first line, `#!/usr/bin/env -S node <flags>`, which the
// baseline gets too.
const bin = here('../src/cli/bin.js');
fs.chmodSync(bin, 0o755);
const nodeFlags = /^#!\/usr\/bin\/env -S node(.*)$/m.exec(fs.readFileSync(bin, 'utf8'))![1]!.split(' ').filter(Boolean);
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
  Object.entries(process.env).filter(([k]) => !/^(HOST|PORT|DATABASE_URL|LOG_LEVEL|PLANTS_.*|OTEL_.*)$/.test(k)),
);
const dir = fs.mkdtempSync(join(tmpdir(), 'plant-bench-'));
let runs = 0;

/** Cursors at evenly spread points of the list, found by walking it with pages of 1000. */
async function seedsFor(baseUrl: string, token: string, rows: number, count: number): Promise<string[]> {
  const [client, every] = [new PlantStoreClient({ baseUrl, token }), Math.max(1, Math.floor(rows / 1000 / count))];
  const seeds = [''];
  for (let page = 1, cursor: string | undefined = ''; cursor !== undefined && seeds.length < count; page++) {
    cursor = (await client.listPage({ limit: 1000, ...(cursor && { cursor }) })).next;
    if (cursor && page % every === 0) seeds.push(cursor);
  }
  return seeds;
}

/** Tokens by SQLite file: read-only scenarios on the same data share one. */
const sqliteFiles = new Map<string, string[]>();

async function runScenario(s: Scenario): Promise<Outcome> {
  console.log(`\n${s.name}: ${s.title}`);
  const cleanup: (() => Promise<unknown>)[] = []; // run last first
  try {
    const pg = s.pgbench ? await scratchDatabase(o.pg!, s.owners, s.rowsPerOwner) : undefined;
    if (pg) cleanup.push(pg.drop);
    const file = s.workload.create || s.workload.delete ? s.name : `${s.owners}x${s.rowsPerOwner}`;
    const db = pg?.url ?? join(dir, `${file}.db`);
    if (!pg && !sqliteFiles.has(db)) {
      const t0 = performance.now();
      sqliteFiles.set(db, await preload(db, s.owners, s.rowsPerOwner));
      console.log(`  stored ${s.owners * s.rowsPerOwner} plants in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    const issuer = s.jwt ? await startIssuer() : undefined;
    if (issuer) cleanup.push(issuer.close);
    // Both servers get the JWTs as the tokens: the baseline looks them up like any bearer string.
    const opaque = pg?.tokens ?? sqliteFiles.get(db)!;
    const tokens = issuer ? await Promise.all(opaque.map((_, i) => issuer.token(ownerName(i)))) : opaque;

    /** Starts a server; each call of what it returns is a round of load on it: its rate, p99, CPU (and PostgreSQL's). */
    // Tracing on for the service alone: the references do not trace.
    const sink = s.traced ? await startOtlpSink() : undefined;
    if (sink) cleanup.push(sink.close);
    const serve = async (name: string, port: number, [cmd, ...args]: string[], pgCpu?: () => number) => {
      const own = sink && name === 'service' ? { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint } : env;
      const child = start(pg ? undefined : SERVER_CPU, cmd!, args, join(dir, `${s.name}-${name}.log`), own);
      cleanup.push(() => stop(child));
      const url = `http://127.0.0.1:${port}`;
      // With JWTs on, /readyz answers 503 until the service has fetched the JWKS; a JWT before that gets 401.
      if (issuer && name === 'service') await ready(child, `${url}/readyz`, '', name);
      await ready(child, `${url}/plants?limit=1`, tokens[0]!, name);
      const seeds = s.workload.page ? await seedsFor(url, tokens[0]!, s.rowsPerOwner, connections) : [];
      return async (secs: number): Promise<Round> => {
        const [own0, pg0] = [cpuSeconds(child.pid!), pgCpu?.() ?? 0];
        const spec = { url, connections, workload: s.workload, tokens, seeds, seconds: secs, firstId: 1e9 * ++runs };
        const r = await runLoad(spec, join(dir, 'load.tmp'));
        const per = (sec: number) => (sec * 1e6) / r.requests;
        const cpu = [per(cpuSeconds(child.pid!) - own0), ...(pgCpu ? [per(pgCpu() - pg0)] : [])];
        return { ...r, rps: r.requests / r.seconds, cpu, loadPct: (100 * r.cpuSeconds) / r.seconds };
      };
    };
    // Exactly the installed `plant-store serve`, on its own database and port (with --cpu-prof through node); the
    // baseline gets the executable's Node flags, so the ratio is the service's own cost. On PostgreSQL not pinned, like
    // PostgreSQL itself.
    const port = await freePort();
    const flags = ['serve', '--db', db, '--port', String(port), ...(issuer?.flags ?? []), ...serviceFlags];
    const exe = prof.length ? [process.execPath, ...nodeFlags, ...prof, bin] : [bin];
    if (o.compare && !pg)
      for (const part of ['', '-wal'].filter((p) => fs.existsSync(db + p)))
        fs.copyFileSync(db + part, join(dir, `${s.name}-compare.db${part}`));
    const service = await serve('service', port, [...exe, ...flags], pg?.cpu);
    // Another build, on a copy of the database made before the service wrote to it (a write scenario's rows would
    // differ otherwise), with the same flags and no tracing.
    const compared = async () => {
      const [comparePort, copy] = [await freePort(), pg ? db : join(dir, `${s.name}-compare.db`)];
      const args = ['serve', '--db', copy, '--port', String(comparePort), ...(issuer?.flags ?? []), ...serviceFlags];
      return serve('compare', comparePort, [o.compare!, ...args], pg?.cpu);
    };
    const compare = o.compare ? await compared() : undefined;
    const tokensFile = join(dir, 'tokens');
    fs.writeFileSync(tokensFile, tokens.join('\n'));
    /** A reference server of bench/: in memory, or durable on a SQLite file of its own. */
    const reference = async (name: string, script: string, ...extra: string[]) => {
      const refPort = await freePort();
      const args = [process.execPath, ...nodeFlags, here(`./${script}.js`), String(refPort), String(s.rowsPerOwner)];
      return serve(name, refPort, [...args, tokensFile, ...extra]);
    };
    const durable = (name: string, ...extra: string[]) =>
      reference(name, 'durable', join(dir, `${s.name}-${name}.db`), ...extra);
    const sides = [
      pg
        ? { name: 'pgbench', round: (secs: number) => pgbench(pg, s.pgbench!, connections, secs, dir) }
        : { name: 'baseline', round: await reference('baseline', 'baseline') },
      { name: 'service', round: service },
      ...(compare ? [{ name: 'compare', round: compare }] : []),
      ...(pg ? [] : [{ name: 'durable', round: await durable('durable') }]),
      // The list scenario also shows that the baseline is not slower than the smallest server doing the same, and
      // list and create that the durable reference is not slower than its obvious version.
      ...(s.name === 'list' ? [{ name: 'minimal', round: await reference('minimal', 'minimal') }] : []),
      ...(s.name === 'list' || s.name === 'create'
        ? [{ name: 'naive', round: await durable('naive', '--naive') }]
        : []),
    ].map((side) => ({ ...side, rounds: [] as Round[] }));
    const roundsOf = (name: string) => sides.find((side) => side.name === name)?.rounds;
    if (warmup > 0) for (const side of sides) await side.round(warmup);
    for (let i = 0; i < rounds; i++)
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        side.rounds.push(await side.round(seconds));
        console.log(roundLine(side.name, side.rounds.at(-1)!));
      }
    const logBytes = fs.statSync(join(dir, `${s.name}-service.log`)).size;
    if (sink) {
      const { requests, bytes } = sink.received();
      console.log(`  the receiver got ${requests} exports, ${(bytes / 1e6).toFixed(1)} MB`);
    }
    return {
      scenario: s,
      reference: sides[0]!.rounds,
      service: sides[1]!.rounds,
      durable: roundsOf('durable'),
      minimal: roundsOf('minimal'),
      naive: roundsOf('naive'),
      compare: roundsOf('compare'),
      logBytes,
    };
  } finally {
    for (const undo of cleanup.reverse()) await undo();
  }
}

const startedAt = new Date();
// The share of all CPUs' time in use by other work in the seconds before the run. Each sample is one snapshot of all
// CPUs, so idle and total time are read at the same instant.
const BUSY_SAMPLE_SECONDS = 3;
const idleAndAll = () =>
  cpus().reduce<[number, number]>(
    ([idle, all], { times: t }) => [idle + t.idle, all + t.user + t.nice + t.sys + t.idle + t.irq],
    [0, 0],
  );
const [idle0, all0] = idleAndAll();
await new Promise((r) => setTimeout(r, BUSY_SAMPLE_SECONDS * 1000));
const [idle1, all1] = idleAndAll();
const busy = { share: 1 - (idle1 - idle0) / Math.max(1, all1 - all0), seconds: BUSY_SAMPLE_SECONDS };

// fsync latency of the disk under the temporary folder: a create is answered only after one.
const fd = fs.openSync(join(dir, 'fsync.tmp'), 'w');
const fsyncs = Array.from({ length: 200 }, (_, i) => {
  fs.writeSync(fd, Buffer.alloc(4096, i));
  const t0 = performance.now();
  fs.fsyncSync(fd);
  return performance.now() - t0;
});
fs.closeSync(fd);
// Live events with no stream open: what a create's answer does for them, with 1 and with 8 creates answered per turn.
const eventPath = await eventPathCost(dir, [1, 8]);

const pinning = unpinned ? `not pinned: ${unpinned}` : 'servers on CPU 0, load generator on CPU 1';
const chosen = scenarios.map((s) => s.name).join(', ');
console.log(`bench: ${chosen}; ${rounds} × ${seconds} s per server, ${connections} connections, wrk; ${pinning}`);
const outcomes: Outcome[] = [];
try {
  for (const s of scenarios) outcomes.push(await runScenario(s));
} finally {
  if (o.keep) console.log(`\nkept ${dir}`);
  else fs.rmSync(dir, { recursive: true, force: true });
}
const md = report(outcomes, {
  startedAt,
  command: 'plant-store serve',
  nodeFlags,
  method:
    `wrk ${wrkVersion}, 1 thread, ${connections} connections; ` +
    `best of ${rounds} rounds of ${seconds} s per server, alternating, after ${warmup} s of warm-up; ${pinning}`,
  serviceFlags,
  busy,
  fsync: [percentile(fsyncs, 0.5), percentile(fsyncs, 0.99)],
  eventPath,
  pgHost: o.pg && new URL(o.pg).host,
  compare: o.compare,
});
console.log(`\n${md}`);
if (o.out !== '-') fs.writeFileSync(o.out, md);
