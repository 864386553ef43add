export interface BatcherOptions<T> {
  /** Most items in one batch. */
  maxItems: number;
  /** Most batches running at once; items that arrive meanwhile wait and form the next batch. */
  maxInFlight: number;
  /** An item's share of maxWeight (rows a list page may return); a batch always takes at least one item. */
  weight?: (item: T) => number;
  maxWeight?: number;
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
  readonly #queue: T[] = [];
  #inFlight = 0;
  #scheduled = false;

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
      this.#inFlight++;
      this.run(this.#take()).then(this.#done, this.#done);
    }
  };

  readonly #done = (): void => {
    this.#inFlight--;
    this.#schedule();
  };

  #take(): T[] {
    const { maxItems, weight, maxWeight = Infinity } = this.options;
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
}
