export interface PageEntry {
  epoch: number;
  body: string;
  link: string | undefined;
}

/**
 * Serialized list pages, reused while the store's change epoch stays the same
 * (no plant written by this process or any other since the page was read).
 * Bounded by entries and by bytes; the oldest entry goes first.
 */
export class PageCache {
  readonly #entries = new Map<string, PageEntry>();
  #bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly maxEntries = 1000,
  ) {}

  get(key: string, epoch: number): PageEntry | undefined {
    const hit = this.#entries.get(key);
    return hit !== undefined && hit.epoch === epoch ? hit : undefined;
  }

  set(key: string, entry: PageEntry): void {
    this.#remove(key);
    this.#entries.set(key, entry);
    this.#bytes += entry.body.length;
    while (this.#entries.size > this.maxEntries || this.#bytes > this.maxBytes) {
      this.#remove(this.#entries.keys().next().value!);
    }
  }

  #remove(key: string): void {
    const old = this.#entries.get(key);
    if (old === undefined) return;
    this.#bytes -= old.body.length;
    this.#entries.delete(key);
  }
}
