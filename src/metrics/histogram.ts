import type { Metric } from 'prom-client';

/** One label combination of a Histogram: bucket counts, sum and count. */
export class Series {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    // One slot per upper bound, plus one for the +Inf bucket.
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * A Prometheus histogram for the hot path. prom-client's own Histogram
 * builds a label hash and several objects on every observe (about 1 µs
 * measured here); this one lets the caller keep the Series of a label
 * combination and observe into it with a few comparisons and no allocation.
 * It exposes the same shape as prom-client's metrics, so a prom-client
 * Registry renders it and AggregatorRegistry sums it across workers.
 */
export class Histogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {}

  /** The series of these label values (in labelNames order); keep it to observe cheaply. */
  series(...values: string[]): Series {
    if (values.length !== this.labelNames.length)
      throw new Error(`${this.name} takes labels ${this.labelNames.join(', ')}, got ${values.length} values`);
    const key = values.join('\u0000');
    let series = this.#series.get(key);
    if (series === undefined) {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => (labels[name] = values[i]!));
      series = new Series(labels, this.buckets);
      this.#series.set(key, series);
    }
    return series;
  }

  observe(value: number, ...labelValues: string[]): void {
    this.series(...labelValues).observe(value);
  }

  reset(): void {
    for (const s of this.#series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }

  /** What prom-client's Registry reads (the shape of its own Histogram.get()). */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    const values: Sample[] = [];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...s.labels }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...s.labels }, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** For Registry.registerMetric, whose type lists only prom-client's own classes. */
  asMetric(): Metric {
    return this as unknown as Metric;
  }
}
