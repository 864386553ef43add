// The Markdown report: the tables, the targets, and whether the load
// generator could have been what limited the numbers.
import type { Scenario } from './scenarios.js';

/** One measured round of one side: the service, the baseline or pgbench. */
export interface Round {
  rps: number;
  p99Ms: number;
  requests: number;
  /** Non-2xx answers, socket errors and timeouts. */
  errors: number;
  /** CPU µs per request of what the table's header names: the server; node + PostgreSQL; PostgreSQL + pgbench. */
  cpu: number[];
  /** Share of its core the load generator used. */
  loadPct: number;
}

export interface Outcome {
  scenario: Scenario;
  service: Round;
  /** The baseline's best round, or pgbench's. */
  reference: Round;
  errors: number;
  serviceRequests: number;
  serviceLogBytes: number;
}

interface RunInfo {
  startedAt: Date;
  command: string;
  machine: string;
  method: string;
  serviceFlags: string[];
  /** Share of the CPUs' time in use by other work in the `seconds` just before the run. */
  busy: { share: number; seconds: number };
  fsync: [p50: number, p99: number];
  pgHost?: string | undefined;
}

// Rounded down, so a ratio just under a target never prints as the target.
const x = (n: number) => `${(Math.floor(n * 100) / 100).toFixed(2)}×`;
const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
const ms = (n: number) => `${n.toFixed(2)} ms`;
const met = (ok: boolean) => (ok ? 'met' : '**missed**');
/** The value below which a share `p` (0..1) of `values` lies; 0 without values. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(p * sorted.length)] ?? 0;
}

/** The round with the most requests per second. */
export const best = (rounds: Round[]): Round => rounds.reduce((a, b) => (b.rps > a.rps ? b : a));

export const roundLine = (side: string, r: Round) =>
  `  ${side.padEnd(8)} ${int(r.rps).padStart(7)} req/s  p99 ${ms(r.p99Ms)}  CPU µs each ${r.cpu.map(int).join(' + ')}` +
  `  load generator ${Math.round(r.loadPct)} %${r.errors ? `  ERRORS ${r.errors}` : ''}`;

function row({ scenario: sc, service: s, reference: r }: Outcome): string {
  const ratio = s.rps / r.rps;
  const t = sc.target;
  const target = t
    ? `≥ ${t.ratio}×${t.p99Ms ? `, p99 ≤ ${t.p99Ms} ms` : ''}: ${met(ratio >= t.ratio && (!t.p99Ms || s.p99Ms <= t.p99Ms))}`
    : '';
  const cpu = (q: Round) => q.cpu.map(int).join(' + ');
  return `| ${sc.name}: ${sc.title} | ${int(s.rps)} | ${ms(s.p99Ms)} | ${cpu(s)} | ${int(r.rps)} | ${ms(r.p99Ms)} | ${cpu(r)} | ${x(ratio)} | ${target} |`;
}

/** Whether this scenario's numbers could be the load generator's limit rather than the servers'. */
function generatorCheck({ scenario, service, reference }: Outcome): string {
  const [pct, rps, at] = scenario.pgbench
    ? [service.loadPct, service.rps, 'service']
    : [reference.loadPct, reference.rps, 'baseline'];
  const lead = reference.rps / service.rps;
  if (pct < 90) return `not the limit: ${Math.round(pct)} % of its CPU at the ${at}'s ${int(rps)} req/s`;
  if (!scenario.pgbench && lead >= 1.15)
    return `busy (${Math.round(pct)} %) at the baseline's rate, which is ${x(lead)} the service's: not the service's limit`;
  return `**may be the limit**: ${Math.round(pct)} % of its CPU at the ${at}'s rate; ratios are upper bounds`;
}

