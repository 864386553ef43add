import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../auth/principal.js';
import { errors } from '../http/errors.js';
import { eventStreamsClosedSlow, eventStreamsOpen, eventsSent } from '../metrics/metrics.js';
import { eventBody } from '../outbox/event-body.js';
import type { EventLog, EventSignal, PlantEvent } from '../store/store.js';
import type { CredentialsEnd, StreamCredentials } from './stream-credentials.js';

export interface FeedOptions {
  pollMs: number;
  keepaliveMs: number;
  bufferBytes: number;
  slowMs: number;
  maxStreams: number;
  maxStreamsPerOwner: number;
  retentionMs: number;
  maxKept: number;
}

/** One open stream. */
interface Stream {
  owner: string;
  res: ServerResponse;
  /** Every event of this owner with an id up to this one has been sent. */
  through: bigint;
  /** Reading its backlog: live events are left to that reading. */
  catchingUp: boolean;
  lastWriteAt: number;
  /** Since when output has waited for the client with none taken, and how much had been handed to the kernel then. */
  stalled?: { since: number; flushed: number } | undefined;
  /** Stops the check of the credentials it was opened with. */
  unwatch?: () => void;
}

/** Events read from the log in one query. */
const PAGE = 500;
/** How often old events are pruned, at most. */
const PRUNE_EVERY_MS = 60_000;
/**
 * After a wake whose poll found nothing, the feed looks again this soon,
 * doubling up to LOOK_AGAIN_MAX_MS (never later than the poll), for
 * LOOK_FOR_MS: a write answered can be unreadable for a while (on
 * PostgreSQL, behind older transactions anywhere in the cluster not yet ended).
 */
const LOOK_AGAIN_MS = 5;
const LOOK_AGAIN_MAX_MS = 500;
const LOOK_FOR_MS = 5_000;
/** A stream the server ends (slow, credentials ended) gets this long to take its last event before its connection is cut. */
const END_GRACE_MS = 5_000;

/** Resolves when a response can take more, or is gone. */
const drained = (res: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });

const frame = (e: PlantEvent) => `id: ${e.id}\nevent: ${e.type}\ndata: ${eventBody(e)}\n\n`;
const notice = (type: string, message: string, id?: bigint) =>
  `${id === undefined ? '' : `id: ${id}\n`}event: ${type}\ndata: ${JSON.stringify({ type, message })}\n\n`;

const CREDENTIALS_ENDED: Record<CredentialsEnd, string> = {
  revoked: 'the token this stream was opened with has been revoked; the stream has ended',
  expired: 'the credentials this stream was opened with have expired; reconnect with new ones',
  scope: 'the token this stream was opened with no longer has the plants:read scope; the stream has ended',
};
/** The last event of a stream whose credentials ended; `reason` lets a client tell why without reading the message. */
const unauthorized = (reason: CredentialsEnd) =>
  `event: unauthorized\ndata: ${JSON.stringify({ type: 'unauthorized', reason, message: CREDENTIALS_ENDED[reason] })}\n\n`;

/**
 * The live streams of one process, fed from the store's event log. One query
 * (events above the last id seen, of every owner) serves every stream: it
 * runs at once after a write through this process or when another process
 * says it wrote (see EventSignal, listened to only while a stream is open),
 * and every `pollMs` for what no word reached, only while a stream is open.
 * A stream that resumes first reads its owner's backlog, up to the id the
 * shared query has reached, then takes the live events; the log shows only
 * events below which no other can appear any more (see EventLog), so
 * reading above an id misses nothing.
 */
export class EventFeed {
  readonly #streams = new Map<string, Set<Stream>>();
  #count = 0;
  /** Every event up to this id has been handed to the streams; undefined until the first stream. */
  #cursor: bigint | undefined;
  #starting: Promise<void> | undefined;
  #polling = false;
  #pollAgain = false;
  /** A wake came since the last poll began. */
  #woken = false;
  /** Since when polls look again soon, after a wake found nothing; and how many did. */
  #lookingSince: number | undefined;
  #looks = 0;
  #pollTimer: NodeJS.Timeout | undefined;
  /** Stops listening to the other processes' word; set while streams are open. */
  #deaf: (() => void) | undefined;
  readonly #keepalive: NodeJS.Timeout;
  readonly #prune: NodeJS.Timeout;
  readonly #slowCheck: NodeJS.Timeout;
  #closed = false;

  constructor(
    private readonly log: EventLog,
    private readonly options: FeedOptions,
    private readonly logger: FastifyBaseLogger,
    private readonly credentials: StreamCredentials,
    /** The word between the processes on the store; listened to only while a stream is open. */
    private readonly signal: EventSignal | undefined,
  ) {
    const beat = Math.max(5, Math.floor(options.keepaliveMs / 2));
    this.#keepalive = setInterval(() => this.#keepAlive(beat), beat).unref();
    this.#prune = setInterval(() => void this.prune(), Math.min(PRUNE_EVERY_MS, options.retentionMs)).unref();
    const slowEvery = Math.max(25, Math.min(1000, Math.floor(options.slowMs / 4)));
    this.#slowCheck = setInterval(() => this.#closeStalled(), slowEvery).unref();
  }

