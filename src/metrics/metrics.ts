import cluster from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { Histogram } from './histogram.js';

// Every metric the service exposes. Definitions live this low so that stores,
// auth and plugins can record without importing upwards; recording that costs
// anything per request checks `metricsOn` first, which is false until a
// process enables metrics (serve with --admin-port).

export const registry = new Registry();

/** Latency buckets in seconds: most requests take well under a millisecond. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The route label of requests that matched no route, or failed before routing. */
export const UNMATCHED_ROUTE = 'unmatched';

export const httpRequestDuration = new Histogram(
  'plant_store_http_request_duration_seconds',
  'Time from routing a request to the end of its response; _count is the number of requests. route is the route template (unmatched for unknown paths and requests refused before routing).',
  ['method', 'route', 'status_code'],
  LATENCY_BUCKETS,
);

export const httpMalformedRequests = new Counter({
  name: 'plant_store_http_malformed_requests_total',
  help: "Requests answered before reaching a route: refused by Node's HTTP parser (400, 431, 501 for a method it does not know, or 505 for an HTTP version it does not speak), or CONNECT (405).",
  labelNames: ['status_code'],
  registers: [registry],
});

export const dbQueryDuration = new Histogram(
  'plant_store_db_query_duration_seconds',
  'Time of one read against the store (SQLite: the list query; PostgreSQL: a read statement including the wait for a pooled connection).',
  ['store'],
  LATENCY_BUCKETS,
);

export const dbCommitDuration = new Histogram(
  'plant_store_db_commit_duration_seconds',
  'Time of one committed write transaction (SQLite: a group-commit batch from hand-over to the writer thread to its answer; PostgreSQL: a write statement including the wait for a pooled connection).',
  ['store'],
  LATENCY_BUCKETS,
);

export const sqliteBatchSize = new Histogram(
  'plant_store_sqlite_commit_batch_size',
  'Writes committed together in one SQLite group-commit transaction.',
  [],
  [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
);

export const tokenCacheHits = new Counter({
  name: 'plant_store_token_cache_hits_total',
  help: 'Bearer token checks answered from the short-lived token cache.',
  registers: [registry],
});

export const tokenCacheMisses = new Counter({
  name: 'plant_store_token_cache_misses_total',
  help: 'Bearer token checks that had to look the token up in the store.',
  registers: [registry],
});

export const rateLimitRejections = new Counter({
  name: 'plant_store_rate_limit_rejections_total',
  help: 'Requests answered 429: limit="owner" for a token owner over --rate-limit, limit="auth_failures" for a client address over --auth-fail-limit.',
  labelNames: ['limit'],
  registers: [registry],
});

export const webhookDeliveries = new Counter({
  name: 'plant_store_webhook_deliveries_total',
  help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (to be retried), gone (410: the endpoint is disabled), dropped (the last attempt failed).',
  labelNames: ['outcome'],
  registers: [registry],
});

export const webhookDeliveryLag = new Histogram(
  'plant_store_webhook_delivery_lag_seconds',
  'Time from the write that made a webhook event to its delivery (2xx), retries included.',
  [],
  [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600],
);

export const dbUnavailableErrors = new Counter({
  name: 'plant_store_db_unavailable_errors_total',
  help: 'Store calls answered 503 because the database could not take them, by reason: read_only (the server is a standby: failover or switchover under way), shutdown (the server is stopping or starting), connection (lost or refused), timeout (pool or statement), overloaded (too many connections), misconfigured.',
  labelNames: ['reason'],
  registers: [registry],
});

/** What the PostgreSQL pool gauges read; pg.Pool has these fields. */
export interface PoolCounts {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  readonly ended: boolean;
}

const pools = new Set<PoolCounts>();

function livePools(): PoolCounts[] {
  for (const pool of pools) if (pool.ended) pools.delete(pool);
  return [...pools];
}

new Gauge({
  name: 'plant_store_pg_pool_connections_in_use',
  help: 'PostgreSQL connections checked out of the pool.',
  registers: [registry],
  collect() {
    this.set(livePools().reduce((n, p) => n + p.totalCount - p.idleCount, 0));
  },
});

new Gauge({
  name: 'plant_store_pg_pool_waiting_requests',
  help: 'Requests waiting for a PostgreSQL connection because every pooled one is in use.',
  registers: [registry],
  collect() {
    this.set(livePools().reduce((n, p) => n + p.waitingCount, 0));
  },
});

export const eventStreamsOpen = new Gauge({
  name: 'plant_store_event_streams_open',
  help: 'Live event streams (GET /plants/events) open in this process.',
  registers: [registry],
});

export const eventsSent = new Counter({
  name: 'plant_store_events_sent_total',
  help: 'Plant events written to live event streams.',
  registers: [registry],
});

export const eventStreamsClosedSlow = new Counter({
  name: 'plant_store_event_streams_closed_slow_total',
  help: 'Live event streams closed because their client read too slowly to keep up.',
  registers: [registry],
});

export const eventStreamsEndedWithCredentials = new Counter({
  name: 'plant_store_event_streams_credentials_ended_total',
  help: 'Live event streams ended because their credentials did: the token revoked or expired, or its read scope gone.',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const logLinesDropped = new Counter({
  name: 'plant_store_log_lines_dropped_total',
  help: 'Log lines dropped because stdout refused them (disk full, a closed pipe, an I/O error) or fell too far behind.',
  registers: [registry],
});

/** Reports a pool in the pool gauges until it has ended. */
export function trackPool(pool: PoolCounts): void {
  pools.add(pool);
}

for (const h of [httpRequestDuration, dbQueryDuration, dbCommitDuration, sqliteBatchSize, webhookDeliveryLag])
  registry.registerMetric(h.asMetric());

/** Whether this process records metrics; false until enableMetrics(). */
export let metricsOn = false;

/**
 * Starts recording: process metrics (memory, CPU, event-loop lag, GC) and the
 * per-request timings. In a cluster worker it also answers the primary's
 * requests for this registry, so one scrape of the primary sums all workers.
 */
export function enableMetrics(): void {
  if (metricsOn) return;
  metricsOn = true;
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters, which promtool's lint refuses; the same
  // counts remain, split by type, in nodejs_active_handles and the like.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
    registry.removeSingleMetric(name);
  if (cluster.isWorker) {
    // Constructing one installs the worker's listener for the primary's requests.
    new AggregatorRegistry();
    AggregatorRegistry.setRegistries([registry]);
  }
}

/** The Prometheus text exposition of this process. */
export function metricsText(): Promise<string> {
  return registry.metrics();
}

let aggregator: AggregatorRegistry<typeof registry.contentType> | undefined;

/** In a cluster primary: the sums over every worker's registry (the primary records nothing itself). */
export function clusterMetricsText(): Promise<string> {
  aggregator ??= new AggregatorRegistry();
  return aggregator.clusterMetrics();
}

export const METRICS_CONTENT_TYPE = registry.contentType;
