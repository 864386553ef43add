import { ConfigError } from '../schema.js';
import type { Rule } from '../rule.js';

/** Failed authentications are limited along with --rate-limit, or on their own when asked for. */
export const authFailLimitRule: Rule = {
  about: 'the failed-authentication limit follows --rate-limit unless set',
  check(config, { source }) {
    if (config.rateLimit === null && source('auth-fail-limit') === 'default') config.authFailLimit = null;
  },
};

export const redisNeedsLimitRule: Rule = {
  about: 'Redis keeps the counters of a limit that is on',
  check(config, { label }) {
    if (config.redis !== null && config.rateLimit === null && config.authFailLimit === null) {
      throw new ConfigError(
        `${label('redis')} keeps rate-limit counters, but no limit is on, so it would do nothing: ` +
          'also set --rate-limit (or --auth-fail-limit), or leave Redis off',
      );
    }
  },
};

export const pageSizeRule: Rule = {
  about: 'the default page size is within the largest',
  check(config, { label }) {
    if (config.listDefaultLimit > config.listMaxLimit) {
      throw new ConfigError(
        `${label('listDefaultLimit')} (${config.listDefaultLimit}) must not exceed ${label('listMaxLimit')} (${config.listMaxLimit})`,
      );
    }
  },
};
