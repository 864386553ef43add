// What the orchestrator and the load generator child say to each other.
import type { HistogramData } from './histogram.js';

export type Workload =
  | { kind: 'list'; limit: number }
  | { kind: 'create'; firstId: number }
  | { kind: 'delete'; firstId: number }
  | { kind: 'mix'; limit: number; firstId: number; createEvery: number };

/** Given once, on the child's command line. */
export interface LoadSpec {
  url: string;
  connections: number;
  workload: Workload;
}

/** One line on the child's stdin: run the load for this long. */
export interface RoundCommand {
  durationS: number;
}

/** One line on the child's stdout per command. */
export interface RoundResult {
  requests: number;
  durationS: number;
  non2xx: number;
  /** Connection errors, timeouts included. */
  socketErrors: number;
  timeouts: number;
  statusCounts: Record<string, number>;
  latency: HistogramData;
  /** CPU time the load generator used during the round. */
  cpuMs: number;
}

/** All measured rounds of one server in one scenario, added up. */
export interface LoadResult {
  rounds: number;
  requests: number;
  durationS: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  socketErrors: number;
  timeouts: number;
  statusCounts: Record<string, number>;
  warmupRequests: number;
}
