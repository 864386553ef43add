import { LRUCache } from 'lru-cache';
import type { JsonPage } from '../store.js';
import type { ChangeEpoch, ChangeVersion } from './change-epoch.js';

/** A page as the page query reads it: ready to send, and where it lies in the list. */
export interface ReadPage {
  page: JsonPage;
  /**
   * After `from`, up to and including `to`, in seqs. With a next page, `to`
   * is the first plant after the page: deleting it may leave no next page,
   * so it changes this one.
   */
  span: { from: bigint; to: bigint };
}

export interface PageEntry extends ReadPage {
  /** The owner's version (its `appended`) when the page was read. */
  read: number;
}

/** Whether a page read at `entry.read` is still what the store would answer at `version` (see ChangeVersion). */
function current(entry: PageEntry, version: ChangeVersion): boolean {
  // A create only appends: a page with a next page stays as it was.
  if (version.changed > entry.read || (entry.page.next === undefined && version.appended > entry.read)) return false;
  const { deletions } = version;
  for (let i = deletions.length - 1; i >= 0 && deletions[i]!.at > entry.read; i--) {
    const { position } = deletions[i]!;
    if (position > entry.span.from && position <= entry.span.to) return false;
  }
  return true;
}

/**
 * Read list pages, kept while their owner's plants stay as they were when
 * the page was read. Bounded by entries and by bytes; the least recently
 * used entry goes first.
 */
export class PageCache {
  readonly #entries: LRUCache<string, PageEntry>;

  constructor(maxBytes: number, maxEntries = 1000) {
    this.#entries = new LRUCache({
      max: maxEntries,
      maxSize: maxBytes,
      sizeCalculation: (e) => Math.max(1, e.page.body.length),
    });
  }

  get(key: string, version: ChangeVersion): JsonPage | undefined {
    const hit = this.#entries.get(key);
    return hit !== undefined && current(hit, version) ? hit.page : undefined;
  }

  set(key: string, entry: PageEntry): void {
    this.#entries.set(key, entry);
  }
}

// Pages asked for by cursor are kept only when asked for a second time: a
// client walking the whole list asks for each page once, and would otherwise
// push out every page worth keeping, and keep the garbage collector busy
// moving pages that will never be asked for again.
const SEEN_ONCE = 4096;

/** Reads one page from SQLite: the owner's plants after `cursor`, at most `limit`, only those with `tag` if given. */
export type PageRead = (owner: string, limit: number, cursor: string | undefined, tag: string | undefined) => ReadPage;

/**
 * The SQLite store's list pages: read from the file or, when the store can
 * tell that the owner's plants did not change since (its ChangeEpoch),
 * reused from memory. A write by one owner leaves the other owners' pages in
 * place. `maxBytes` 0 (--list-cache-bytes 0): every page is read.
 */
export class ListPages {
  readonly #cache: PageCache | undefined;
  readonly #seenOnce = new LRUCache<string, true>({ max: SEEN_ONCE });

  constructor(
    private readonly changes: Pick<ChangeEpoch, 'current'>,
    maxBytes: number,
    private readonly read: PageRead,
  ) {
    this.#cache = maxBytes > 0 ? new PageCache(maxBytes) : undefined;
  }

  /** With `tag`, a page of the owner's plants with that tag, kept under a key of its own. */
  page(owner: string, limit: number, cursor: string | undefined, tag: string | undefined): JsonPage {
    const version = this.#cache && this.changes.current(owner);
    if (version === undefined) return this.read(owner, limit, cursor, tag).page;
    // Owners hold no newline and cursors are base64url, so the first three
    // fields are unambiguous, and a key with a tag (a fourth) is never one without.
    const key = `${owner}\n${limit}\n${cursor ?? ''}${tag === undefined ? '' : `\n${tag}`}`;
    const hit = this.#cache!.get(key, version);
    if (hit !== undefined) return hit;
    // Taken before the read: the epoch updates the version in place.
    const read = version.appended;
    const { page, span } = this.read(owner, limit, cursor, tag);
    if (this.#admit(key, cursor)) this.#cache!.set(key, { read, page, span });
    return page;
  }

  #admit(key: string, cursor: string | undefined): boolean {
    if (cursor === undefined || this.#seenOnce.delete(key)) return true;
    this.#seenOnce.set(key, true);
    return false;
  }
}
