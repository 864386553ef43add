// Webhook delivery from the transactional outbox on PostgreSQL: the suite of
// test/webhooks/delivery.test.ts (which runs it on SQLite with a shortened schedule),
// with the real retry schedule, so its retries wait seconds.
import { describeOnStore } from '../helpers/stores.js';
import { REAL_RETRIES } from '../helpers/retry-timing.js';
import { webhookDeliverySuite } from '../helpers/webhook-delivery-suite.js';

describeOnStore('postgres', 'webhooks: delivery from the outbox', (fx) => webhookDeliverySuite(fx, REAL_RETRIES));
