// The Markdown report: what ran, on what, the numbers, the targets, and the
// caveats a reader needs to judge them.
import type { Measurement } from './runner.js';
import type { BenchReport } from './results.js';

const n0 = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => n.toFixed(2);
const mib = (kib: number) => (kib / 1024).toFixed(0);
const errs = (m: Measurement) => `${m.load.non2xx} / ${m.load.socketErrors}`;

function table(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

function nonOk(m: Measurement): string | undefined {
  const bad = Object.entries(m.load.statusCounts).filter(([code]) => !code.startsWith('2'));
  if (bad.length === 0 && m.load.socketErrors === 0) return undefined;
  const parts = bad.map(([code, count]) => `${count} × ${code}`);
  if (m.load.socketErrors > 0) parts.push(`${m.load.socketErrors} socket errors (${m.load.timeouts} timeouts)`);
  return parts.join(', ');
}

export function renderMarkdown(r: BenchReport): string {
  const o = r.options as {
    durationS: number;
    warmupS: number;
    connections: number;
    durability: string;
    workers: number;
  };
  const out: string[] = [];
  out.push(`# Plant Store benchmark, ${r.startedAt}`, '');
  out.push(
    `Node ${r.environment.node} on ${r.environment.os}, ${r.environment.cpuCount} × ${r.environment.cpuModel}, ${r.environment.memoryGiB} GiB. ` +
      `Each server: ${o.warmupS} s warm-up, then ${o.durationS} s measured, ${o.connections} keep-alive connections (autocannon, one request in flight per connection). ` +
      `Service: \`serve --durability ${o.durability} --workers ${o.workers} --log-level warn\`. Run took ${Math.round(r.wallSeconds)} s.`,
    '',
  );
  out.push(
    r.pinning.enabled
      ? `**Pinned** with taskset: server on CPU ${r.pinning.serverCpus}, load generator on CPU ${r.pinning.loadCpus}. ` +
          `With 2 workers the service needs both CPUs (${r.pinning.serverCpusWorkers2}), so it then shares CPU ${r.pinning.loadCpus} with the load generator.`
      : `**Not pinned** (${r.pinning.reason}): server and load generator are scheduled freely across the CPUs.`,
    '',
  );
  const during = [...r.results.flatMap((x) => [x.baseline, x.service]), ...r.workers.map((w) => w.two)].map(
    (m) => m.cpu.others,
  );
  const duringPct = during.length > 0 ? Math.round(during.reduce((a, b) => a + b, 0) / during.length) : 0;
  const busy = Math.max(duringPct, r.backgroundBeforePct) >= 25;
  out.push(
    `Other processes (outside the bench) used ${r.backgroundBeforePct} % of a core just before the run and ${duringPct} % on average during the measured rounds` +
      (busy
        ? ': **the machine was busy, so req/s and latencies are noisy**; compare server CPU per request, which is not.'
        : '.'),
    '',
  );
  out.push(
    `The load generator runs on the same ${r.environment.cpuCount}-core machine as the server it measures: with one core each, the numbers show ` +
      'how the service compares with the baseline here, not what it would do with a remote client and the whole machine.',
    '',
  );

  out.push(
    `Backends: ${r.backends.map((b) => `${b.backend} **${b.status === 'ran' ? 'ran' : b.status.toUpperCase()}**${b.reason ? ` (${b.reason})` : ''}`).join('; ')}.`,
    '',
  );

  out.push('## Results', '');
  if (r.results.length === 0) {
    out.push('No scenario completed.', '');
    for (const f of r.failures) out.push(`- ${f.backend} ${f.what}: **failed**: \`${f.reason.replace(/`/g, "'")}\``);
    if (r.failures.length > 0) out.push('');
    if (r.notes.length > 0) out.push('## Notes', '', ...r.notes.map((n) => `- ${n}`), '');
    return out.join('\n');
  }
  out.push(
    table(
      [
        'backend',
        'scenario',
        'baseline req/s',
        'service req/s',
        'service / baseline',
        'baseline p50 / p99 ms',
        'service p50 / p99 ms',
        'service non-2xx / socket err',
        'baseline non-2xx / socket err',
        'peak RSS service / baseline MiB',
      ],
      r.results.map((x) => [
        x.backend,
        x.scenario,
        n0(x.baseline.load.rps),
        n0(x.service.load.rps),
        `${x.ratio.toFixed(2)}×`,
        `${ms(x.baseline.load.p50Ms)} / ${ms(x.baseline.load.p99Ms)}`,
        `${ms(x.service.load.p50Ms)} / ${ms(x.service.load.p99Ms)}`,
        errs(x.service),
        errs(x.baseline),
        `${mib(x.service.peakRssKiB)} / ${mib(x.baseline.peakRssKiB)}`,
      ]),
    ),
    '',
  );

  out.push('### CPU during the measured rounds (% of one core, and per request)', '');
  const cpu = (m: Measurement) => `${m.cpu.server} / ${m.cpu.loadGenerator}`;
  const withDb = r.results.some((x) => x.backend === 'postgres');
  out.push(
    table(
      [
        'backend',
        'scenario',
        'server CPU µs per request: baseline / service',
        'baseline: server / load gen %',
        'service: server / load gen %',
        ...(withDb ? ['service: PostgreSQL %'] : []),
        'others (outside the bench) % during baseline / service',
      ],
      r.results.map((x) => [
        x.backend,
        x.scenario,
        `${x.baseline.cpu.serverUsPerRequest} / ${x.service.cpu.serverUsPerRequest}`,
        cpu(x.baseline),
        cpu(x.service),
        ...(withDb ? [x.backend === 'postgres' ? String(x.service.cpu.database) : '–'] : []),
        `${x.baseline.cpu.others} / ${x.service.cpu.others}`,
      ]),
    ),
    '',
    'Server CPU per request is the least noisy comparison on a shared machine: req/s drops when other processes take CPU time, CPU per request mostly does not.',
    '',
  );

  out.push('## Targets (reported, not asserted)', '');
  out.push(
    table(
      ['backend', 'target', 'measured', 'result'],
      r.targets.map((t) => [
        t.backend,
        t.target,
        t.measured + (t.note ? ` (${t.note})` : ''),
        t.pass === undefined ? 'n/a' : t.pass ? 'PASS' : 'MISS',
      ]),
    ),
    '',
  );

  const workerFailures = r.failures.filter((f) => f.what.includes('workers='));
  if (r.workers.length > 0 || workerFailures.length > 0) {
    out.push('## Workers: 2 vs 1', '');
    out.push(
      table(
        [
          'backend',
          'scenario',
          'workers=1 req/s',
          'workers=2 req/s',
          'ratio',
          'p99 ms w1 / w2',
          'non-2xx w2',
          'peak RSS w2 MiB (all processes)',
        ],
        [
          ...r.workers.map((w) => [
            w.backend,
            w.scenario,
            n0(w.one.load.rps),
            n0(w.two.load.rps),
            `${w.ratio.toFixed(2)}×`,
            `${ms(w.one.load.p99Ms)} / ${ms(w.two.load.p99Ms)}`,
            String(w.two.load.non2xx),
            mib(w.two.peakRssKiB),
          ]),
          ...workerFailures.map((f) => [f.backend, f.what, '', '**failed**', '', '', '', '']),
        ],
      ),
      '',
      r.pinning.enabled
        ? `Two workers get CPUs ${r.pinning.serverCpusWorkers2} and so compete with the load generator for CPU ${r.pinning.loadCpus}; on this machine the ratio says more about that contention than about how the service scales.`
        : 'Two workers compete with the load generator for the same cores.',
      '',
    );
  }

  const scenarios = new Map(r.results.map((x) => [x.scenario, x.description]));
  if (scenarios.size > 0) {
    out.push('## Scenarios', '');
    for (const [name, description] of scenarios) out.push(`- \`${name}\`: ${description}`);
    out.push('');
  }

  const issues: string[] = [];
  for (const x of [
    ...r.results.flatMap((y) => [y.baseline, y.service].map((m) => ({ m, y: `${y.backend} ${y.scenario}` }))),
    ...r.workers.map((w) => ({ m: w.two, y: `${w.backend} ${w.scenario} workers=2` })),
  ]) {
    const bad = nonOk(x.m);
    if (bad) issues.push(`- ${x.y}, ${x.m.server}: ${bad}`);
    const logged = x.m.problems.length;
    if (logged > 0)
      issues.push(
        `- ${x.y}, ${x.m.server}: ${logged} error log or stderr lines, first: \`${x.m.problems[0]!.slice(0, 240).replace(/`/g, "'")}\``,
      );
  }
  for (const f of r.failures) issues.push(`- ${f.backend} ${f.what}: **failed**: \`${f.reason.replace(/`/g, "'")}\``);
  out.push(
    '## Errors seen',
    '',
    issues.length > 0 ? issues.join('\n') : 'None: every response was 2xx and no server logged an error.',
    '',
  );

  if (r.notes.length > 0) out.push('## Notes', '', ...r.notes.map((n) => `- ${n}`), '');
  return out.join('\n');
}