  get open(): number {
    return this.#count;
  }

  /** Refuses a new stream over the caps with 429; otherwise nothing. */
  admit(owner: string): void {
    const { maxStreams, maxStreamsPerOwner } = this.options;
    if (this.#closed) throw errors.unavailable('the server is shutting down, try again');
    if (this.#count >= maxStreams)
      throw errors.tooManyRequests(`this server holds its most live streams (${maxStreams}), try again later`, {
        'retry-after': '5',
      });
    if ((this.#streams.get(owner)?.size ?? 0) >= maxStreamsPerOwner)
      throw errors.tooManyRequests(
        `this owner has ${maxStreamsPerOwner} live streams open on this server already; close one first`,
        { 'retry-after': '5' },
      );
  }

  /**
   * Starts a stream: the events after `lastEventId`, or from now on. Where
   * the stream starts is read from the log before `writeHead` sends the
   * response head, so every write the client makes once it has seen the 200
   * is in its stream. An id below the largest one pruned (events after it
   * are gone) or above the newest (never given out here) gets a `reset`
   * event instead, carrying the newest id, and the stream goes on from
   * there. Fails, with no head written, when the log cannot be read.
   */
  async start(
    principal: Principal,
    res: ServerResponse,
    lastEventId: bigint | undefined,
    writeHead: () => void,
  ): Promise<void> {
    const { owner } = principal;
    this.admit(owner);
    const stream: Stream = { owner, res, through: 0n, catchingUp: true, lastWriteAt: performance.now() };
    let owned = this.#streams.get(owner);
    if (!owned) this.#streams.set(owner, (owned = new Set()));
    owned.add(stream);
    this.#count++;
    eventStreamsOpen.inc();
    res.once('close', () => this.#remove(stream));
    let reset = false;
    try {
      await this.#begin();
      const { pruned, newest } = await this.log.bounds(owner);
      // Ids skip numbers, so only the log's own mark tells whether events after lastEventId were removed.
      reset = lastEventId !== undefined && (lastEventId > newest || lastEventId < pruned);
      stream.through = lastEventId === undefined || reset ? newest : lastEventId;
    } catch (error) {
      this.#remove(stream);
      throw error;
    }
    writeHead();
    // From the first byte on: a stream whose credentials end gets its last event and is closed.
    stream.unwatch = this.credentials.watch(principal, (reason) => this.#end(stream, unauthorized(reason)));
    if (reset)
      this.#write(
        stream,
        notice(
          'reset',
          'the events after Last-Event-ID are no longer kept: list the plants again, then follow this stream',
          stream.through,
        ),
      );
    try {
      await this.#catchUp(stream);
    } catch (error) {
      this.logger.warn({ err: error }, 'a live event stream failed to read its backlog');
      res.end();
    }
  }

  /** A write through this process or another: look for its events now rather than at the next poll. */
  wake(): void {
    if (this.#count === 0 || this.#cursor === undefined) return;
    this.#woken = true;
    this.#schedule(0);
  }

  /** Ends every stream (shutting down); their clients reconnect elsewhere and resume. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#keepalive);
    clearInterval(this.#prune);
    clearInterval(this.#slowCheck);
    clearTimeout(this.#pollTimer);
    this.#deafen();
    this.credentials.close();
    for (const owned of this.#streams.values()) for (const s of owned) s.res.end();
  }

  #deafen(): void {
    this.#deaf?.();
    this.#deaf = undefined;
  }

  /** Removes old events; failures are logged and tried again at the next round. */
  async prune(): Promise<void> {
    try {
      const before = Date.now() - this.options.retentionMs;
      // Each round removes a bounded chunk, one short transaction each.
      while ((await this.log.prune(before, this.options.maxKept)).more && !this.#closed);
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning old plant events failed; trying again later');
    }
  }

  #begin(): Promise<void> {
    // Before the start is read: a word about a write after it wakes the streams.
    this.#deaf ??= this.signal?.listen(() => this.wake());
    this.#starting ??= this.log.bounds().then(
      ({ newest }) => {
        this.#cursor = newest;
        this.#schedule(this.options.pollMs);
      },
      (error: unknown) => {
        this.#starting = undefined;
        throw error;
      },
    );
    return this.#starting;
  }

  async #catchUp(stream: Stream): Promise<void> {
    while (!stream.res.writableEnded) {
      const upTo = this.#cursor!;
      const events = await this.log.ownerAfter(stream.owner, stream.through, upTo, PAGE);
      // The backlog goes at the client's pace: a slow client only makes its catching up slow.
      for (const e of events) {
        this.#send(stream, e);
        if (stream.res.writableNeedDrain) await drained(stream.res);
      }
      if (events.length === PAGE) continue;
      if (upTo > stream.through) stream.through = upTo;
      // Synchronously after the read: no live event above upTo was handed out meanwhile.
      if (this.#cursor === upTo) {
        stream.catchingUp = false;
        return;
      }
    }
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    if (this.#polling) {
      if (ms === 0) this.#pollAgain = true;
      return;
    }
    clearTimeout(this.#pollTimer);
    this.#pollTimer = setTimeout(() => void this.#poll(), ms);
  }

  async #poll(): Promise<void> {
    if (this.#count === 0 || this.#closed) {
      // Nothing to feed: forget the position, the next stream starts afresh.
      this.#cursor = undefined;
      this.#starting = undefined;
      this.#deafen();
      return;
    }
    this.#polling = true;
    const woken = this.#woken;
    this.#woken = false;
    let full = false;
    let found = false;
    try {
      const events = await this.log.after(this.#cursor!, PAGE);
      for (const e of events) {
        const owned = this.#streams.get(e.owner);
        if (owned) for (const s of owned) if (!s.catchingUp && e.id > s.through) this.#sendLive(s, e);
      }
      if (events.length > 0) this.#cursor = events[events.length - 1]!.id;
      full = events.length === PAGE;
      found = events.length > 0;
    } catch (error) {
      this.logger.warn({ err: error }, 'reading plant events for live streams failed; trying again');
    } finally {
      this.#polling = false;
    }
    const again = full || this.#pollAgain;
    this.#pollAgain = false;
    this.#schedule(again ? 0 : this.#nextPoll(woken, found));
  }

  /** When to poll next: soon again while a wake has found nothing yet, else after pollMs. */
  #nextPoll(woken: boolean, found: boolean): number {
    const { pollMs } = this.options;
    const now = performance.now();
    if (woken && !found) {
      this.#lookingSince = now;
      this.#looks = 0;
    }
    if (found || this.#lookingSince === undefined || now - this.#lookingSince > LOOK_FOR_MS) {
      this.#lookingSince = undefined;
      return pollMs;
    }
    return Math.min(LOOK_AGAIN_MS * 2 ** this.#looks++, LOOK_AGAIN_MAX_MS, pollMs);
  }

  /**
   * A live event: the stream is closed as slow instead when its client has
   * not taken what earlier polls sent, so a stream holds at most the buffer
   * and one poll's events. (A backlog is sent only as fast as the client
   * takes it, so it never passes the buffer.)
   */
  #sendLive(stream: Stream, e: PlantEvent): void {
    if (stream.res.writableLength > this.options.bufferBytes) this.#closeSlow(stream);
    else this.#send(stream, e);
  }

  #send(stream: Stream, e: PlantEvent): void {
    if (stream.res.writableEnded) return;
    stream.through = e.id;
    this.#write(stream, frame(e));
    eventsSent.inc();
  }

  #write(stream: Stream, text: string): void {
    stream.lastWriteAt = performance.now();
    stream.res.write(text);
  }

  #closeSlow(stream: Stream): void {
    eventStreamsClosedSlow.inc();
    this.#end(
      stream,
      notice(
        'overflow',
        'this client read events too slowly to keep up; reconnect with Last-Event-ID to resume where it left off',
      ),
    );
  }

