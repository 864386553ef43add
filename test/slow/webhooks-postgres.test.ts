// Webhook delivery from the transactional outbox on PostgreSQL: the suite of
// test/webhooks.test.ts (which runs it on SQLite), with its real-time retries.
import { describeOnStore } from '../helpers/stores.js';
import { webhookDeliverySuite } from '../helpers/webhook-delivery-suite.js';

describeOnStore('postgres', 'webhooks: delivery from the outbox', webhookDeliverySuite);
