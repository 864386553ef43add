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
  /**
   * How long a small batch waits for more items to join it, for work where a
   * batch costs far more than an item (a commit and its fsync): until it
   * holds `items` (or as many as the last batch, if that was smaller), or
   * its oldest item has waited `ms`, checked once per turn of the event loop
   * (so a batch can wait up to a turn longer). Without it, a batch leaves at
   * the first turn.
   */
  gather?: { items: number; ms: number };
  /**
   * Start the next batch as soon as one ends (in the microtask after it
   * settles) rather than in the next turn's check phase: for a caller that
   * learns of the end outside the event loop's I/O (the SQLite writer
   * thread's replies, polled by every store call), so that the next batch
   * is under way within one request's time.
   */
  nextAtOnce?: boolean;
}

/**
 * Gathers work that arrives close together into batches, so concurrent
 * requests share one statement, one round trip and (for writes) one commit:
 * the one home of batching for both stores (PostgreSQL creates and list
 * pages; the SQLite writer thread's group commits).
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
  /** When the oldest queued item was queued (performance.now()), and the size of the last batch (options.gather). */
  #queuedAt = 0;
  #lastBatch = Infinity;
  #idle: (() => void)[] = [];

  /** `run` settles every item of its batch itself and never rejects. */
  constructor(
    private readonly run: (batch: T[]) => Promise<void>,
    private readonly options: BatcherOptions<T>,
  ) {}

  add(item: T): void {
    if (this.options.gather !== undefined && this.#queue.length === 0) this.#queuedAt = performance.now();
    this.#queue.push(item);
    this.#schedule();
  }

  /** Items queued or in a batch that has not ended. */
  get pending(): boolean {
    return this.#queue.length > 0 || this.#inFlight > 0;
  }

  /** Takes out every item not yet in a batch (to fail them, when what runs batches has stopped). */
  takeQueued(): T[] {
    return this.#queue.splice(0);
  }

  /** Resolves once no item is queued and no batch runs. */
  idle(): Promise<void> {
    if (!this.pending) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.options.maxInFlight || this.#queue.length === 0) return;
    this.#scheduled = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const { key, gather } = this.options;
    if (
      gather !== undefined &&
      this.#queue.length < Math.min(gather.items, this.#lastBatch) &&
      performance.now() - this.#queuedAt < gather.ms &&
      this.#inFlight < this.options.maxInFlight
    ) {
      this.#scheduled = true;
      setImmediate(this.#flush);
      return;
    }
    while (this.#inFlight < this.options.maxInFlight && this.#queue.length > 0) {
      const batch = this.#take();
      if (batch.length === 0) return; // every queued item waits for a batch of its key
      if (gather !== undefined) this.#lastBatch = batch.length;
      const keys = key === undefined ? [] : [...new Set(batch.map(key))];
      for (const k of keys) this.#busy.add(k);
      this.#inFlight++;
      const done = () => {
        for (const k of keys) this.#busy.delete(k);
        this.#inFlight--;
        if (this.options.nextAtOnce && !this.#scheduled) this.#flush();
        else this.#schedule();
        if (!this.pending) for (const resolve of this.#idle.splice(0)) resolve();
      };
      this.run(batch).then(done, done);
    }
  };

  /**
   * The next batch, in arrival order: items whose key has a batch running
   * stay queued, and the batch ends at maxItems or before the item that
   * would take it past maxWeight.
   */
  #take(): T[] {
    const { maxItems, weight, maxWeight = Infinity, key } = this.options;
    const batch: T[] = [];
    const waiting: T[] = [];
    let total = 0;
    let i = 0;
    for (; i < this.#queue.length && batch.length < maxItems; i++) {
      const item = this.#queue[i]!;
      if (key !== undefined && this.#busy.has(key(item))) {
        waiting.push(item);
        continue;
      }
      const w = weight?.(item) ?? 0;
      if (batch.length > 0 && total + w > maxWeight) break;
      batch.push(item);
      total += w;
    }
    this.#queue = waiting.concat(this.#queue.slice(i));
    return batch;
  }
}
