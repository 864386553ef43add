// The plants both servers are preloaded with, so the two answer with the same
// bodies. Every other id carries a tag, so both the tagged and the untagged
// serialisation paths are exercised.

export interface BenchPlant {
  id: number;
  name: string;
  tag?: string;
}

export function plantFor(id: number): BenchPlant {
  return id % 2 === 0 ? { id, name: `plant-${id}`, tag: 'fern' } : { id, name: `plant-${id}` };
}

/** Ids 1..count, in insertion order. */
export function* plantsUpTo(count: number, from = 1): Generator<BenchPlant> {
  for (let id = from; id < from + count; id++) yield plantFor(id);
}

/** Ids created during a run start here, far above any preloaded id. */
export const CREATE_ID_BASE = 1_000_000_000;

export const BENCH_OWNER = 'bench';
