// The Markdown report: the tables, the targets, and whether the load generator could have limited the numbers.
import { cpus, release } from 'node:os';
import type { EventPathCost } from './event-path.js';
import { DURABLE_TARGET, P99_RATIO, type Scenario } from './scenarios.js';

/**
 * One measured round of one side (the service, the baseline or pgbench). `errors`: non-2xx answers, socket errors and
 * timeouts; `cpu`: µs per request of what the table's header names (the server; node + PostgreSQL; PostgreSQL +
 * pgbench); `loadPct`: the share of its core the load generator used.
 */
export type Round = { rps: number; p99Ms: number; requests: number; errors: number; cpu: number[]; loadPct: number };
/**
 * A scenario's rounds: the service's, the baseline's or pgbench's (`reference`), on SQLite the durable reference's, and
 * the checks that a reference is not slow: the smallest in-memory server (`minimal`) and the naive durable one.
 */
export type Outcome = {
  scenario: Scenario;
  service: Round[];
  reference: Round[];
  logBytes: number;
  durable?: Round[] | undefined;
  minimal?: Round[] | undefined;
  naive?: Round[] | undefined;
  /** With --compare: another build's executable, in the same rounds. */
  compare?: Round[] | undefined;
};

export interface RunInfo {
  startedAt: Date;
  /** How the service and the baseline were started. */
  command: string;
  nodeFlags: string[];
  method: string;
  serviceFlags: string[];
  /** Share of the CPUs' time in use by other work in the `seconds` just before the run. */
  busy: { share: number; seconds: number };
  fsync: [p50: number, p99: number];
  /** CPU µs per create of the live-event calls (event-path.ts). */
  eventPath: EventPathCost[];
  pgHost?: string | undefined;
  /** The other build's executable (--compare). */
  compare?: string | undefined;
}

// Rounded down, so a ratio just under a target never prints as the target.
const x = (n: number) => `${(Math.floor(n * 100) / 100).toFixed(2)}×`;
const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
const ms = (n: number) => `${n.toFixed(2)} ms`;
const met = (ok: boolean) => (ok ? 'met' : '**missed**');
const cpu = (r: Round) => r.cpu.map(int).join(' + ');
const total = (of: 'requests' | 'errors', ...sides: Round[][]) => sides.flat().reduce((n, r) => n + r[of], 0);
const SQLITE_HEADER = [
  '| scenario | service req/s | p99 | CPU µs/req | durable req/s | p99 | CPU µs/req | in-memory req/s | p99 | CPU µs/req | service / durable | service / in-memory | target |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
];
const PG_HEADER =
  '| scenario | service req/s | p99 | CPU µs/req: node + PostgreSQL | pgbench tps | p99 | CPU µs/tx: PostgreSQL + pgbench | service / pgbench | target |';

/** The value below which a share `p` (0..1) of `values` lies; 0 without values. */
export const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.floor(p * values.length)] ?? 0;

export const roundLine = (side: string, r: Round) =>
  `  ${side.padEnd(8)} ${int(r.rps).padStart(7)} req/s  p99 ${ms(r.p99Ms)}  CPU µs each ${cpu(r)}` +
  `  load generator ${Math.round(r.loadPct)} %${r.errors ? `  ERRORS ${r.errors}` : ''}`;

type Best = { scenario: Scenario; s: Round; r: Round; d?: Round | undefined };

const side = (r: Round) => `${int(r.rps)} | ${ms(r.p99Ms)} | ${cpu(r)}`;
/** Whether the service reaches `t` of a reference's rate with at most P99_RATIO times its p99. */
const verdict = (s: Round, r: Round, t: number | undefined) =>
  `${t ? `≥ ${t}×, ` : ''}p99 ≤ ${P99_RATIO}× its: ${met((t === undefined || s.rps / r.rps >= t) && s.p99Ms <= P99_RATIO * r.p99Ms)}`;

/** On SQLite the target is the durable reference's; on PostgreSQL, pgbench's. */
function sqliteRow({ scenario: { name, title }, s, r, d }: Best): string {
  return `| ${name}: ${title} | ${side(s)} | ${side(d!)} | ${side(r)} | ${x(s.rps / d!.rps)} | ${x(s.rps / r.rps)} | ${verdict(s, d!, DURABLE_TARGET)} |`;
}
function pgRow({ scenario: { name, title, target }, s, r }: Best): string {
  return `| ${name}: ${title} | ${side(s)} | ${side(r)} | ${x(s.rps / r.rps)} | ${verdict(s, r, target)} |`;
}

