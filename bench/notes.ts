// The caveats printed under every report: how the numbers were taken, so that
// a reader can judge them without reading the bench's code.
import type { BenchOptions } from './options.js';

export function methodNotes(o: BenchOptions, ranPostgres: boolean): string[] {
  const notes = [
    'Baseline: bench/baseline.ts, a Fastify server with only the three routes, a bearer check (sha256 of the token looked up in a Map), response schemas for the same JSON bodies, 200/204/400/401/404/409, and plants in a Map; no logging, no validation library, no storage. It is preloaded with the same plants as the service.',
    `Each server is warmed up for ${o.warmupS} s, then measured in ${o.rounds} round${o.rounds === 1 ? '' : 's'} of ${(o.durationS / o.rounds).toFixed(1)} s, baseline and service alternating (B S, S B, ...) so that drift and bursts of other load on the machine fall on both alike. Each server has its own load generator process, kept alive across rounds.`,
    'Latency percentiles are computed by the load generator from every response of the measured rounds, in 10 µs buckets; they include time queued in the load generator itself.',
    'CPU columns: % of one core during the measured rounds, from /proc. A server near 100 % is the bottleneck; a load generator near 100 % means the server could do more than measured. "others" is CPU used by processes outside the bench (other users of this machine) and steal: when it is high, the numbers are noisy.',
    'Peak RSS is VmHWM from /proc, read at the end of each scenario; every scenario starts new server processes, so it is the peak of that scenario. For workers=2 it is the sum over the primary and its workers.',
    'The service answers with more headers than the baseline (x-request-id, security headers, Link for the next page on lists); the JSON bodies are the same.',
  ];
  if (o.scenarios.includes('delete')) {
    notes.push(
      `delete: ids 1..N are stored and every request deletes the next one; N = ${o.deleteRows.toLocaleString('en-US')} covers ${Math.floor(o.deleteRows / (o.warmupS + o.durationS)).toLocaleString('en-US')} deletes/s over warm-up and measurement. A 404 means the ids ran out and is counted as non-2xx.`,
    );
  }
  if (ranPostgres) {
    notes.push(
      'PostgreSQL, when it runs on this machine, is not pinned and shares both cores with the service and the load generator. The CPU of its backends serving the run\'s database is shown in its own column (and left out of "others"); its memory is not in the RSS column.',
    );
  }
  return notes;
}
