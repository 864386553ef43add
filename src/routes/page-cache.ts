import { LRUCache } from 'lru-cache';
import { entityTag } from '../http/etag.js';
import type { ChangeVersion, JsonPage, PlantStore } from '../store/store.js';

export interface PageEntry {
  /** The owner's version (its `appended`) when the page was read. */
  read: number;
  body: string;
  /** Present when more plants followed the page: then creates, which append, leave it as it is. */
  link: string | undefined;
  /** Where the page lies in the list (JsonPage.span): deletions outside it leave it as it is. */
  span?: JsonPage['span'];
  /** The page's entity tag, a digest of its body and Link made once when it is read and reused with it. */
  etag: string;
}

/** Whether a page read at `entry.read` is still what the store would answer at `version` (see ChangeVersion). */
function current(entry: PageEntry, version: ChangeVersion): boolean {
  if (version.changed > entry.read || (entry.link === undefined && version.appended > entry.read)) return false;
  const { deletions } = version;
  for (let i = deletions.length - 1; i >= 0 && deletions[i]!.at > entry.read; i--) {
    const { position } = deletions[i]!;
    if (entry.span === undefined || (position > entry.span.from && position <= entry.span.to)) return false;
  }
  return true;
}

/**
 * Serialized list pages, reused while their owner's plants stay as they were
 * when the page was read. Bounded by entries and by bytes; the least recently
 * used entry goes first.
 */
export class PageCache {
  readonly #entries: LRUCache<string, PageEntry> | undefined;

  constructor(maxBytes: number, maxEntries = 1000) {
    this.#entries =
      maxBytes > 0
        ? new LRUCache({ max: maxEntries, maxSize: maxBytes, sizeCalculation: (e) => Math.max(1, e.body.length) })
        : undefined;
  }

  get(key: string, version: ChangeVersion): PageEntry | undefined {
    const hit = this.#entries?.get(key);
    return hit !== undefined && current(hit, version) ? hit : undefined;
  }

  set(key: string, entry: PageEntry): void {
    this.#entries?.set(key, entry);
  }
}

/** A list page as it goes out: the serialized body, the Link header if more plants remain, and the ETag. */
export type ListedPage = Pick<PageEntry, 'body' | 'link' | 'etag'>;

// Pages asked for by cursor are kept only when asked for a second time: a
// client walking the whole list asks for each page once, and would otherwise
// push out every page worth keeping, and keep the garbage collector busy
// moving pages that will never be asked for again.
const SEEN_ONCE = 4096;

/**
 * GET /plants pages, read from the store or, when the store can tell that the
 * owner's plants did not change since (its change epoch), reused from memory.
 * A write by one owner leaves the other owners' pages in place.
 */
export class ListPages {
  readonly #cache: PageCache;
  readonly #seenOnce = new LRUCache<string, true>({ max: SEEN_ONCE });
  readonly #changeEpoch: ((owner: string) => ChangeVersion | undefined) | undefined;

  constructor(
    private readonly plants: Pick<PlantStore, 'page' | 'changeEpoch'>,
    cacheBytes: number,
  ) {
    this.#cache = new PageCache(cacheBytes);
    this.#changeEpoch = cacheBytes > 0 ? plants.changeEpoch?.bind(plants) : undefined;
  }

  /**
   * A page reused from memory comes back as it is, without a promise: most
   * list requests are answered so. With `tag`, a page of the owner's plants
   * with that tag, kept under a key of its own.
   */
  page(owner: string, limit: number, cursor: string | undefined, tag?: string): ListedPage | Promise<ListedPage> {
    const version = this.#changeEpoch?.(owner);
    // Owners hold no newline and cursors are base64url, so the first three
    // fields are unambiguous, and a key with a tag (a fourth) is never one without.
    const key =
      version === undefined ? undefined : `${owner}\n${limit}\n${cursor ?? ''}${tag === undefined ? '' : `\n${tag}`}`;
    const hit = key === undefined ? undefined : this.#cache.get(key, version!);
    if (hit !== undefined) return hit;
    return this.#read(owner, limit, cursor, tag, key, version);
  }

  async #read(
    owner: string,
    limit: number,
    cursor: string | undefined,
    tag: string | undefined,
    key: string | undefined,
    version: ChangeVersion | undefined,
  ): Promise<ListedPage> {
    // Read now: the store updates the version in place.
    const read = version?.appended ?? 0;
    const page = await this.plants.page(owner, limit, cursor, tag === undefined ? undefined : { tag });
    const link = page.next === undefined ? undefined : `<${nextUrl(limit, page.next, tag)}>; rel="next"`;
    const entry: PageEntry = {
      read,
      body: page.body,
      link,
      span: page.span,
      etag: entityTag(page.body, link ?? ''),
    };
    if (key !== undefined && this.#admit(key, cursor)) this.#cache.set(key, entry);
    return entry;
  }

  #admit(key: string, cursor: string | undefined): boolean {
    if (cursor === undefined || this.#seenOnce.delete(key)) return true;
    this.#seenOnce.set(key, true);
    return false;
  }
}

/** The URL of the next page: the same list (the tag, when filtered) and limit, after `cursor`. */
function nextUrl(limit: number, cursor: string, tag: string | undefined): string {
  return tag === undefined
    ? `/plants?limit=${limit}&cursor=${cursor}`
    : `/plants?limit=${limit}&tag=${encodeURIComponent(tag)}&cursor=${cursor}`;
}
