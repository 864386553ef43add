import { ConfigError } from '../schema.js';
import type { Rule } from '../rule.js';

export const headersTimeoutRule: Rule = {
  about: 'the request head is due within the request time',
  check(config, { label }) {
    if (config.headersTimeoutMs > config.requestTimeoutMs) {
      throw new ConfigError(
        `${label('headersTimeoutMs')} (${config.headersTimeoutMs}) must not exceed ${label('requestTimeoutMs')} (${config.requestTimeoutMs})`,
      );
    }
  },
};

export const webhookLeaseRule: Rule = {
  about: 'a webhook attempt fits in the lease',
  check(config, { label }) {
    if (config.webhookLeaseMs !== undefined && config.webhookLeaseMs < config.webhookTimeoutMs + 1000) {
      throw new ConfigError(
        `${label('webhookLeaseMs')} (${config.webhookLeaseMs}) must be at least ${label('webhookTimeoutMs')} + 1000 ` +
          `(${config.webhookTimeoutMs + 1000}): an attempt must fit in it, with time to record its outcome`,
      );
    }
  },
};
