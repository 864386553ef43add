// The domain's view of persistence. Each database has one implementation of
// these interfaces; routes and auth only ever see these types.
import { ADMIN_EVENT_TYPES, ADMIN_SCOPES } from '../schemas/admin.js';

export interface NewPlantRecord {
  id: bigint;
  name: string;
  tag?: string | undefined;
}

export interface PlantRecord {
  name: string;
  tag?: string;
}

/** created: stored now; replayed: same id with identical content already stored; conflict: same id, other content. */
export type CreateOutcome = 'created' | 'replayed' | 'conflict';

/**
 * A list page as it goes out: the JSON array of its plants, as the 200
 * schema serializes them, the cursor of the next page, and the page's
 * entity tag. A store may hand the same page to many requests: read only.
 */
export interface JsonPage {
  readonly body: string;
  /** Opaque position after the last plant of this page; absent on the last page. */
  readonly next?: string;
  /** A strong entity tag of the body and `next` (entityTag), made once when the page is read. */
  readonly etag: string;
}

/** Which of an owner's plants a list holds: all of them, or only those with this tag. */
export interface PlantFilter {
  tag: string;
}

export interface PlantStore {
  /** Throws TooManyPlantsError when storing the plant would take the owner past `limits.maxPlants`. */
  create(owner: string, plant: NewPlantRecord, limits?: PlantLimits): Promise<CreateOutcome>;
  /**
   * Stores a batch of one owner's plants in one transaction, all or none (see
   * BatchOutcome). Throws TooManyPlantsError, storing nothing, when the plants
   * it would store take the owner past `limits.maxPlants`.
   */
  createMany(owner: string, plants: readonly NewPlantRecord[], limits?: PlantLimits): Promise<BatchOutcome>;
  /**
   * A page of one owner's plants in insertion order, after `cursor` (an
   * opaque `next` from an earlier page), ready to send. With `filter`, only
   * the plants with that tag; a cursor works only in the list (filtered the
   * same way, or not at all) that issued it. A store that can tell a page is
   * unchanged since it read it may answer from memory, without a promise
   * (SQLite, with --list-cache-bytes); failures always come as a rejection.
   */
  page(owner: string, limit: number, cursor?: string, filter?: PlantFilter): JsonPage | Promise<JsonPage>;
  /** The owner's plant with this id, or undefined when the owner has none (another owner's is none too). */
  get(owner: string, id: bigint): Promise<PlantRecord | undefined>;
  /** True when a plant was deleted, false when the owner has no plant with that id. */
  delete(owner: string, id: bigint): Promise<boolean>;
  /**
   * Stores many plants of one owner in one transaction, skipping ids the
   * owner has already; for loading data (imports, benchmarks), not requests.
   * Resolves to the number of plants stored.
   */
  insertMany(owner: string, plants: Iterable<NewPlantRecord>): Promise<number>;
}

/** Caps a write is checked against, in the write's own transaction. */
export interface PlantLimits {
  /** The most plants one owner may have; undefined: no cap. */
  maxPlants?: number | undefined;
}

/**
 * What a batch create did. stored: every plant is stored, each created now or
 * a replay of identical content stored before, in the batch's order.
 * conflict: the plant at `index` has an id the owner has with other content;
 * repeated: the id at `index` is also at `first`. Either way nothing was stored.
 */
export type BatchOutcome =
  | { kind: 'stored'; outcomes: ('created' | 'replayed')[] }
  | { kind: 'conflict'; index: number }
  | { kind: 'repeated'; index: number; first: number };

/** The first id of a batch given twice: the later place and the first; undefined when every id is once. */
export function repeatedId(plants: readonly NewPlantRecord[]): { index: number; first: number } | undefined {
  const seen = new Map<bigint, number>();
  for (let index = 0; index < plants.length; index++) {
    const id = plants[index]!.id;
    const first = seen.get(id);
    if (first !== undefined) return { index, first };
    seen.set(id, index);
  }
  return undefined;
}

/** Thrown by PlantStore.create and createMany when the plants they would store take the owner past its cap. */
export class TooManyPlantsError extends Error {
  constructor(
    readonly count: number,
    readonly max: number,
    readonly adding: number,
  ) {
    super(
      `the owner has ${count} plants and may have at most ${max} (--max-plants-per-owner); ` +
        `this request would store ${adding} more: delete some first`,
    );
    this.name = 'TooManyPlantsError';
  }
}

