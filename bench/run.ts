// `npm run bench`: the service as shipped against an in-memory Fastify
// baseline, scenario by scenario, each server in its own process with its own
// load generator process. Writes bench/results/{latest,<date>}.{json,md,svg}
// and prints the Markdown report. See `npm run bench -- --help`.
import { mkdtempSync, rmSync } from 'node:fs';
import { arch, cpus, platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { issueToken } from '../src/auth/tokens.js';
import type { Store } from '../src/store/store.js';
import { killAllNow, stopAll } from './children.js';
import { methodNotes } from './notes.js';
import { OptionsError, USAGE, parseOptions, type BenchOptions } from './options.js';
import { detectPinning } from './pinning.js';
import { BENCH_OWNER } from './plant-data.js';
import { createBenchDatabase } from './postgres.js';
import { waitForQuiet } from './quiet.js';
import { renderMarkdown } from './report.js';
import type { BackendStatus, BenchReport, Failure, ScenarioResult, WorkersComparison } from './results.js';
import type { RunContext } from './runner.js';
import { defineScenarios } from './scenarios.js';
import { WORKER_SCENARIOS, runSuite } from './suite.js';
import { checkTargets } from './targets.js';
import { postgresTarget, sqliteTarget, type StoreTarget } from './targets-store.js';
import { writeResults } from './write-results.js';

/** Background CPU (% of one core) above which the machine is too busy to measure cleanly. */
const QUIET_LIMIT_PCT = 25;

let interrupted = false;
// After Ctrl-C the children die under the scenarios' feet; their failures are expected, not news.
const log = (line: string) => void (interrupted || process.stderr.write(`${line}\n`));

/** Everything to undo on the way out, whichever way out it is. */
const cleanups: (() => Promise<void> | void)[] = [];
async function cleanUp(): Promise<void> {
  await stopAll();
  for (const c of cleanups.splice(0).reverse()) {
    try {
      await c();
    } catch (error) {
      log(`cleanup: ${(error as Error).message}`);
    }
  }
}

function installSignalHandlers(): void {
  process.on('exit', killAllNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      log(`\n${signal}: stopping servers and load generators, removing temporary data`);
      interrupted = true;
      void cleanUp().finally(() => process.exit(130));
    });
  }
}

function estimateSeconds(o: BenchOptions): number {
  const perServer = o.warmupS + o.durationS + 1 + o.rounds * 0.2;
  const runs =
    o.scenarios.length * 2 + (o.compareWorkers ? o.scenarios.filter((s) => WORKER_SCENARIOS.includes(s)).length : 0);
  const preload =
    o.scenarios.filter((s) => s.startsWith('list1m')).length * o.bigRows +
    (o.scenarios.includes('delete') ? o.deleteRows : 0);
  return o.backends.length * (runs * perServer + preload / 200_000);
}

/** The stores to run on; PostgreSQL that cannot be set up is reported as unavailable, not fatal. */
async function openTargets(
  o: BenchOptions,
  tmp: string,
): Promise<{ targets: StoreTarget[]; unavailable: BackendStatus[] }> {
  const targets: StoreTarget[] = [];
  const unavailable: BackendStatus[] = [];
  for (const backend of o.backends) {
    if (backend === 'sqlite') {
      targets.push(sqliteTarget(tmp, o.durability, o.keep));
      continue;
    }
    try {
      const issue = async (store: Store) => (await issueToken(store.tokens, { owner: BENCH_OWNER })).token;
      const { db, token } = await createBenchDatabase(o.pgUrl!, o.durability, issue);
      cleanups.push(() => db.drop());
      targets.push(postgresTarget(db, token));
      log(`postgres: benchmarking on a fresh database (${new URL(db.url).pathname.slice(1)}), dropped at the end`);
    } catch (error) {
      const reason = (error as Error).message;
      unavailable.push({ backend, status: 'unavailable', reason });
      log(`postgres: UNAVAILABLE, skipped: ${reason}`);
    }
  }
  return { targets, unavailable };
}

/** The URL without its password, for the report. */
function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

async function main(): Promise<number> {
  let o: BenchOptions | undefined;
  try {
    o = parseOptions(process.argv.slice(2));
  } catch (error) {
    if (error instanceof OptionsError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`bench: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  if (!o) {
    process.stdout.write(USAGE);
    return 0;
  }
  installSignalHandlers();
  const started = new Date();
  const pinning = detectPinning(!o.pin);
  const ctx: RunContext = { options: o, pinning, log };
  log(
    `bench: ${o.scenarios.join(', ')} on ${o.backends.join(' + ')}; ${o.warmupS} s warm-up + ${o.durationS} s per server, ${o.connections} connections; ` +
      `about ${Math.ceil(estimateSeconds(o) / 60)} min. ${pinning.enabled ? `Pinned: server CPU ${pinning.serverCpus(1)}, load generator CPU ${pinning.loadCpus}.` : `Not pinned (${pinning.reason}).`}`,
  );

  const quiet = await waitForQuiet(QUIET_LIMIT_PCT, o.waitQuietS, log);
  if (quiet.pct >= QUIET_LIMIT_PCT) {
    log(
      `WARNING: other processes use ${quiet.pct} % of a core right now; expect noisy numbers (see the "others" CPU column).`,
    );
  }

  const tmp = mkdtempSync(join(tmpdir(), 'plant-bench-'));
  if (!o.keep) cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
  else log(`keeping SQLite files in ${tmp}`);

  const scenarios = defineScenarios({ bigRows: o.bigRows, deleteRows: o.deleteRows });
  const { targets, unavailable } = await openTargets(o, tmp);
  const results: ScenarioResult[] = [];
  const workers: WorkersComparison[] = [];
  const statuses = [...unavailable];
  const failures: Failure[] = [];
  for (const target of targets) {
    const outcome = await runSuite(ctx, target, scenarios);
    results.push(...outcome.results);
    workers.push(...outcome.workers);
    statuses.push(outcome.status);
    failures.push(...outcome.failures);
  }

  const finished = new Date();
  const report: BenchReport = {
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    wallSeconds: (finished.getTime() - started.getTime()) / 1000,
    environment: {
      node: process.version,
      os: `${platform()} ${release()} ${arch()}`,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown CPU',
      cpuCount: pinning.cpuCount,
      memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    },
    options: { ...o, pgUrl: o.pgUrl ? redact(o.pgUrl) : undefined },
    backgroundBeforePct: quiet.pct,
    pinning: {
      enabled: pinning.enabled,
      ...(pinning.reason ? { reason: pinning.reason } : {}),
      serverCpus: pinning.serverCpus(1),
      serverCpusWorkers2: pinning.serverCpus(2),
      loadCpus: pinning.loadCpus,
    },
    backends: o.backends.flatMap((b) => statuses.filter((s) => s.backend === b)),
    results,
    workers,
    targets: checkTargets(
      results,
      targets.map((t) => t.kind),
      { durability: o.durability, connections: o.connections },
    ),
    failures,
    notes: methodNotes(
      o,
      targets.some((t) => t.kind === 'postgres'),
    ),
  };
  const markdown = renderMarkdown(report);
  const written = writeResults(report, markdown);
  await cleanUp();
  process.stdout.write(`\n${markdown}\n`);
  log(`written: ${written.join(', ')}`);
  return results.length > 0 ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (error) {
  log(`bench failed: ${(error as Error).stack ?? String(error)}`);
  await cleanUp();
}
process.exit(code);
