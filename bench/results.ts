// The shape of a run's results, as written to bench/results/*.json.
import type { Backend } from './options.js';
import type { Measurement } from './runner.js';
import type { ScenarioName } from './scenarios.js';

export interface ScenarioResult {
  backend: Backend;
  scenario: ScenarioName;
  description: string;
  rows: number;
  baseline: Measurement;
  service: Measurement;
  /** Service req/s divided by baseline req/s. */
  ratio: number;
}

export interface WorkersComparison {
  backend: Backend;
  scenario: ScenarioName;
  one: Measurement;
  two: Measurement;
  /** req/s with two workers divided by req/s with one. */
  ratio: number;
}

/** A measurement that could not be taken, with why. */
export interface Failure {
  backend: Backend;
  /** e.g. "list10k" or "create workers=2". */
  what: string;
  reason: string;
}

export interface BackendStatus {
  backend: Backend;
  status: 'ran' | 'unavailable' | 'failed';
  reason?: string;
}

export interface TargetCheck {
  backend: Backend;
  target: string;
  measured: string;
  /** undefined: the scenario it needs was not run. */
  pass: boolean | undefined;
  note?: string;
}

export interface BenchReport {
  startedAt: string;
  finishedAt: string;
  wallSeconds: number;
  environment: { node: string; os: string; cpuModel: string; cpuCount: number; memoryGiB: number };
  options: Record<string, unknown>;
  /** CPU used by other processes just before the run, in % of one core. */
  backgroundBeforePct: number;
  pinning: { enabled: boolean; reason?: string; serverCpus: string; serverCpusWorkers2: string; loadCpus: string };
  backends: BackendStatus[];
  results: ScenarioResult[];
  workers: WorkersComparison[];
  targets: TargetCheck[];
  failures: Failure[];
  notes: string[];
}
