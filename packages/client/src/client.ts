import { errorFrom } from './error.js';
import { idText, type PlantId } from './ids.js';
import { nextLink } from './link.js';
import type { Plant } from './types.js';
import { watch, type PlantChange, type WatchOptions } from './watch.js';

/** A plant to create: its id (bigint, or a number that is a safe integer), name and optional tag. */
export interface NewPlant extends Plant {
  id: PlantId;
}

export interface PlantStoreClientOptions {
  /** Where Plant Store is served, e.g. "http://127.0.0.1:8080" (a path prefix is kept). */
  baseUrl: string | URL;
  /** A bearer token, as `plant-store token create` prints it. */
  token: string;
  /** The fetch to use; the global one by default. */
  fetch?: typeof fetch;
  /**
   * How many answers (plants and list pages) to keep with their ETag, so
   * that reading one again sends If-None-Match and an unchanged answer comes
   * back as 304 with no body; 100 by default, 0 for none.
   */
  revalidate?: number;
}

export interface ListOptions {
  /** Most plants to return (an int32 of at least 1); the server caps it at its maximum page size. */
  limit?: number;
  /** Where to continue: a cursor from a previous page's `next` (of the same list: the same tag, or none). */
  cursor?: string;
  /** Only the plants with exactly this tag (1 to 256 characters). */
  tag?: string;
}

/** An answer kept with its ETag, to revalidate. */
interface Kept {
  etag: string;
  /** The body as sent: parsed again for each caller, who may change what it gets. */
  text: string;
  link: string | null;
}

export interface PlantPage {
  plants: Plant[];
  /** The cursor of the next page, when more plants remain. */
  next?: string;
}

/**
 * A NewPlant as JSON. The id is written by hand so that a bigint keeps every
 * digit; the other properties go as they are, so the server can refuse
 * unknown ones.
 */
function newPlantJson(plant: NewPlant): string {
  const { id, ...fields } = plant;
  const rest = JSON.stringify(fields);
  return `{"id":${idText(id)}${rest === '{}' ? '' : `,${rest.slice(1, -1)}`}}`;
}

/**
 * A typed client for Plant Store over fetch. It runs wherever fetch does
 * (Node 18+, browsers, Deno, Bun). Ids are bigint or number; a number that is
 * not a safe integer throws a RangeError before any request is sent, and a
 * bigint is sent with every digit. A non-2xx answer throws PlantStoreError.
 */
export class PlantStoreClient {
  readonly #base: URL;
  readonly #authorization: string;
  readonly #fetch: typeof fetch;
  // Least recently used first (a Map keeps insertion order).
  readonly #kept = new Map<string, Kept>();
  readonly #keep: number;

  constructor(options: PlantStoreClientOptions) {
    // Plain JavaScript would otherwise send "Bearer undefined" and meet a 401 far from the cause.
    const token: unknown = options.token;
    if (typeof token !== 'string' || token.trim() === '') {
      throw new TypeError(
        `PlantStoreClient needs a token (a bearer token as "plant-store token create" prints it), got ${
          typeof token === 'string' ? 'an empty string' : token === null ? 'null' : typeof token
        }`,
      );
    }
    const base = new URL(options.baseUrl);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    this.#base = base;
    this.#authorization = `Bearer ${token}`;
    // Looked up at call time, and never called as a method of this object (browsers require that).
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#keep = options.revalidate ?? 100;
  }

  /** Creates a plant (a replay of the same id, name and tag is fine) and resolves to the stored plant. */
  async createPlant(plant: NewPlant): Promise<Plant> {
    const response = await this.#request('POST', this.#url('plants'), newPlantJson(plant));
    return (await response.json()) as Plant;
  }

  /**
   * Creates a batch of plants in one request and one transaction: all of
   * them, or (with a PlantStoreError) none. Resolves to the stored plants in
   * the order given; a plant identical to one stored before is a replay. The
   * server refuses an empty batch and one over its --max-batch (1000 by
   * default) with a 400, an id given twice with a 400, and an id stored with
   * another name or tag with a 409 naming its place (`/2/id: ...`).
   */
  async createPlants(plants: readonly NewPlant[]): Promise<Plant[]> {
    const body = `[${plants.map(newPlantJson).join(',')}]`;
    const response = await this.#request('POST', this.#url('plants'), body);
    return (await response.json()) as Plant[];
  }