/** The scopes a token may carry, as the admin API's schema names them. */
export const SCOPES = ADMIN_SCOPES;
export type Scope = (typeof SCOPES)[number];

export interface TokenRecord {
  id: string;
  owner: string;
  scopes: Scope[];
  createdAt: Date;
  expiresAt?: Date | undefined;
  revokedAt?: Date | undefined;
}

export interface TokenStore {
  /** Stores a token by the hash of its secret. */
  insert(token: TokenRecord, hash: Buffer): Promise<void>;
  /**
   * Stores the store's first token: only when it holds no token at all,
   * atomically, so servers starting together on a new store create one
   * first token, not several. False when a token existed already.
   */
  insertFirst(token: TokenRecord, hash: Buffer): Promise<boolean>;
  findByHash(hash: Buffer): Promise<TokenRecord | undefined>;
  /** The tokens with these ids, in one query whatever their number; ids not found are left out. */
  findByIds(ids: readonly string[]): Promise<TokenRecord[]>;
  list(): Promise<TokenRecord[]>;
  /** Revokes by token id or by secret hash; false when neither matches. */
  revoke(idOrHash: string | Buffer, at: Date): Promise<boolean>;
}

/** A token as export and import carry it: the record and the hash of its secret, so the same tokens keep working. */
export interface TokenDump extends TokenRecord {
  hash: Buffer;
}

/** One plant of one owner, as export and import carry it. */
export interface PlantDump {
  owner: string;
  plant: NewPlantRecord;
}

/** Whole-store reads and writes for moving data between stores (export, import); not for requests. */
export interface StoreTransfer {
  /** Every token, oldest first. */
  tokens(): AsyncIterable<TokenDump>;
  /** Every plant, grouped by owner, each owner's in insertion order; read in batches, so memory stays flat. */
  plants(): AsyncIterable<PlantDump>;
  /** Stores the tokens whose id and hash are not in the store yet; resolves to how many were stored. */
  importTokens(tokens: readonly TokenDump[]): Promise<number>;
}

/** The events an endpoint may subscribe to, as the admin API's schema names them. */
export const WEBHOOK_EVENT_TYPES = ADMIN_EVENT_TYPES;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A registered webhook endpoint; its signing secret is stored sealed (encrypted), never in the clear. */
export interface WebhookEndpointRecord {
  id: string;
  owner: string;
  url: string;
  events: WebhookEventType[];
  createdAt: Date;
  /** Names the key the secret is sealed with, so a process without that key leaves the endpoint alone. */
  keyId: string;
  disabledAt?: Date | undefined;
  disabledReason?: string | undefined;
}

/** Thrown by WebhookStore.add when the owner has as many active endpoints as allowed. */
export class TooManyEndpointsError extends Error {
  constructor(owner: string, max: number) {
    super(
      `owner "${owner}" has ${max} active webhook endpoints already, the most allowed (--webhooks-max-endpoints); ` +
        'remove one first',
    );
    this.name = 'TooManyEndpointsError';
  }
}

/** Why an endpoint was disabled for falling behind (both stores write it; `webhook list` shows it). */
export function tooManyPendingReason(maxPending: number, at: Date): string {
  return (
    `more than ${maxPending} events waited for delivery (--webhooks-max-pending) at ${at.toISOString()}; ` +
    'they were dropped'
  );
}

export interface WebhookStore {
  /**
   * Throws TooManyEndpointsError when the owner has `maxPerOwner` active
   * endpoints already (checked atomically); no cap without `limits`.
   */
  add(endpoint: WebhookEndpointRecord, sealedSecret: Buffer, limits?: { maxPerOwner: number }): Promise<void>;
  /** Every endpoint, with the number of events waiting for delivery to it. */
  list(): Promise<(WebhookEndpointRecord & { pending: number })[]>;
  /** Removes an endpoint and the events still waiting for it; false when no endpoint has that id. */
  remove(id: string): Promise<boolean>;
  /** One endpoint with its sealed signing secret (to sign a test event), or undefined when no endpoint has that id. */
  get(id: string): Promise<{ endpoint: WebhookEndpointRecord; sealedSecret: Buffer } | undefined>;
  /**
   * Queues every failed delivery of the endpoint (given up after its last
   * attempt) again, due at once in the order of its events, with its attempts
   * counted from 0 and its webhook-id kept; the endpoint's backoff ends unless
   * a claim holds it. How many were queued, or undefined when no endpoint has
   * that id.
   */
  redeliver(id: string): Promise<number | undefined>;
}

