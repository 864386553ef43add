import { parseArgs } from 'node:util';
import { SCENARIO_NAMES, type ScenarioName } from './scenarios.js';

export type Backend = 'sqlite' | 'postgres';

export interface BenchOptions {
  durationS: number;
  warmupS: number;
  rounds: number;
  connections: number;
  bigRows: number;
  deleteRows: number;
  scenarios: ScenarioName[];
  workers: number;
  compareWorkers: boolean;
  durability: 'full' | 'normal';
  pgUrl: string | undefined;
  backends: Backend[];
  pin: boolean;
  keep: boolean;
  waitQuietS: number;
}

export const USAGE = `Usage: npm run bench -- [options]

  --duration SECONDS     measured time per server and scenario, over all rounds (default 10)
  --warmup SECONDS       unmeasured load on each server before its first round (default 2)
  --rounds N             measured rounds per server, baseline and service alternating (default 4)
  --connections N        keep-alive connections of the load generator (default 32)
  --rows N               plants in the big list scenario (default 1000000)
  --delete-rows N        plants stored for the delete scenario (default (warmup+duration) x 100000)
  --scenarios a,b,c      any of ${SCENARIO_NAMES.join(', ')} (default all)
  --workers N            service worker processes (default 1)
  --compare-workers      also run list10k and create with workers=2 (or 1 when --workers 2) and report the ratio (default on)
  --no-compare-workers   skip those extra runs
  --durability full|normal   service durability (default full)
  --db postgres://...    also run the service on PostgreSQL (a fresh database is created and dropped)
  --backends a,b         sqlite, postgres (default: sqlite, plus postgres when --db is given)
  --no-pin               do not pin server and load generator to CPUs
  --keep                 keep the temporary SQLite files
  --wait-quiet SECONDS   before starting, wait up to this long for other processes to use < 25 % of a core (default 0)
`;

export class OptionsError extends Error {}

function int(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new OptionsError(`--${name} must be a whole number >= ${min}, got "${raw}"`);
  return Number(raw);
}

function seconds(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min)
    throw new OptionsError(`--${name} must be a number of seconds >= ${min}, got "${raw}"`);
  return n;
}

function list<T extends string>(name: string, raw: string | undefined, allowed: readonly T[], fallback: T[]): T[] {
  if (raw === undefined) return fallback;
  const items = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of items) {
    if (!allowed.includes(item as T))
      throw new OptionsError(`--${name}: unknown "${item}" (choose from ${allowed.join(', ')})`);
  }
  if (items.length === 0) throw new OptionsError(`--${name} is empty`);
  // Keep the canonical order, so reports always read the same way.
  return allowed.filter((a) => items.includes(a));
}

/** Returns undefined for --help. */
export function parseOptions(argv: string[]): BenchOptions | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      rounds: { type: 'string' },
      connections: { type: 'string' },
      rows: { type: 'string' },
      'delete-rows': { type: 'string' },
      scenarios: { type: 'string' },
      workers: { type: 'string' },
      'compare-workers': { type: 'boolean' },
      'no-compare-workers': { type: 'boolean' },
      durability: { type: 'string' },
      db: { type: 'string' },
      backends: { type: 'string' },
      'no-pin': { type: 'boolean' },
      keep: { type: 'boolean' },
      'wait-quiet': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) return undefined;
  const durationS = seconds('duration', values.duration, 10, 1);
  const warmupS = seconds('warmup', values.warmup, 2, 0);
  const durability = values.durability ?? 'full';
  if (durability !== 'full' && durability !== 'normal')
    throw new OptionsError(`--durability must be full or normal, got "${durability}"`);
  const pgUrl = values.db;
  if (pgUrl !== undefined && !/^postgres(ql)?:\/\//i.test(pgUrl)) {
    throw new OptionsError('--db takes a postgres:// URL (SQLite always runs on a temporary file)');
  }
  const backends = list<Backend>(
    'backends',
    values.backends,
    ['sqlite', 'postgres'],
    pgUrl ? ['sqlite', 'postgres'] : ['sqlite'],
  );
  if (backends.includes('postgres') && !pgUrl) throw new OptionsError('--backends postgres needs --db postgres://...');
  const rounds = int('rounds', values.rounds, Math.max(1, Math.min(4, Math.floor(durationS))), 1);
  if (durationS / rounds < 1)
    throw new OptionsError(`--duration ${durationS} split into ${rounds} rounds leaves less than 1 s per round`);
  return {
    durationS,
    warmupS,
    rounds,
    connections: int('connections', values.connections, 32, 1),
    bigRows: int('rows', values.rows, 1_000_000, 11),
    deleteRows: int('delete-rows', values['delete-rows'], Math.ceil((warmupS + durationS) * 100_000), 1),
    scenarios: list('scenarios', values.scenarios, SCENARIO_NAMES, [...SCENARIO_NAMES]),
    workers: int('workers', values.workers, 1, 1),
    compareWorkers: !values['no-compare-workers'],
    durability,
    pgUrl,
    backends,
    pin: !values['no-pin'],
    keep: values.keep ?? false,
    waitQuietS: seconds('wait-quiet', values['wait-quiet'], 0, 0),
  };
}
