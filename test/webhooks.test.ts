// Webhook delivery from the transactional outbox (helpers/webhook-delivery-suite.ts),
// on SQLite; test/slow/webhooks-postgres.test.ts runs the same suite on PostgreSQL.
import { describeOnStore } from './helpers/stores.js';
import { webhookDeliverySuite } from './helpers/webhook-delivery-suite.js';

describeOnStore('sqlite', 'webhooks: delivery from the outbox', webhookDeliverySuite);