/** Whether this scenario's numbers could be the load generator's limit rather than the servers'. */
function generatorCheck({ scenario, s, r }: Best): string {
  const [{ loadPct, rps }, at] = scenario.pgbench ? [s, 'service'] : [r, 'baseline'];
  const pct = Math.round(loadPct);
  if (loadPct < 90) return `not the limit: ${pct} % of its CPU at the ${at}'s ${int(rps)} req/s`;
  if (!scenario.pgbench && r.rps / s.rps >= 1.15)
    return `busy (${pct} %) at the baseline's rate, which is ${x(r.rps / s.rps)} the service's: not the service's limit`;
  return `**may be the limit**: ${pct} % of its CPU at the ${at}'s rate; ratios are upper bounds`;
}

/** The rule that live events cost nothing with no stream open, in figures. */
function eventPathLine(costs: EventPathCost[], create: Round | undefined): string {
  const each = (listened: boolean) =>
    costs
      .filter((c) => c.listened === listened)
      // Below zero is the noise of the two loops timed.
      .map((c) => `${Math.max(0, c.us).toFixed(2)} µs with ${c.perTurn} create${c.perTurn > 1 ? 's' : ''} a turn`)
      .join(', ');
  const worst = Math.max(0, ...costs.filter((c) => !c.listened).map((c) => c.us));
  const share = create
    ? ` (${((100 * worst) / create.cpu[0]!).toFixed(1)} % of the service's ${int(create.cpu[0]!)} µs per create above)`
    : '';
  return (
    `Live events, CPU per create of what its answer does for them (bench/event-path.ts: the feed's wake and the word to the other processes on the file): ` +
    `with no stream open on any process ${each(false)}${share}; with a stream open on another process, which gets one 1-byte write into the signal folder per turn of the event loop, ${each(true)}. A list does nothing for them.`
  );
}