export function report(outcomes: Outcome[], run: RunInfo): string {
  const onSqlite = outcomes.filter((o) => !o.scenario.pgbench);
  const onPg = outcomes.filter((o) => o.scenario.pgbench);
  const lines = [
    '# Plant Store benchmark',
    '',
    `\`${run.command}\`, ${run.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
    '',
    `- Machine: ${run.machine}; ${Math.round(run.busy.share * 100)} % of its CPU time in use by other work in the ${run.busy.seconds} s before the run (other work lowers both servers' numbers).`,
    `- Disk: fsync in the temporary folder takes ${ms(run.fsync[0])} (p50), ${ms(run.fsync[1])} (p99); every create waits for one, so create latencies cannot be lower.`,
    `- Service: \`node dist/src/cli/bin.js serve --db <temporary SQLite file> --port <free port>\`${run.serviceFlags.length ? ` \`${run.serviceFlags.join(' ')}\`` : ''}, as \`npm start\` runs it${run.serviceFlags.length ? ' plus those flags' : ', every other setting at its default'}, stdout and stderr to a file.`,
    '- Baseline: in-memory Fastify with the same routes, bearer check and JSON; no storage, no logging.',
    `- Load: ${run.method}.`,
    '',
  ];
  if (onSqlite.length > 0)
    lines.push(
      '| scenario | service req/s | p99 | CPU µs/req | baseline req/s | p99 | CPU µs/req | service / baseline | target |',
      '|---|---|---|---|---|---|---|---|---|',
      ...onSqlite.map(row),
      '',
    );
  for (const { scenario: sc, service } of outcomes) {
    const vs = sc.vs && outcomes.find((o) => o.scenario.name === sc.vs!.name)?.service;
    const share = vs && service.rps / vs.rps;
    const min = sc.vs?.min;
    if (share)
      lines.push(
        `${sc.name} / ${sc.vs!.name} service req/s = ${x(share)}${min ? ` (target ≥ ${min}×: ${met(share >= min)})` : ''}.`,
        '',
      );
  }
  if (onPg.length > 0)
    lines.push(
      '## PostgreSQL: the service next to pgbench',
      '',
      `- Service: as above, with \`--db <scratch database>\` on PostgreSQL (${run.pgHost}), ${onPg[0]!.scenario.rowsPerOwner.toLocaleString('en-US')} plants of one owner; not pinned, like PostgreSQL, since each request needs both.`,
      `- Ceiling: pgbench \`-M prepared -j 1\` on the same table and with as many connections, running per transaction what a request needs of the database, on the load generator's CPU.`,
      "- CPU per request or transaction from /proc; PostgreSQL's counts all its processes.",
      '',
      '| scenario | service req/s | p99 | CPU µs/req: node + PostgreSQL | pgbench tps | p99 | CPU µs/tx: PostgreSQL + pgbench | service / pgbench | target |',
      '|---|---|---|---|---|---|---|---|---|',
      ...onPg.map(row),
      '',
    );
  // A quarter of all CPU time (half a core of two) taken by something else.
  if (run.busy.share > 0.25)
    lines.push(
      `**The machine was busy before the run began** (${Math.round(run.busy.share * 100)} % of its CPU time in use): neither server reached its own rate, so compare CPU µs/request rather than req/s, and run again on a quiet machine.`,
      '',
    );
  lines.push(
    'Load generator, per scenario:',
    '',
    ...outcomes.map((o) => `- ${o.scenario.name}: ${generatorCheck(o)}.`),
  );
  const logged = outcomes.reduce((n, o) => n + o.serviceLogBytes, 0);
  const served = outcomes.reduce((n, o) => n + o.serviceRequests, 0);
  lines.push(
    '',
    `Service log: ${int(logged)} bytes for ${int(served)} requests (${(logged / Math.max(1, served)).toFixed(1)} bytes per request).`,
  );
  const errors = outcomes.filter((o) => o.errors > 0);
  if (errors.length > 0)
    lines.push(
      '',
      `Errors (non-2xx, socket errors, timeouts): ${errors.map((o) => `${o.scenario.name} ${o.errors}`).join(', ')}.`,
    );
  return `${lines.join('\n')}\n`;
}
