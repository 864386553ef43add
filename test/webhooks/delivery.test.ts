// Webhook delivery from the transactional outbox (helpers/webhook-delivery-suite.ts),
// on SQLite, with the retry schedule shortened tenfold; test/slow/webhooks-postgres.test.ts
// runs the same suite on PostgreSQL with the real schedule.
import { describeOnStore } from '../helpers/stores.js';
import { TENFOLD_RETRIES } from '../helpers/retry-timing.js';
import { webhookDeliverySuite } from '../helpers/webhook-delivery-suite.js';

describeOnStore('sqlite', 'webhooks: delivery from the outbox', (fx) => webhookDeliverySuite(fx, TENFOLD_RETRIES));
