import type { Generated, Selectable } from 'kysely';
import type { WebhookEventType } from '../store.js';

// The SQLite tables once, as better-sqlite3 returns their columns: INTEGER
// columns that hold ids or log positions as bigint (read by statements in
// safeIntegers mode, as int64 needs), times as milliseconds since the epoch
// and counts as numbers, BLOBs as Buffers, TEXT as strings. The schema is
// the migrations' (migrations.sqlite.ts); this is its shape as read.

export interface PlantsTable {
  /** The position in the list (rowid). */
  seq: Generated<bigint>;
  owner: string;
  id: bigint;
  name: string;
  tag: string | null;
}

export interface TokensTable {
  id: string;
  hash: Buffer;
  owner: string;
  /** Space-separated. */
  scopes: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

export interface SecretsTable {
  name: string;
  value: Buffer;
}

export interface WebhookEndpointsTable {
  id: string;
  owner: string;
  url: string;
  /** Space-separated event types. */
  events: string;
  secret: Buffer;
  key_id: string;
  created_at: number;
  disabled_at: number | null;
  disabled_reason: string | null;
  pending: Generated<number>;
  retry_at: Generated<number>;
  failures: Generated<number>;
  claim: string | null;
  /** The endpoint gets the events after this one. */
  from_event: Generated<bigint>;
}

export interface WebhookDeliveriesTable {
  seq: Generated<bigint>;
  event_id: string;
  endpoint_id: string;
  /** plant_events.id */
  event: bigint;
  attempts: Generated<number>;
  next_attempt_at: number;
  claim: string | null;
  last_error: string | null;
  failed_at: number | null;
}

export interface PlantEventsTable {
  id: Generated<bigint>;
  owner: string;
  type: WebhookEventType;
  plant_id: bigint;
  name: string | null;
  tag: string | null;
  occurred_at: number;
}

/** One row (one = 1). */
export interface PlantEventsPrunedTable {
  one: 1;
  up_to: bigint;
}

export interface PlantEventsOwnerPrunedTable {
  owner: string;
  up_to: bigint;
}

/** One row (one = 1): the last event given to the endpoints. */
export interface WebhookFanOutTable {
  one: 1;
  up_to: bigint;
}

/** The SQLite store's tables, as Kysely's Database interface. */
export interface SqliteTables {
  plants: PlantsTable;
  tokens: TokensTable;
  secrets: SecretsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  plant_events: PlantEventsTable;
  plant_events_pruned: PlantEventsPrunedTable;
  plant_events_owner_pruned: PlantEventsOwnerPrunedTable;
  webhook_fan_out: WebhookFanOutTable;
}

/** A row of `T` as selected. */
export type SqliteRow<T extends keyof SqliteTables> = Selectable<SqliteTables[T]>;

/** A row as a statement in safeIntegers mode reads it: every INTEGER a bigint. */
export type SafeIntegers<Row> = {
  [K in keyof Row]: Row[K] extends number ? bigint : Row[K] extends number | null ? bigint | null : Row[K];
};