  /** Ends a stream with a last event. */
  #end(stream: Stream, last: string): void {
    const { res } = stream;
    if (res.writableEnded) return;
    // Once all is handed to the kernel the connection closes, so the client
    // sees the end; one that does not read at all is cut after the grace time.
    res.end(last, () => res.socket?.end());
    setTimeout(() => res.destroy(), END_GRACE_MS).unref();
    this.#remove(stream);
  }

  /**
   * The other half of the slow rule, for backlogs and live events alike: a
   * stream with output waiting in the server (the kernel's buffers for the
   * connection are full) of which the client has taken nothing for `slowMs`
   * is closed as slow. A client that reads, however slowly, keeps moving the
   * count of bytes handed to the kernel, and stays.
   */
  #closeStalled(): void {
    const now = performance.now();
    for (const owned of this.#streams.values())
      for (const s of owned) {
        const socket = s.res.socket;
        if (!socket || s.res.writableLength === 0) {
          s.stalled = undefined;
          continue;
        }
        // bytesWritten counts what is still buffered too.
        const flushed = socket.bytesWritten - socket.writableLength;
        if (s.stalled?.flushed !== flushed) s.stalled = { since: now, flushed };
        else if (now - s.stalled.since >= this.options.slowMs) this.#closeSlow(s);
      }
  }

  #keepAlive(beat: number): void {
    const now = performance.now();
    for (const owned of this.#streams.values())
      for (const s of owned)
        if (now - s.lastWriteAt >= beat && !s.res.writableEnded) this.#write(s, ': keep-alive\n\n');
  }

  #remove(stream: Stream): void {
    const owned = this.#streams.get(stream.owner);
    if (!owned?.delete(stream)) return;
    stream.unwatch?.();
    if (owned.size === 0) this.#streams.delete(stream.owner);
    this.#count--;
    eventStreamsOpen.dec();
  }
}
