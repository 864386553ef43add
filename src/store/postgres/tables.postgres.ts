import type { Generated, Selectable } from 'kysely';
import type { WebhookEventType } from '../store.js';

// The PostgreSQL tables once, as pg returns their columns on the store's
// pools: int8 as bigint (the pools' type parser, db-connect.postgres.ts),
// int4 as number, timestamptz as Date, bytea as Buffer, text as string. The
// schema is the migrations' (migrations.postgres.ts); this is its shape as read.

export interface PlantsTable {
  owner: string;
  id: bigint;
  name: string;
  tag: string | null;
  /** The position in the list, with id. */
  created_at: Generated<Date>;
}

export interface TokensTable {
  id: string;
  hash: Buffer;
  owner: string;
  /** Space-separated. */
  scopes: string;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
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
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
  pending: Generated<number>;
  retry_at: Generated<Date>;
  failures: Generated<number>;
  claim: string | null;
  /** The endpoint gets the events after this one. */
  from_event: Generated<bigint>;
}

export interface WebhookDeliveriesTable {
  event_id: string;
  endpoint_id: string;
  /** plant_events.id */
  event: bigint;
  attempts: Generated<number>;
  next_attempt_at: Generated<Date>;
  claim: string | null;
  last_error: string | null;
  failed_at: Date | null;
}

export interface PlantEventsTable {
  /** See ORDINAL_BITS (event-log.postgres.ts). */
  id: bigint;
  owner: string;
  type: WebhookEventType;
  plant_id: bigint;
  name: string | null;
  tag: string | null;
  occurred_at: Generated<Date>;
}

/** One row (one = true). */
export interface PlantEventsPrunedTable {
  one: Generated<boolean>;
  up_to: bigint;
}

export interface PlantEventsOwnerPrunedTable {
  owner: string;
  up_to: bigint;
}

/** One row (one = true): the last event given to the endpoints. */
export interface WebhookFanOutTable {
  one: Generated<boolean>;
  up_to: bigint;
}

/** The PostgreSQL store's tables, as Kysely's Database interface. */
export interface PostgresTables {
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
export type PostgresRow<T extends keyof PostgresTables> = Selectable<PostgresTables[T]>;
