// Latency histogram with 10 µs buckets: fine enough for sub-millisecond
// percentiles (autocannon's own histogram rounds to whole milliseconds) and
// small enough to send from the load generator and add up across rounds.

const BUCKETS_PER_MS = 100;

export type HistogramData = [bucket: number, count: number][];

export class LatencyHistogram {
  readonly #counts = new Map<number, number>();
  #total = 0;

  record(ms: number): void {
    // Rounded up: a bucket stands for its upper bound, so percentiles never flatter.
    const b = Math.ceil(ms * BUCKETS_PER_MS);
    this.#counts.set(b, (this.#counts.get(b) ?? 0) + 1);
    this.#total++;
  }

  add(data: HistogramData): void {
    for (const [b, n] of data) {
      this.#counts.set(b, (this.#counts.get(b) ?? 0) + n);
      this.#total += n;
    }
  }

  get count(): number {
    return this.#total;
  }

  /** Nearest-rank percentile in ms (p = 100 gives the maximum); 0 when empty. */
  percentile(p: number): number {
    if (this.#total === 0) return 0;
    const rank = Math.max(1, Math.ceil((p / 100) * this.#total));
    let seen = 0;
    for (const b of [...this.#counts.keys()].sort((x, y) => x - y)) {
      seen += this.#counts.get(b)!;
      if (seen >= rank) return b / BUCKETS_PER_MS;
    }
    return 0;
  }

  toJSON(): HistogramData {
    return [...this.#counts];
  }
}