export function report(outcomes: Outcome[], run: RunInfo): string {
  // Each side's best round: the one with the most requests per second.
  const best = (rounds: Round[]) => rounds.reduce((a, b) => (b.rps > a.rps ? b : a));
  const all = outcomes.map((o) => ({
    ...o,
    s: best(o.service),
    r: best(o.reference),
    d: o.durable && best(o.durable),
  }));
  const [onSqlite, onPg] = [all.filter((o) => !o.scenario.pgbench), all.filter((o) => o.scenario.pgbench)];
  const busy = Math.round(run.busy.share * 100);
  const flags = run.serviceFlags.join(' ');
  const lines = [
    '# Plant Store benchmark',
    '',
    `\`npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`, ${run.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
    '',
    `- Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Linux ${release()}, Node ${process.versions.node}; ${busy} % of its CPU time in use by other work in the ${run.busy.seconds} s before the run (other work lowers both servers' numbers).`,
    `- Disk: fsync in the temporary folder takes ${ms(run.fsync[0])} (p50), ${ms(run.fsync[1])} (p99); every create waits for one, so create latencies cannot be lower.`,
    `- Service: \`${run.command} --db <temporary SQLite file> --port <free port>\`${flags ? ` \`${flags}\`` : ''}, the executable as installed (its first line starts \`node ${run.nodeFlags.join(' ')}\`), no other Node flags${flags ? ', plus those flags' : ', every other setting at its default'}, stdout and stderr to a file.`,
    `- Durable reference (bench/durable.ts, the store's ceiling): Fastify on SQLite with the same routes, bearer check, JSON, keyset cursors and 409s; every 2xx write fsynced in the WAL (synchronous=FULL) before its answer, with group commit, and each owner's first page kept until it writes; no logging; the same Node flags.`,
    `- In-memory baseline (bench/baseline.ts, the HTTP ceiling): the same routes, bearer check and JSON; no storage, no logging; the same Node flags.`,
    `- Load: ${run.method}.`,
    '',
  ];
  if (onSqlite.length > 0) lines.push(...SQLITE_HEADER, ...onSqlite.map(sqliteRow), '');
  for (const { scenario: sc, r, d, minimal, naive } of all) {
    const m = minimal && best(minimal);
    if (m)
      lines.push(
        `${sc.name}: a minimal Fastify server (bench/minimal.ts: the list alone, bearer check, schema-serialized array, Link) on the same core: ${int(m.rps)} req/s, ${cpu(m)} µs CPU/req, p99 ${ms(m.p99Ms)}; minimal / baseline = ${x(m.rps / r.rps)}${m.rps > r.rps * 1.05 ? ': **the baseline is slow**' : ''}.`,
        '',
      );
    const n = naive && best(naive);
    if (n && d)
      lines.push(
        `${sc.name}: the naive durable server (bench/durable.ts --naive: a transaction per write, no kept pages): ${int(n.rps)} req/s, ${cpu(n)} µs CPU/req, p99 ${ms(n.p99Ms)}; naive / durable = ${x(n.rps / d.rps)}${n.rps > d.rps * 1.05 ? ': **the durable reference is slow**' : ''}.`,
        '',
      );
  }
  for (const { scenario: sc, service, compare } of all) {
    if (!compare) continue;
    // CPU per request of every round, the middle one compared: a shared machine moves req/s more than CPU per request.
    const middle = (rounds: Round[]) =>
      percentile(
        rounds.map((r) => r.cpu[0]!),
        0.5,
      );
    const perRound = (rounds: Round[]) => rounds.map((r) => int(r.cpu[0]!)).join(', ');
    lines.push(
      `${sc.name}: the service vs the build at ${run.compare}, CPU µs/req by round: ${perRound(service)} vs ${perRound(compare)}; middle rounds ${int(middle(service))} vs ${int(middle(compare))} (${x(middle(service) / middle(compare))}); best req/s ${int(best(service).rps)} vs ${int(best(compare).rps)}, their p99 ${ms(best(service).p99Ms)} vs ${ms(best(compare).p99Ms)}.`,
      '',
    );
  }
  for (const { scenario: sc, s } of all) {
    const share = sc.vs && s.rps / (all.find((o) => o.scenario.name === sc.vs!.name)?.s.rps ?? NaN);
    const target = sc.vs?.min ? ` (target ≥ ${sc.vs.min}×: ${met(share! >= sc.vs.min)})` : '';
    if (share) lines.push(`${sc.name} / ${sc.vs!.name} service req/s = ${x(share)}${target}.`, '');
  }
  if (onPg.length > 0)
    lines.push(
      '## PostgreSQL: the service next to pgbench',
      '',
      `- Service: as above, with \`--db <scratch database>\` on PostgreSQL (${run.pgHost}), ${onPg[0]!.scenario.rowsPerOwner.toLocaleString('en-US')} plants of one owner; not pinned, like PostgreSQL, since each request needs both.`,
      `- Ceiling: pgbench \`-M prepared -j 1\` on the same table and with as many connections, running per transaction what a request needs of the database, on the load generator's CPU.`,
      "- CPU per request or transaction from /proc; PostgreSQL's counts all its processes.",
      '',
      PG_HEADER,
      '|---|---|---|---|---|---|---|---|---|',
      ...onPg.map(pgRow),
      '',
    );
  // A quarter of all CPU time (half a core of two) taken by something else.
  if (run.busy.share > 0.25)
    lines.push(
      `**The machine was busy before the run began** (${busy} % of its CPU time in use): neither server reached its own rate, so compare CPU µs/request rather than req/s, and run again on a quiet machine.`,
      '',
    );
  lines.push(eventPathLine(run.eventPath, all.find((o) => o.scenario.name === 'create')?.s), '');
  const logged = outcomes.reduce((n, o) => n + o.logBytes, 0);
  const served = total('requests', ...outcomes.map((o) => o.service));
  lines.push(
    'Load generator, per scenario:',
    '',
    ...all.map((o) => `- ${o.scenario.name}: ${generatorCheck(o)}.`),
    '',
    `Service log: ${int(logged)} bytes for ${int(served)} requests (${(logged / Math.max(1, served)).toFixed(1)} bytes per request).`,
  );
  const errors = outcomes.map(
    (o) => [o.scenario.name, total('errors', o.service, o.reference, o.durable ?? [])] as const,
  );
  const failed = errors.filter(([, n]) => n > 0).map(([name, n]) => `${name} ${n}`);
  if (failed.length > 0) lines.push('', `Errors (non-2xx, socket errors, timeouts): ${failed.join(', ')}.`);
  return `${lines.join('\n')}\n`;
}
