// The performance targets from the issue. They are reported, never asserted:
// a MISS is information for whoever reads the report, not a failed run.
import type { Backend } from './options.js';
import type { ScenarioResult, TargetCheck } from './results.js';
import type { ScenarioName } from './scenarios.js';

const P99_LIMIT_MS = 5;
const TARGET_CONNECTIONS = 32;

// Rounded down, so a ratio just under a target never prints as the target.
const x = (n: number) => `${(Math.floor(n * 100) / 100).toFixed(2)}×`;

export function checkTargets(
  results: readonly ScenarioResult[],
  backends: readonly Backend[],
  opts: { durability: 'full' | 'normal'; connections: number },
): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const backend of backends) {
    const get = (s: ScenarioName) => results.find((r) => r.backend === backend && r.scenario === s);
    const list10k = get('list10k');
    const list1m = get('list1m');
    const create = get('create');
    const missing = (s: string): Pick<TargetCheck, 'measured' | 'pass'> => ({
      measured: `not run (${s})`,
      pass: undefined,
    });

    checks.push({
      backend,
      target: 'list10k ≥ 0.8× baseline req/s',
      ...(list10k ? { measured: x(list10k.ratio), pass: list10k.ratio >= 0.8 } : missing('list10k')),
    });
    const scale = list10k && list1m ? list1m.service.load.rps / list10k.service.load.rps : undefined;
    checks.push({
      backend,
      target: 'list1m ≥ 0.9× list10k (service req/s)',
      ...(scale !== undefined ? { measured: x(scale), pass: scale >= 0.9 } : missing('needs list10k and list1m')),
      ...(list1m && list1m.rows !== 1_000_000
        ? { note: `big store had ${list1m.rows.toLocaleString('en-US')} plants, not 1,000,000` }
        : {}),
    });
    const cold10k = get('list10k-nocache');
    const cold1m = get('list1m-nocache');
    const coldScale = cold10k && cold1m ? cold1m.service.load.rps / cold10k.service.load.rps : undefined;
    checks.push({
      backend,
      target: 'list1m-nocache ≥ 0.9× list10k-nocache (the keyset query itself)',
      ...(coldScale !== undefined
        ? { measured: x(coldScale), pass: coldScale >= 0.9 }
        : missing('needs both -nocache lists')),
    });
    checks.push({
      backend,
      target: 'create ≥ 0.6× baseline req/s (durability full)',
      ...(create ? { measured: x(create.ratio), pass: create.ratio >= 0.6 } : missing('create')),
      ...(opts.durability !== 'full'
        ? { note: `measured with --durability ${opts.durability}; the target is for full` }
        : {}),
    });
    for (const r of [list10k, list1m, cold10k, cold1m]) {
      if (!r) continue;
      checks.push({
        backend,
        target: `${r.scenario} p99 ≤ ${P99_LIMIT_MS} ms at ${TARGET_CONNECTIONS} connections`,
        measured: `${r.service.load.p99Ms.toFixed(2)} ms`,
        pass: r.service.load.p99Ms <= P99_LIMIT_MS,
        ...(opts.connections !== TARGET_CONNECTIONS ? { note: `measured at ${opts.connections} connections` } : {}),
      });
    }
  }
  return checks;
}
