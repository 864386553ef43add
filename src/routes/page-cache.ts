import type { ChangeVersion, PlantRecord, PlantStore } from '../store/store.js';

export interface PageEntry {
  /** The owner's version when the page was read. */
  changed: number;
  appended: number;
  body: string;
  /** Present when more plants followed the page: then creates, which append, leave it as it is. */
  link: string | undefined;
}

/**
 * Serialized list pages, reused while their owner's plants stay as they were
 * when the page was read (ChangeVersion): nothing changed, and nothing was
 * appended unless the page had a next page. Bounded by entries and by bytes;
 * the oldest entry goes first.
 */
export class PageCache {
  readonly #entries = new Map<string, PageEntry>();
  #bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly maxEntries = 1000,
  ) {}

  get(key: string, version: ChangeVersion): PageEntry | undefined {
    const hit = this.#entries.get(key);
    return hit !== undefined &&
      hit.changed === version.changed &&
      (hit.appended === version.appended || hit.link !== undefined)
      ? hit
      : undefined;
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

/** A list page as it goes out: the serialized body and the Link header, if more plants remain. */
export type ListedPage = Pick<PageEntry, 'body' | 'link'>;

/**
 * GET /plants pages, read from the store or, when the store can tell that the
 * owner's plants did not change since (its change epoch), reused from memory.
 * A write by one owner leaves the other owners' pages in place.
 */
export class ListPages {
  readonly #cache: PageCache;
  readonly #changeEpoch: ((owner: string) => ChangeVersion | undefined) | undefined;

  constructor(
    private readonly plants: PlantStore,
    cacheBytes: number,
  ) {
    this.#cache = new PageCache(cacheBytes);
    this.#changeEpoch = cacheBytes > 0 ? plants.changeEpoch?.bind(plants) : undefined;
  }

  async page(
    owner: string,
    limit: number,
    cursor: string | undefined,
    serialize: (plants: PlantRecord[]) => string,
  ): Promise<ListedPage> {
    const version = this.#changeEpoch?.(owner);
    const key = version === undefined ? undefined : `${owner}\n${limit}\n${cursor ?? ''}`;
    const hit = key === undefined ? undefined : this.#cache.get(key, version!);
    if (hit !== undefined) return hit;
    // Read now: the store updates the version in place.
    const changed = version?.changed ?? 0;
    const appended = version?.appended ?? 0;
    const page = await this.plants.list(owner, limit, cursor);
    const link = page.next === undefined ? undefined : `</plants?limit=${limit}&cursor=${page.next}>; rel="next"`;
    const entry = { changed, appended, body: serialize(page.plants), link };
    if (key !== undefined) this.#cache.set(key, entry);
    return entry;
  }
}
