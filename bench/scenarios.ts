import type { Workload } from './load-types.js';
import { CREATE_ID_BASE } from './plant-data.js';

export const SCENARIO_NAMES = [
  'list10k',
  'list1m',
  'list10k-nocache',
  'list1m-nocache',
  'create',
  'delete',
  'mix',
] as const;
export type ScenarioName = (typeof SCENARIO_NAMES)[number];

export interface Scenario {
  name: ScenarioName;
  /** What the reader sees in the report. */
  description: string;
  /** Plants in the store (and in the baseline's Map) before the servers start. */
  rows: number;
  workload: Workload;
  /** Extra `serve` flags for the service in this scenario. */
  serviceArgs?: readonly string[];
}

// The service reuses unchanged list pages from memory; these variants turn
// that off, so every request runs the store's keyset query.
const NO_PAGE_CACHE = ['--list-cache-bytes', '0'] as const;

const LIST_LIMIT = 10;
const SMALL_STORE = 10_000;

export function defineScenarios(opts: { bigRows: number; deleteRows: number }): Record<ScenarioName, Scenario> {
  const rows = (n: number) => n.toLocaleString('en-US');
  return {
    list10k: {
      name: 'list10k',
      description: `GET /plants?limit=${LIST_LIMIT}, ${rows(SMALL_STORE)} plants stored`,
      rows: SMALL_STORE,
      workload: { kind: 'list', limit: LIST_LIMIT },
    },
    list1m: {
      name: 'list1m',
      description: `GET /plants?limit=${LIST_LIMIT}, ${rows(opts.bigRows)} plants stored`,
      rows: opts.bigRows,
      workload: { kind: 'list', limit: LIST_LIMIT },
    },
    'list10k-nocache': {
      name: 'list10k-nocache',
      description: `GET /plants?limit=${LIST_LIMIT}, ${rows(SMALL_STORE)} plants stored, page reuse off`,
      rows: SMALL_STORE,
      workload: { kind: 'list', limit: LIST_LIMIT },
      serviceArgs: NO_PAGE_CACHE,
    },
    'list1m-nocache': {
      name: 'list1m-nocache',
      description: `GET /plants?limit=${LIST_LIMIT}, ${rows(opts.bigRows)} plants stored, page reuse off`,
      rows: opts.bigRows,
      workload: { kind: 'list', limit: LIST_LIMIT },
      serviceArgs: NO_PAGE_CACHE,
    },
    create: {
      name: 'create',
      description: `POST /plants, a new id every request, ${rows(SMALL_STORE)} plants stored`,
      rows: SMALL_STORE,
      workload: { kind: 'create', firstId: CREATE_ID_BASE },
    },
    delete: {
      name: 'delete',
      description: `DELETE /plants/:id, a distinct stored id every request, ${rows(opts.deleteRows)} plants stored`,
      rows: opts.deleteRows,
      workload: { kind: 'delete', firstId: 1 },
    },
    mix: {
      name: 'mix',
      description: `90 % GET /plants?limit=${LIST_LIMIT}, 10 % POST /plants, ${rows(SMALL_STORE)} plants stored`,
      rows: SMALL_STORE,
      workload: { kind: 'mix', limit: LIST_LIMIT, firstId: CREATE_ID_BASE, createEvery: 10 },
    },
  };
}
