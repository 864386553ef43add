import type { Logger } from 'pino';
import { webhookDeliveries, webhookDeliveryLag } from '../metrics/metrics.js';
import { SETTINGS } from '../config.js';
import type { ClaimEnd, ClaimedDelivery, DeliverySettlement, OutboxStore, WebhookStore } from '../store/store.js';
import { attemptDelivery, type AttemptResult } from './attempt.js';
import { eventBody, signedHeaders } from './event-body.js';
import { MAX_ATTEMPTS, retryAfterMs, retryDelayMs } from './retry-schedule.js';
import { readKeyFile, type SecretBox } from './secret-box.js';

export interface DeliveryLoopOptions {
  outbox: OutboxStore;
  webhooks: WebhookStore;
  /** The file with the key that opens the endpoints' secrets (config.ts webhookKeyPath). */
  keyPath: string;
  allowPrivate: boolean;
  timeoutMs: number;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** How often to look for due events when idle. */
  pollMs?: number;
  /** Past this many events waiting for one endpoint, it is disabled (config.ts webhooksMaxPending). */
  maxPending?: number;
  /** How long a claim holds its events (config.ts webhookLeaseMs); unset: long enough to try each in turn. */
  leaseMs?: number | undefined;
  /**
   * The wait after a failed attempt (retry-schedule.ts); the delivery tests
   * pass a shorter schedule so their retries come within a second.
   */
  retryDelayMs?: (attempt: number) => number | undefined;
}

// A claim takes at most this many events of one endpoint; the events of one
// endpoint are sent one after the other (best-effort order), different
// endpoints in parallel, at most MAX_BUSY_ENDPOINTS at once and at most
// PER_OWNER of one owner: an owner whose endpoints hang holds a quarter of the
// slots at most, and the others' events go out meanwhile.
const PER_ENDPOINT = 4;
const MAX_BUSY_ENDPOINTS = 32;
const PER_OWNER = 8;
// Answers that say the receiver as a whole is down or overloaded, not that it refused one event.
const ENDPOINT_DOWN = new Set([429, 502, 503, 504]);
// A missing key file is looked for again this often (webhook add creates it).
const KEY_RETRY_MS = 5_000;
// Endpoints sealed with a key this process lacks are reported this often.
const KEY_CHECK_MS = 60_000;
// While claims fail, polls back off to this, and the failure is logged this often.
const MAX_IDLE_MS = 5_000;
const ERROR_REPORT_MS = 30_000;

/**
 * Delivers the outbox's events, apart from request handling: nothing here is
 * awaited by a request. Each event is claimed with a lease, so with several
 * processes (--workers, or instances on one PostgreSQL) each attempt is made
 * by one of them; a process that dies mid-attempt leaves the event to be
 * claimed again when the lease runs out (at-least-once).
 */
export class DeliveryLoop {
  readonly #o: Required<Omit<DeliveryLoopOptions, 'leaseMs'>>;
  readonly #leaseMs: number;
  readonly #busy = new Map<string, { owner: string; chain: Promise<void> }>();
  readonly #stop = new AbortController();
  readonly #reportedKeys = new Set<string>();
  #box: SecretBox | undefined;
  #keyLookedAt = 0;
  #keysCheckedAt = 0;
  #running: Promise<void> | undefined;
  #wake: (() => void) | undefined;

