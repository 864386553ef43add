import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { errors } from '../http/errors.js';
import { eventStreamsClosedSlow, eventStreamsOpen, eventsSent } from '../metrics/metrics.js';
import { eventBody } from '../outbox/event-body.js';
import { EVENT_PRUNE_CHUNK, type EventLog, type PlantEvent } from '../store/store.js';

export interface FeedOptions {
  pollMs: number;
  keepaliveMs: number;
  bufferBytes: number;
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
/** A stream closed for being slow gets this long to take its last event before its connection is cut. */
const SLOW_GRACE_MS = 5_000;

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

/**
 * The live streams of one process, fed from the store's event log. One query
 * (events above the last id seen, of every owner) serves every stream: it
 * runs at once after a write through this process or when another process
 * says it wrote (see EventSignal), and every `pollMs` for what no word
 * reached, only while a stream is open.
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
  readonly #keepalive: NodeJS.Timeout;
  readonly #prune: NodeJS.Timeout;
  #closed = false;

  constructor(
    private readonly log: EventLog,
    private readonly options: FeedOptions,
    private readonly logger: FastifyBaseLogger,
  ) {
    const beat = Math.max(5, Math.floor(options.keepaliveMs / 2));
    this.#keepalive = setInterval(() => this.#keepAlive(beat), beat).unref();
    this.#prune = setInterval(() => void this.prune(), Math.min(PRUNE_EVERY_MS, options.retentionMs)).unref();
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
    owner: string,
    res: ServerResponse,
    lastEventId: bigint | undefined,
    writeHead: () => void,
  ): Promise<void> {
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
      const { pruned, newest } = await this.log.bounds();
      // Ids skip numbers, so only the log's own mark tells whether events after lastEventId were removed.
      reset = lastEventId !== undefined && (lastEventId > newest || lastEventId < pruned);
      stream.through = lastEventId === undefined || reset ? newest : lastEventId;
    } catch (error) {
      this.#remove(stream);
      throw error;
    }
    writeHead();
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
    clearTimeout(this.#pollTimer);
    for (const owned of this.#streams.values()) for (const s of owned) s.res.end();
  }

  /** Removes old events; failures are logged and tried again at the next round. */
  async prune(): Promise<void> {
    try {
      const before = Date.now() - this.options.retentionMs;
      // Each round removes a bounded chunk, one short transaction each.
      while ((await this.log.prune(before, this.options.maxKept)) >= EVENT_PRUNE_CHUNK && !this.#closed);
    } catch (error) {
      this.logger.warn({ err: error }, 'pruning old plant events failed; trying again later');
    }
  }

  #begin(): Promise<void> {
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
   * and one poll's events.
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
    const { res } = stream;
    // Once all is handed to the kernel the connection closes, so the client
    // sees the end; one that does not read at all is cut after the grace time.
    res.end(
      notice(
        'overflow',
        'this client read events too slowly to keep up; reconnect with Last-Event-ID to resume where it left off',
      ),
      () => res.socket?.end(),
    );
    setTimeout(() => res.destroy(), SLOW_GRACE_MS).unref();
    this.#remove(stream);
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
    if (owned.size === 0) this.#streams.delete(stream.owner);
    this.#count--;
    eventStreamsOpen.dec();
  }
}
