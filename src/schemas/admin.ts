import { Type, type Static } from '@sinclair/typebox';

// The admin API's bodies (/admin/tokens and /admin/webhooks on the admin
// listener). The scope and event names are declared here once, and the
// store takes them (SCOPES, WEBHOOK_EVENT_TYPES); owners are checked by the
// same rule as everywhere (manage/tokens.ts).

export const ADMIN_SCOPES = ['plants:read', 'plants:write'] as const;
export const ADMIN_EVENT_TYPES = ['plant.created', 'plant.deleted'] as const;

const owner = Type.String({
  minLength: 1,
  maxLength: 128,
  description: 'The owner whose plants the token or endpoint concerns',
});
const id = (prefix: string) => Type.String({ minLength: 1, maxLength: 64, description: `Its id (${prefix}…)` });
const when = (description: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description });

export const NewAdminToken = Type.Object(
  {
    owner,
    scopes: Type.Optional(
      Type.Array(Type.Union(ADMIN_SCOPES.map((s) => Type.Literal(s))), {
        minItems: 1,
        uniqueItems: true,
        description: 'Default: both',
      }),
    ),
    expiresIn: Type.Optional(
      Type.String({ maxLength: 32, description: 'Lifetime such as 30d, 12h, 90m; default: never expires' }),
    ),
  },
  { additionalProperties: false },
);
export type NewAdminToken = Static<typeof NewAdminToken>;

const tokenFields = {
  id: id('tok_'),
  owner,
  scopes: Type.Array(Type.String()),
  expiresAt: when('When it stops working; null: never'),
};

export const CreatedAdminToken = Type.Object(
  { ...tokenFields, token: Type.String({ description: 'The bearer token, shown this once; only its hash is stored' }) },
  { additionalProperties: false },
);

export const AdminToken = Type.Object(
  {
    ...tokenFields,
    createdAt: Type.String({ format: 'date-time' }),
    revokedAt: when('When it was revoked; null: active'),
  },
  { additionalProperties: false },
);
export const AdminTokenList = Type.Array(AdminToken);

export const OwnerQuery = Type.Object({ owner: Type.Optional(owner) }, { additionalProperties: false });

export const IdParams = Type.Object(
  { id: Type.String({ minLength: 1, maxLength: 64 }) },
  { additionalProperties: false },
);

export const NewAdminWebhook = Type.Object(
  {
    owner,
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'http:// or https:// URL that receives the events',
    }),
    events: Type.Optional(
      Type.Array(Type.Union(ADMIN_EVENT_TYPES.map((t) => Type.Literal(t))), {
        minItems: 1,
        uniqueItems: true,
        description: 'Default: every event type',
      }),
    ),
  },
  { additionalProperties: false },
);
export type NewAdminWebhook = Static<typeof NewAdminWebhook>;

const webhookFields = { id: id('wh_'), owner, url: Type.String(), events: Type.Array(Type.String()) };

export const CreatedAdminWebhook = Type.Object(
  {
    ...webhookFields,
    secret: Type.String({ description: 'The signing secret (whsec_…), shown this once' }),
    warnings: Type.Array(Type.String(), { description: 'A private address, plain http' }),
  },
  { additionalProperties: false },
);

export const AdminWebhook = Type.Object(
  {
    ...webhookFields,
    pending: Type.Integer({ minimum: 0, description: 'Events waiting for delivery' }),
    createdAt: Type.String({ format: 'date-time' }),
    disabledAt: when('When it was disabled; null: active'),
    disabledReason: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);
export const AdminWebhookList = Type.Array(AdminWebhook);

export const AdminWebhookTest = Type.Object(
  {
    messageId: Type.String({ description: 'The webhook-id the signed webhook.test event carried' }),
    delivered: Type.Boolean({ description: 'The receiver answered 2xx' }),
    status: Type.Union([Type.Integer(), Type.Null()], { description: "The receiver's HTTP status; null: no answer" }),
    error: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const AdminWebhookRedelivery = Type.Object(
  {
    id: Type.String({ description: 'The endpoint' }),
    redelivered: Type.Integer({
      minimum: 0,
      description: 'Failed deliveries queued again: 0 when none had failed, or the endpoint is disabled',
    }),
  },
  { additionalProperties: false },
);
