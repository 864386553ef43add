// The Markdown report: one table, the targets, and whether the load
// generator could have been what limited the numbers.
import type { LoadResult } from './load.js';
import { FLATNESS, JWT_VS_LIST, type Scenario } from './scenarios.js';

export interface Round extends LoadResult {
  rps: number;
  serverCpuSeconds: number;
}

export interface Outcome {
  scenario: Scenario;
  baseline: Round;
  service: Round;
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
  loadavg: [number, number];
  cpus: number;
  fsync: [p50: number, p99: number];
}

// Rounded down, so a ratio just under a target never prints as the target.
export const x = (n: number) => `${(Math.floor(n * 100) / 100).toFixed(2)}×`;
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => `${n.toFixed(2)} ms`;
const us = (r: Round) => Math.round((r.serverCpuSeconds * 1e6) / r.requests);
const genPct = (r: Round) => Math.round((100 * r.cpuSeconds) / r.seconds);
export const met = (ok: boolean) => (ok ? 'met' : '**missed**');
/** The round with the most requests per second. */
export const best = <R extends { rps: number }>(rounds: R[]): R => rounds.reduce((a, b) => (b.rps > a.rps ? b : a));

/** Whether this scenario's numbers could be the load generator's limit rather than the servers'. */
function generatorCheck(o: Outcome): string {
  const atBaseline = genPct(o.baseline);
  const lead = o.baseline.rps / o.service.rps;
  if (atBaseline < 90)
    return `not the limit: ${atBaseline} % of its CPU at the baseline's ${int(o.baseline.rps)} req/s`;
  if (lead >= 1.15)
    return `busy (${atBaseline} %) at the baseline's rate, which is ${x(lead)} the service's: not the service's limit`;
  return `**may be the limit**: ${atBaseline} % of its CPU and the baseline only ${x(lead)} the service; ratios are upper bounds`;
}

export function report(outcomes: Outcome[], run: RunInfo): string {
  const lines = [
    '# Plant Store benchmark',
    '',
    `\`${run.command}\`, ${run.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
    '',
    `- Machine: ${run.machine}; load average ${run.loadavg[0].toFixed(2)} at the start, ${run.loadavg[1].toFixed(2)} at the end (other work on the machine lowers both servers' numbers).`,
    `- Disk: fsync in the temporary folder takes ${ms(run.fsync[0])} (p50), ${ms(run.fsync[1])} (p99); every create waits for one, so create latencies cannot be lower.`,
    `- Service: \`node dist/src/cli/bin.js serve --db <temporary SQLite file> --port <free port>\`${run.serviceFlags.length ? ` \`${run.serviceFlags.join(' ')}\`` : ''}, as \`npm start\` runs it${run.serviceFlags.length ? ' plus those flags' : ', every other setting at its default'}, stdout and stderr to a file.`,
    '- Baseline: in-memory Fastify with the same routes, bearer check and JSON; no storage, no logging.',
    `- Load: ${run.method}.`,
    '',
    '| scenario | service req/s | p99 | CPU µs/req | baseline req/s | p99 | CPU µs/req | service / baseline | target |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const o of outcomes) {
    const { service: s, baseline: b, scenario: sc } = o;
    const ratio = s.rps / b.rps;
    const t = sc.target;
    const target = t
      ? `≥ ${t.ratio}×${t.p99Ms ? `, p99 ≤ ${t.p99Ms} ms` : ''}: ${met(ratio >= t.ratio && (!t.p99Ms || s.p99Ms <= t.p99Ms))}`
      : '';
    lines.push(
      `| ${sc.name}: ${sc.title} | ${int(s.rps)} | ${ms(s.p99Ms)} | ${us(s)} | ${int(b.rps)} | ${ms(b.p99Ms)} | ${us(b)} | ${x(ratio)} | ${target} |`,
    );
  }
  const named = (name: string) => outcomes.find((o) => o.scenario.name === name);
  const [of, vs, jwt, list] = [FLATNESS.of, FLATNESS.vs, JWT_VS_LIST.of, JWT_VS_LIST.vs].map(named);
  lines.push('');
  if (of && vs) {
    const flat = of.service.rps / vs.service.rps;
    lines.push(
      `List flatness: ${FLATNESS.of} / ${FLATNESS.vs} service req/s = ${x(flat)} (target ≥ ${FLATNESS.min}×: ${met(flat >= FLATNESS.min)}).`,
      '',
    );
  }
  if (jwt && list)
    lines.push(
      `JWT: ${JWT_VS_LIST.of} / ${JWT_VS_LIST.vs} service req/s = ${x(jwt.service.rps / list.service.rps)} (the same list with a JWT instead of an opaque token).`,
      '',
    );
  // Two busy processes of ours (a server and the load generator) at a time.
  if (run.loadavg[0] > run.cpus)
    lines.push(
      `**The machine was busy before the run began** (load average ${run.loadavg[0].toFixed(2)} on ${run.cpus} CPUs): neither server reached its own rate, so compare CPU µs/request rather than req/s, and run again on a quiet machine.`,
      '',
    );
  lines.push('Load generator, per scenario:', '');
  for (const o of outcomes) lines.push(`- ${o.scenario.name}: ${generatorCheck(o)}.`);
  lines.push('');
  const logged = outcomes.reduce((n, o) => n + o.serviceLogBytes, 0);
  const served = outcomes.reduce((n, o) => n + o.serviceRequests, 0);
  lines.push(
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