/**
 * One event on its way to one endpoint, claimed by this process for a lease:
 * no other process claims it until the lease runs out or it is settled.
 */
export interface ClaimedDelivery {
  /** The store's own handle on the row. */
  ref: string;
  /** The webhook-id: unique per event and endpoint, the same on every attempt. */
  eventId: string;
  endpointId: string;
  owner: string;
  url: string;
  sealedSecret: Buffer;
  /** Failed claims of this endpoint in a row before this one: how long it waits after another failure. */
  endpointFailures: number;
  type: WebhookEventType;
  plantId: bigint;
  /** null for plant.deleted. */
  name: string | null;
  tag: string | null;
  /** When the write happened, in milliseconds since the epoch. */
  occurredAt: number;
  /** This attempt's number, from 1. */
  attempt: number;
  /** Proves the lease when settling. */
  claim: string;
}

export interface ClaimOptions {
  /** Only endpoints whose secret is sealed with this key. */
  keyId: string;
  /** At most this many endpoints in all. */
  limit: number;
  perEndpoint: number;
  leaseMs: number;
  /** Endpoints this process is delivering to already. */
  exclude: readonly string[];
  /** At most this many endpoints of one owner, counting those in `busyOwners`. */
  perOwner: number;
  /** How many endpoints of each owner this process is delivering to already. */
  busyOwners: ReadonlyMap<string, number>;
  /** An endpoint with more events than this waiting is disabled when new events are fanned out to it. */
  maxPending: number;
}

/**
 * How a claim of one endpoint ended: all its events settled ('done'), an
 * attempt failed (the endpoint waits `delayMs` before its next claim), or the
 * process is stopping ('stopped': due again at once, its failures unchanged).
 */
export type ClaimEnd = { kind: 'done' } | { kind: 'failed'; delayMs: number } | { kind: 'stopped' };

export type DeliverySettlement =
  | { kind: 'delivered' }
  | { kind: 'retry'; delayMs: number; error: string }
  /** Given up: kept as failed, never claimed again unless redelivered (WebhookStore.redeliver). */
  | { kind: 'give-up'; error: string }
  /** Not attempted after all (shutting down): due again at once, the attempt not counted. */
  | { kind: 'release' };

/**
 * The transactional outbox, over the one event log (EventLog): a plant write
 * stores one event there, in its own transaction, whatever the number of
 * endpoints; claims fan the events logged since the last fan-out out to the
 * endpoints subscribed, as deliveries that refer to them. Each endpoint is claimed whole, by one process at a
 * time, and waits out its own backoff after a failure: its waiting events cost
 * nothing meanwhile.
 */
export interface OutboxStore {
  /**
   * Fans new events out, then claims endpoints that are due (those waiting
   * longest first, at most `perOwner` per owner), and for each its due
   * deliveries, oldest first, at most `perEndpoint`.
   */
  claim(options: ClaimOptions): Promise<ClaimedDelivery[]>;
  /** Ends this process's claim of an endpoint; false when the claim had run out. */
  endClaim(endpointId: string, claim: string, end: ClaimEnd): Promise<boolean>;
  /** False when the lease had run out and another claim took the delivery over. */
  settle(delivery: ClaimedDelivery, settlement: DeliverySettlement): Promise<boolean>;
  /** Disables an endpoint and drops the events waiting for it; false when it was not active. */
  disableEndpoint(endpointId: string, reason: string): Promise<boolean>;
}

/** Events one EventLog.prune removes at most, so that each prune is a short transaction. */
export const EVENT_PRUNE_CHUNK = 10_000;

/** One change of one owner's plants, as the event log keeps it for live streams. */
export interface PlantEvent {
  /**
   * Unique, and increasing in the order readers get the events: an event is
   * readable only once no event with a smaller id can appear any more. Not
   * dense: ids may skip numbers.
   */
  id: bigint;
  owner: string;
  type: WebhookEventType;
  plantId: bigint;
  /** null for plant.deleted. */
  name: string | null;
  tag: string | null;
  /** When the write happened, in milliseconds since the epoch. */
  occurredAt: number;
}

