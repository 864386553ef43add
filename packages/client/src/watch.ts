import type { ErrorBody } from './types.js';
import { CredentialsEndedError, errorFrom, type CredentialsEndReason } from './error.js';
import { readEventStream } from './event-stream.js';

/** What every event of watchPlants carries. */
interface EventBase {
  /** The event's id: pass it as lastEventId to resume after this event. Opaque. */
  eventId: string;
}

/** A plant was created; its id is exact. */
export interface PlantCreated extends EventBase {
  type: 'plant.created';
  /** When the write happened (RFC 3339). */
  timestamp: string;
  data: { id: bigint; name: string; tag?: string };
}

/** A plant was deleted. */
export interface PlantDeleted extends EventBase {
  type: 'plant.deleted';
  timestamp: string;
  data: { id: bigint };
}

/**
 * The events after the id resumed from are no longer kept, so some changes
 * cannot be told: list the plants again, then keep following.
 */
export interface PlantsReset extends EventBase {
  type: 'reset';
  message: string;
}

export type PlantChange = PlantCreated | PlantDeleted | PlantsReset;

export interface WatchOptions {
  /** Resume after this event (an eventId received before); from now on when absent. */
  lastEventId?: string;
  /** Ends the iteration (and the connection) when aborted. */
  signal?: AbortSignal;
}

/** How a watch reaches the server: the client's fetch, URL and credentials. */
export interface WatchTarget {
  url: URL;
  authorization: string;
  fetch: typeof fetch;
}

const MIN_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

const sleep = (ms: number, signal: AbortSignal | undefined) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/**
 * Parses one event's data. The plant id is an int64 written as a JSON
 * number, which JSON.parse would round above 2^53: it is turned into a string
 * first (it is the first member of "data", after the fixed type and timestamp).
 */
function change(eventId: string, type: string, data: string): PlantChange | undefined {
  if (type === 'reset') return { type, eventId, message: (JSON.parse(data) as ErrorBody).message };
  if (type !== 'plant.created' && type !== 'plant.deleted') return undefined;
  const parsed = JSON.parse(data.replace(/"data":\{"id":(-?\d+)/, '"data":{"id":"$1"')) as {
    timestamp: string;
    data: { id: string; name?: string; tag?: string };
  };
  const { id, ...rest } = parsed.data;
  return type === 'plant.created'
    ? { type, eventId, timestamp: parsed.timestamp, data: { id: BigInt(id), ...(rest as { name: string }) } }
    : { type, eventId, timestamp: parsed.timestamp, data: { id: BigInt(id) } };
}

/** The stream's last event when its credentials ended; thrown as it comes, so the loop does not reconnect. */
function credentialsEnded(data: string): CredentialsEndedError {
  const parsed = JSON.parse(data) as { reason?: string; message?: string };
  const reason: CredentialsEndReason =
    parsed.reason === 'expired' || parsed.reason === 'scope' ? parsed.reason : 'revoked';
  return new CredentialsEndedError(reason, parsed.message ?? 'the credentials of this stream ended');
}

/**
 * The changes of the caller's plants as they happen. It reconnects by itself
 * after a dropped connection, a server restart or a 5xx/429, resuming after
 * the last event it yielded, so none is lost or repeated. 401 and 403 (and
 * other 4xx) throw a PlantStoreError; a stream the server ends because its
 * token was revoked or expired, or lost the read scope, throws a
 * CredentialsEndedError (a PlantStoreError too, status 401 or 403).
 */
export async function* watch(target: WatchTarget, options: WatchOptions = {}): AsyncGenerator<PlantChange, void> {
  const { signal } = options;
  let lastEventId = options.lastEventId;
  let retryMs = MIN_RETRY_MS;
  while (!signal?.aborted) {
    const headers: Record<string, string> = { authorization: target.authorization, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    let response: Response;
    try {
      response = await target.fetch(target.url, { method: 'GET', headers, signal: signal ?? null });
    } catch {
      if (signal?.aborted) return;
      // The network: try again.
      await sleep(retryMs, signal);
      retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
      continue;
    }
    if (!response.ok || response.body === null) {
      const error = await errorFrom(response);
      if (response.status < 500 && response.status !== 429) throw error;
      const after = Number(response.headers.get('retry-after'));
      await sleep(after > 0 ? after * 1000 : retryMs, signal);
      retryMs = Math.min(MAX_RETRY_MS, retryMs * 2);
      continue;
    }
    let ended: CredentialsEndedError | undefined;
    try {
      for await (const e of readEventStream(response.body)) {
        retryMs = MIN_RETRY_MS;
        if (e.event === 'unauthorized') {
          ended = credentialsEnded(e.data);
          break;
        }
        const c = e.id === undefined ? undefined : change(e.id, e.event, e.data);
        if (c === undefined) continue;
        lastEventId = c.eventId;
        yield c;
      }
    } catch {
      // Cut off mid-stream (or aborted): reconnect below, or stop.
    }
    if (ended) throw ended;
    if (!signal?.aborted) await sleep(retryMs, signal);
  }
}
