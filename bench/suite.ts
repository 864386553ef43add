// Every selected scenario on one backend, then the workers comparison. A
// scenario that fails is noted and the suite goes on with the next.
import { stopAll } from './children.js';
import type { BackendStatus, Failure, ScenarioResult, WorkersComparison } from './results.js';
import { runScenario, type Measurement, type RunContext } from './runner.js';
import type { Scenario, ScenarioName } from './scenarios.js';
import type { StoreTarget } from './targets-store.js';

/** The scenarios whose workers=2 vs workers=1 ratio is reported. */
export const WORKER_SCENARIOS: readonly ScenarioName[] = ['list10k', 'create'];

export interface SuiteOutcome {
  results: ScenarioResult[];
  workers: WorkersComparison[];
  status: BackendStatus;
  failures: Failure[];
}

/** The error's first line and the server's own last words, which usually say why. */
function reasonOf(error: unknown): string {
  const [first = '', ...rest] = (error as Error).message.split('\n');
  const said = rest.filter((l) => l.trim() !== '' && !l.startsWith('--- ')).slice(-3);
  return (said.length > 0 ? `${first}: ${said.join(' | ')}` : first).slice(0, 600);
}

export async function runSuite(
  ctx: RunContext,
  target: StoreTarget,
  scenarios: Record<ScenarioName, Scenario>,
): Promise<SuiteOutcome> {
  const o = ctx.options;
  const out: SuiteOutcome = { results: [], workers: [], failures: [], status: { backend: target.kind, status: 'ran' } };
  const failed = async (what: string, error: unknown) => {
    out.failures.push({ backend: target.kind, what, reason: reasonOf(error) });
    ctx.log(`  FAILED: ${(error as Error).message}`);
    await stopAll();
  };

  const ran = new Map<ScenarioName, Measurement>();
  let failures = 0;
  for (const name of o.scenarios) {
    const scenario = scenarios[name];
    ctx.log(`\n[${target.kind}] ${name}: ${scenario.description}`);
    try {
      const { baseline, service } = await runScenario(ctx, target, scenario, {
        workers: o.workers,
        withBaseline: true,
      });
      ran.set(name, service);
      out.results.push({
        backend: target.kind,
        scenario: name,
        description: scenario.description,
        rows: scenario.rows,
        baseline: baseline!,
        service,
        ratio: service.load.rps / baseline!.load.rps,
      });
    } catch (error) {
      failures++;
      await failed(name, error);
    }
  }

  if (o.compareWorkers) {
    const other = o.workers === 1 ? 2 : 1;
    for (const name of o.scenarios.filter((s) => WORKER_SCENARIOS.includes(s))) {
      const main = ran.get(name);
      if (!main) continue;
      ctx.log(`\n[${target.kind}] ${name}: the service alone with workers=${other}, for the workers comparison`);
      try {
        const { service: extra } = await runScenario(ctx, target, scenarios[name], {
          workers: other,
          withBaseline: false,
        });
        const [one, two] = other === 2 ? [main, extra] : [extra, main];
        out.workers.push({ backend: target.kind, scenario: name, one, two, ratio: two.load.rps / one.load.rps });
      } catch (error) {
        await failed(`${name} workers=${other}`, error);
      }
    }
  }

  if (failures > 0) {
    out.status = {
      backend: target.kind,
      status: failures === o.scenarios.length ? 'failed' : 'ran',
      reason: `${failures} scenario(s) failed`,
    };
  }
  return out;
}