  /** The caller's plant with this id; a PlantStoreError with status 404 if there is none. */
  async getPlant(id: PlantId): Promise<Plant> {
    return (await this.#read(this.#url(`plants/${idText(id)}`))).body as Plant;
  }

  /** One page of the caller's plants (with `tag`, of those with that tag), in insertion order. */
  async listPlants(options: ListOptions = {}): Promise<Plant[]> {
    return (await this.listPage(options)).plants;
  }

  /** One page of the caller's plants, with the cursor of the next page when more remain. */
  async listPage(options: ListOptions = {}): Promise<PlantPage> {
    const url = this.#url('plants');
    if (options.limit !== undefined) url.searchParams.set('limit', String(options.limit));
    if (options.tag !== undefined) url.searchParams.set('tag', options.tag);
    if (options.cursor !== undefined) url.searchParams.set('cursor', options.cursor);
    const { plants, nextUrl } = await this.#page(url);
    const next = nextUrl?.searchParams.get('cursor') ?? undefined;
    return next === undefined ? { plants } : { plants, next };
  }

  /**
   * Every plant of the caller (with `tag`, every one with that tag), in
   * insertion order, a page at a time: it follows the Link rel="next" of
   * each answer until there is none.
   */
  async *iteratePlants(options: { pageSize?: number; tag?: string } = {}): AsyncGenerator<Plant, void, undefined> {
    let url: URL | undefined = this.#url('plants');
    if (options.pageSize !== undefined) url.searchParams.set('limit', String(options.pageSize));
    if (options.tag !== undefined) url.searchParams.set('tag', options.tag);
    while (url !== undefined) {
      const page: { plants: Plant[]; nextUrl: URL | undefined } = await this.#page(url);
      yield* page.plants;
      url = page.nextUrl;
    }
  }

  /** Deletes the caller's plant with this id; a PlantStoreError with status 404 if there is none. */
  async deletePlant(id: PlantId): Promise<void> {
    const response = await this.#request('DELETE', this.#url(`plants/${idText(id)}`));
    await response.body?.cancel();
  }

  /**
   * The changes of the caller's plants as they happen (GET /plants/events):
   * created and deleted plants with exact bigint ids, and a `reset` when
   * the events to resume from are no longer kept (list again). It reconnects
   * and resumes by itself; stop it with `signal` or by leaving the loop.
   * It throws a CredentialsEndedError when the server ends the stream because
   * the token was revoked or expired, or lost plants:read.
   */
  watchPlants(options: WatchOptions = {}): AsyncGenerator<PlantChange, void> {
    return watch({ url: this.#url('plants/events'), authorization: this.#authorization, fetch: this.#fetch }, options);
  }

  #url(path: string): URL {
    return new URL(path, this.#base);
  }

  /**
   * A GET, revalidated: an answer kept from before is asked for with its
   * ETag, and a 304 gives it back as it was. A new answer is kept in its place.
   */
  async #read(url: URL): Promise<{ body: unknown; link: string | null }> {
    const key = url.href;
    const kept = this.#kept.get(key);
    const response = await this.#request('GET', url, undefined, kept?.etag);
    if (kept !== undefined) this.#kept.delete(key);
    if (response.status === 304 && kept !== undefined) {
      await response.body?.cancel();
      this.#kept.set(key, kept);
      return { body: JSON.parse(kept.text), link: kept.link };
    }
    const text = await response.text();
    const link = response.headers.get('link');
    const etag = response.headers.get('etag');
    if (etag !== null && this.#keep > 0) {
      this.#kept.set(key, { etag, text, link });
      if (this.#kept.size > this.#keep) this.#kept.delete(this.#kept.keys().next().value!);
    }
    return { body: JSON.parse(text), link };
  }

  async #page(url: URL): Promise<{ plants: Plant[]; nextUrl: URL | undefined }> {
    const answer = await this.#read(url);
    const plants = answer.body as Plant[];
    const link = nextLink(answer.link);
    if (link === undefined) return { plants, nextUrl: undefined };
    const nextUrl = new URL(link, url);
    // The token goes only where the client was pointed.
    if (nextUrl.origin !== this.#base.origin) {
      throw new Error(`Plant Store sent a next link to another origin (${nextUrl.origin}); not following it`);
    }
    return { plants, nextUrl };
  }

  async #request(method: string, url: URL, body?: string, etag?: string): Promise<Response> {
    const headers: Record<string, string> = { authorization: this.#authorization, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (etag !== undefined) headers['if-none-match'] = etag;
    const response = await this.#fetch(url, body === undefined ? { method, headers } : { method, headers, body });
    if (!response.ok && !(response.status === 304 && etag !== undefined)) throw await errorFrom(response);
    return response;
  }
}