/**
 * The log of plant events, written by the plant writes in their own
 * transactions, read by live streams (GET /plants/events), pruned in the
 * background. Reads see a final prefix of the log: no event ever appears
 * below an id a read returned (or below `newest`), so a reader that goes on
 * above the last id it saw misses nothing. Events are removed oldest first
 * only, for the whole log (by age) or for one owner (by its cap), and the
 * log remembers the largest id it removed of each: every event of an owner
 * above both marks, up to `newest`, is still there. Webhook deliveries fan
 * out from the same log, and pruning stops below the oldest event they still
 * need. Ids below 0 hold the events that waited for delivery at the upgrade
 * to one log: no stream reads them (`newest` is never below 0).
 */
export interface EventLog {
  /** Events of every owner with an id above `after`, oldest first, at most `limit`. */
  after(after: bigint, limit: number): Promise<PlantEvent[]>;
  /** One owner's events with an id in (after, upTo], oldest first, at most `limit`. */
  ownerAfter(owner: string, after: bigint, upTo: bigint, limit: number): Promise<PlantEvent[]>;
  /**
   * The id of the newest readable event (0n when there is none), and the
   * largest id ever pruned (0n when none was), for `owner`'s stream when
   * given: the larger of the mark of pruning by age (every owner's) and the
   * mark of that owner's own cap. A reader of `owner` that has seen every
   * event of it up to an id in [pruned, newest] can go on from it with
   * nothing missing; from an id below `pruned` it has missed removed events.
   */
  bounds(owner?: string): Promise<{ pruned: bigint; newest: bigint }>;
  /**
   * One bounded round of pruning, in short transactions: removes the events
   * older than `before` (ms since the epoch), a prefix of the log, and the
   * events of each owner beyond its newest `keepPerOwner` (a prefix of that
   * owner's events), never another owner's. Each part removes at most
   * EVENT_PRUNE_CHUNK events and never the newest readable one, and raises
   * its mark in the same transaction. The owners looked at are those of the
   * events logged since the store's previous round (at most
   * EVENT_PRUNE_CHUNK of them a round), so a round costs the same however
   * long the log. `more`: call again, there is more to look at.
   */
  prune(before: number, keepPerOwner: number): Promise<{ removed: number; more: boolean }>;
}

/**
 * Word between the processes sharing one store that events were logged, so
 * that their live streams look at once instead of at their next poll. Only a
 * hint: nothing is lost when one goes missing, the poll still finds it.
 */
export interface EventSignal {
  /** Opens the way to the other processes (a server calls it as it starts), so that its first word is not lost. */
  start(): void;
  /**
   * Tells the other processes that this one logged events; calls in one turn
   * of the event loop send one word, or none where the store can tell that
   * no other process listens.
   */
  announce(): void;
  /**
   * Calls `listener` when another process says it logged events, and after
   * the word could not be heard for a while (events may have gone unheard).
   * A server listens only while it has live streams open. Returns what stops it.
   */
  listen(listener: () => void): () => void;
  close(): Promise<void>;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres';
  readonly events: EventLog;
  /** How the processes on this store tell each other of new events; undefined where the store has no way. */
  readonly eventSignal: EventSignal | undefined;
  readonly plants: PlantStore;
  readonly tokens: TokenStore;
  readonly transfer: StoreTransfer;
  readonly webhooks: WebhookStore;
  readonly outbox: OutboxStore;
  /** Resolves when the database answers; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Thrown by PlantStore.page for a cursor it did not issue (or issued to another owner, or for another filter). */
export class InvalidCursorError extends Error {
  constructor() {
    super('cursor must be a value taken from a Link rel="next" URL');
    this.name = 'InvalidCursorError';
  }
}

/**
 * Thrown by stores when the database cannot be reached, or cannot take writes
 * for now (disk full, file read-only or gone); answered as 503, with
 * Retry-After when the store can tell when to try again.
 */
export class StoreUnavailableError extends Error {
  constructor(
    cause: unknown,
    readonly retryAfterSeconds?: number,
  ) {
    super('store unavailable', { cause });
    this.name = 'StoreUnavailableError';
  }
}