  constructor(options: DeliveryLoopOptions) {
    this.#o = {
      pollMs: 250,
      maxPending: Number(SETTINGS['webhooks-max-pending'].default),
      retryDelayMs,
      ...options,
    };
    // By default long enough for every event of one claim to be tried in
    // turn, each to its time limit: the lease never runs out under a live
    // process. A shorter one sends the events of a dead process sooner; those
    // of a claim that would be tried past it are released untried.
    this.#leaseMs = options.leaseMs ?? PER_ENDPOINT * (this.#o.timeoutMs + 500) + 5_000;
  }

  start(): void {
    this.#running ??= this.#run();
  }

  /** Stops claiming, abandons the attempts in flight (their events are due again at once) and waits for them. */
  async stop(): Promise<void> {
    this.#stop.abort();
    this.#wake?.();
    await this.#running;
    await Promise.all([...this.#busy.values()].map((b) => b.chain));
  }

  async #run(): Promise<void> {
    let failures = 0;
    let reportedAt = 0;
    while (!this.#stop.signal.aborted) {
      let claimed = 0;
      try {
        claimed = await this.#claimOnce();
        failures = 0;
      } catch (error) {
        // The store is down (or closing): say so now and then, not at every poll.
        failures++;
        if (Date.now() - reportedAt >= ERROR_REPORT_MS) {
          reportedAt = Date.now();
          this.#o.log.error({ err: error, failures }, 'webhook delivery: could not claim events; will keep trying');
        }
      }
      const idle = Math.min(this.#o.pollMs * 2 ** Math.min(failures, 8), MAX_IDLE_MS);
      if (claimed === 0 || this.#busy.size >= MAX_BUSY_ENDPOINTS) await this.#sleep(idle);
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }

  /** Claims what is due for endpoints not busy here, and starts their deliveries; how many were claimed. */
  async #claimOnce(): Promise<number> {
    const box = this.#key();
    await this.#reportForeignKeys(box);
    if (!box || this.#busy.size >= MAX_BUSY_ENDPOINTS) return 0;
    // Taken before the claim, so the lease never ends later than we think.
    const leaseEnds = Date.now() + this.#leaseMs;
    const busyOwners = new Map<string, number>();
    for (const { owner } of this.#busy.values()) busyOwners.set(owner, (busyOwners.get(owner) ?? 0) + 1);
    const claimed = await this.#o.outbox.claim({
      keyId: box.keyId,
      limit: MAX_BUSY_ENDPOINTS - this.#busy.size,
      perEndpoint: PER_ENDPOINT,
      leaseMs: this.#leaseMs,
      exclude: [...this.#busy.keys()],
      perOwner: PER_OWNER,
      busyOwners,
      maxPending: this.#o.maxPending,
    });
    const byEndpoint = new Map<string, ClaimedDelivery[]>();
    for (const d of claimed) {
      const list = byEndpoint.get(d.endpointId);
      if (list) list.push(d);
      else byEndpoint.set(d.endpointId, [d]);
    }
    for (const [endpointId, deliveries] of byEndpoint) {
      const chain = this.#deliverInTurn(box, deliveries, leaseEnds).finally(() => {
        this.#busy.delete(endpointId);
        this.#wake?.();
      });
      this.#busy.set(endpointId, { owner: deliveries[0]!.owner, chain });
    }
    return claimed.length;
  }

  #key(): SecretBox | undefined {
    if (this.#box) return this.#box;
    const now = Date.now();
    if (now - this.#keyLookedAt < KEY_RETRY_MS) return undefined;
    this.#keyLookedAt = now;
    try {
      this.#box = readKeyFile(this.#o.keyPath);
    } catch (error) {
      this.#o.log.error({ err: error }, 'webhook delivery: cannot read the webhook key file');
    }
    return this.#box;
  }

  /**
   * Says (once per endpoint) when active endpoints are sealed with a key this
   * process does not have, or when it has no key file at all: their events
   * wait, and without this line nothing would tell why.
   */
  async #reportForeignKeys(box: SecretBox | undefined): Promise<void> {
    const now = Date.now();
    if (now - this.#keysCheckedAt < KEY_CHECK_MS) return;
    this.#keysCheckedAt = now;
    const endpoints = await this.#o.webhooks.list();
    const foreign = endpoints.filter((e) => !e.disabledAt && e.keyId !== box?.keyId && !this.#reportedKeys.has(e.id));
    for (const e of foreign) this.#reportedKeys.add(e.id);
    if (foreign.length > 0) {
      this.#o.log.warn(
        { webhook: { endpoints: foreign.map((e) => e.id), keyFile: this.#o.keyPath } },
        box
          ? 'webhook delivery: these endpoints were registered with another webhook key than this process has; ' +
              'their events wait for a process with that key'
          : 'webhook delivery: the webhook key file does not exist, so events to these endpoints wait until it does',
      );
    }
  }

  /**
   * Sends one endpoint's claimed events in turn. The first failure ends the
   * turn: the rest are released, and the endpoint waits out a backoff that
   * grows with its failures in a row, so a receiver that is down costs one
   * attempt per backoff, however many events wait for it.
   */
  async #deliverInTurn(box: SecretBox, deliveries: ClaimedDelivery[], leaseEnds: number): Promise<void> {
    const first = deliveries[0]!;
    let end: ClaimEnd = { kind: 'done' };
    for (const d of deliveries) {
      // Past its lease another process may have claimed the event: leave it.
      if (end.kind !== 'done' || this.#stop.signal.aborted || Date.now() + this.#o.timeoutMs > leaseEnds) {
        await this.#settle(d, { kind: 'release' });
        if (end.kind === 'done') end = { kind: 'stopped' };
        continue;
      }
      const outcome = await this.#deliverOne(box, d);
      if (outcome === 'endpoint-disabled') return;
      if (outcome === 'aborted') end = { kind: 'stopped' };
      else if (outcome !== 'ok') end = { kind: 'failed', delayMs: outcome.endpointDelayMs };
    }
    try {
      await this.#o.outbox.endClaim(first.endpointId, first.claim, end);
    } catch (error) {
      // The endpoint's lease runs out and it is claimed again.
      this.#o.log.error(
        { err: error, webhook: { endpoint: first.endpointId } },
        'webhook delivery: could not end the claim of an endpoint; it waits for its lease to run out',
      );
    }
  }

  async #deliverOne(
    box: SecretBox,
    d: ClaimedDelivery,
  ): Promise<'ok' | 'aborted' | 'endpoint-disabled' | { endpointDelayMs: number }> {
    const log = this.#o.log;
    const context = { endpoint: d.endpointId, event: d.eventId, type: d.type, attempt: d.attempt, host: hostOf(d.url) };
    let result: AttemptResult;
    const started = performance.now();
    try {
      const secret = box.open(d.sealedSecret, d.endpointId);
      const body = eventBody(d);
      result = await attemptDelivery(d.url, signedHeaders(secret, d.eventId, body), body, {
        timeoutMs: this.#o.timeoutMs,
        allowPrivate: this.#o.allowPrivate,
        signal: this.#stop.signal,
      });
    } catch (error) {
      result = { kind: 'failed', error: `could not sign the event: ${(error as Error).message}` };
    }
    const durationMs = Math.round(performance.now() - started);
    switch (result.kind) {
      case 'aborted':
        await this.#settle(d, { kind: 'release' });
        return 'aborted';
      case 'delivered':
        webhookDeliveries.inc({ outcome: 'delivered' });
        webhookDeliveryLag.observe(Math.max(0, Date.now() - d.occurredAt) / 1000);
        log.info({ webhook: { ...context, status: result.status, durationMs } }, 'webhook delivered');
        await this.#settle(d, { kind: 'delivered' });
        return 'ok';
      case 'gone':
        webhookDeliveries.inc({ outcome: 'gone' });
        log.warn(
          { webhook: { ...context, status: result.status, durationMs } },
          'webhook endpoint answered 410 Gone: endpoint disabled, its waiting events dropped',
        );
        try {
          await this.#o.outbox.disableEndpoint(d.endpointId, `answered 410 Gone at ${new Date().toISOString()}`);
        } catch (error) {
          log.error({ err: error, webhook: context }, 'webhook delivery: could not disable the endpoint');
        }
        return 'endpoint-disabled';
      case 'failed': {
        const backoff = this.#o.retryDelayMs(d.attempt);
        const status = result.status;
        const asked = retryAfterMs(result.retryAfter);
        // No answer, or one that says the receiver is down or overloaded:
        // the endpoint pauses (its other events too), for a time that grows
        // with its failures in a row. Any other answer is about this event,
        // which is retried on its own schedule while the others go on.
        const down = status === undefined || ENDPOINT_DOWN.has(status);
        const endpointBackoff = () => this.#o.retryDelayMs(Math.min(d.endpointFailures + 1, MAX_ATTEMPTS - 1))!;
        const next = down ? { endpointDelayMs: Math.max(endpointBackoff(), asked ?? 0) } : ('ok' as const);
        if (backoff === undefined) {
          webhookDeliveries.inc({ outcome: 'dropped' });
          log.error(
            { webhook: { ...context, status, error: result.error, durationMs } },
            `webhook attempt failed; giving up after ${d.attempt} attempts`,
          );
          await this.#settle(d, { kind: 'give-up', error: result.error });
          return next;
        }
        webhookDeliveries.inc({ outcome: 'failed' });
        const delayMs = Math.max(backoff, asked ?? 0);
        log.warn(
          { webhook: { ...context, status, error: result.error, durationMs, retryInMs: delayMs } },
          'webhook attempt failed; will retry',
        );
        await this.#settle(d, { kind: 'retry', delayMs, error: result.error });
        return next;
      }
    }
  }

  async #settle(d: ClaimedDelivery, settlement: DeliverySettlement): Promise<void> {
    try {
      const held = await this.#o.outbox.settle(d, settlement);
      if (!held) {
        this.#o.log.warn(
          { webhook: { endpoint: d.endpointId, event: d.eventId, settlement: settlement.kind } },
          'webhook delivery: the claim had run out and the event was taken over; it may be delivered twice',
        );
      }
    } catch (error) {
      // The lease runs out and the event is claimed again: at least once.
      this.#o.log.error(
        { err: error, webhook: { endpoint: d.endpointId, event: d.eventId, settlement: settlement.kind } },
        'webhook delivery: could not record the outcome; the event will be tried again',
      );
    }
  }
}

/** The URL's host only: a path or query may carry credentials of the receiver. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '?';
  }
}
