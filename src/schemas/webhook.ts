import { Type, type Static } from '@sinclair/typebox';
import { Int64 } from './int64.js';
import { NewPlantComponent } from './plant.js';

// The bodies Plant Store POSTs to webhook endpoints (Standard Webhooks), and
// the OpenAPI `webhooks` entries that describe them.

const timestamp = Type.String({
  format: 'date-time',
  description: 'When the write happened (RFC 3339, UTC, milliseconds); the same on every attempt',
});

export const PlantCreatedEvent = Type.Object(
  {
    type: Type.Literal('plant.created'),
    timestamp,
    data: Type.Ref(NewPlantComponent, { description: 'The plant as stored, with its exact int64 id' }),
  },
  { $id: 'PlantCreatedEvent', title: 'PlantCreatedEvent', additionalProperties: false },
);
export type PlantCreatedEvent = Static<typeof PlantCreatedEvent>;

export const PlantDeletedEvent = Type.Object(
  {
    type: Type.Literal('plant.deleted'),
    timestamp,
    data: Type.Object(
      { id: Int64({ description: 'Identification number of the deleted plant' }) },
      { additionalProperties: false },
    ),
  },
  { $id: 'PlantDeletedEvent', title: 'PlantDeletedEvent', additionalProperties: false },
);
export type PlantDeletedEvent = Static<typeof PlantDeletedEvent>;

export const WEBHOOK_SCHEMAS = [PlantCreatedEvent, PlantDeletedEvent];

const headers = [
  {
    name: 'webhook-id',
    description: 'Unique per event and endpoint, the same on every attempt: use it to drop duplicates',
  },
  { name: 'webhook-timestamp', description: 'Unix time in seconds of this attempt' },
  {
    name: 'webhook-signature',
    description:
      'v1, followed by the base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" under the endpoint secret (the base64 after whsec_)',
  },
].map((h) => ({ ...h, in: 'header' as const, required: true, schema: { type: 'string' as const } }));

const responses = {
  '2XX': { description: 'Received: the event is not sent again' },
  '410': { description: 'Gone: the endpoint is disabled and its waiting events are dropped' },
  default: {
    description:
      'Any other answer (a redirect included, which is not followed), or none within the time limit: the event is sent again later, after Retry-After if the answer has one',
  },
};

function webhook(type: string, schema: string, summary: string, description: string) {
  return {
    post: {
      operationId: type.replace(/\.(\w)/, (_, c: string) => c.toUpperCase()),
      summary,
      description: `${description} Registered with \`plant-store webhook add\`; signed as Standard Webhooks; delivered at least once, in order per endpoint on a best-effort basis.`,
      tags: ['webhooks'],
      // No bearer token: the receiver checks webhook-signature instead.
      security: [],
      parameters: headers,
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } },
      },
      responses,
    },
  };
}

/** The OpenAPI 3.1 `webhooks` object. */
export const WEBHOOKS = {
  'plant.created': webhook(
    'plant.created',
    'PlantCreatedEvent',
    'A plant was created',
    "Sent for every create of the owner's plants answered 200 as created (not for a replay or a conflict).",
  ),
  'plant.deleted': webhook(
    'plant.deleted',
    'PlantDeletedEvent',
    'A plant was deleted',
    "Sent for every delete of the owner's plants answered 204.",
  ),
};
