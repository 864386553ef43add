export interface BatcherOptions<T> {
  /** Most items in one batch. */
  maxItems: number;
  /** Most batches running at once; items that arrive meanwhile wait and form the next batch. */
  maxInFlight: number;
  /** An item's share of maxWeight (rows a list page may return); a batch always takes at least one item. */
  weight?: (item: T) => number;
  maxWeight?: number;
  /**
   * Items of one key never run in two batches at once: a write takes its
   * owner's lock, so a second batch for the same owner would only wait for
   * the first one's commit, holding a connection, while the items that arrive
   * meanwhile split into ever smaller batches. Waiting here instead, they
   * leave together when the first batch ends: one larger batch, one commit.
   */
  key?: (item: T) => string;
}

/**
 * Gathers work that arrives close together into batches, so concurrent
 * requests share one statement, one round trip and (for writes) one commit.
 *
 * A batch starts in the event loop's check phase after its first item
 * arrived, so every request parsed in the same I/O phase joins it; while
 * maxInFlight batches run, new items queue and leave together when one ends.
 * At low load a batch holds one item and waits for nothing.
 */
export class Batcher<T> {
  #queue: T[] = [];
  #inFlight = 0;
  #scheduled = false;
  /** The keys of the batches running now (options.key). */
  readonly #busy = new Set<string>();

  /** `run` settles every item of its batch itself and never rejects. */
  constructor(
    private readonly run: (batch: T[]) => Promise<void>,
    private readonly options: BatcherOptions<T>,
  ) {}

  add(item: T): void {
    this.#queue.push(item);
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.options.maxInFlight || this.#queue.length === 0) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    while (this.#inFlight < this.options.maxInFlight && this.#queue.length > 0) {
      const batch = this.#take();
      if (batch.length === 0) return; // every queued item waits for a batch of its key
      const keys = this.#claim(batch);
      this.#inFlight++;
      const done = () => {
        for (const k of keys) this.#busy.delete(k);
        this.#inFlight--;
        this.#schedule();
      };
      this.run(batch).then(done, done);
    }
  };

  #take(): T[] {
    const { maxItems, weight, maxWeight = Infinity, key } = this.options;
    if (key === undefined) {
      let n = Math.min(maxItems, this.#queue.length);
      if (weight) {
        let total = weight(this.#queue[0]!);
        for (let i = 1; i < n; i++) {
          total += weight(this.#queue[i]!);
          if (total > maxWeight) {
            n = i;
            break;
          }
        }
      }
      return this.#queue.splice(0, n);
    }
    // In arrival order, skipping the items whose key has a batch running.
    const batch: T[] = [];
    const rest: T[] = [];
    for (const item of this.#queue) {
      if (batch.length < maxItems && !this.#busy.has(key(item))) batch.push(item);
      else rest.push(item);
    }
    this.#queue = rest;
    return batch;
  }

  #claim(batch: T[]): string[] {
    const { key } = this.options;
    if (key === undefined) return [];
    const keys = [...new Set(batch.map(key))];
    for (const k of keys) this.#busy.add(k);
    return keys;
  }
}
