import type { Rule } from './rule.js';
import { corsOriginRule } from './rules/cors.js';
import { dbUrlRule } from './rules/db-url.js';
import { jwtRule } from './rules/jwt.js';
import { authFailLimitRule, pageSizeRule, redisNeedsLimitRule } from './rules/limits.js';
import { adminTokenRule, urlFilesRule } from './rules/secrets.js';
import { headersTimeoutRule, webhookLeaseRule } from './rules/timeouts.js';
import { tracingRule } from './rules/tracing.js';
import { trustProxyRule } from './rules/trust-proxy.js';

/**
 * The rules across settings, checked in this order once each value is valid
 * on its own; the first broken one stops the command. The URL files come
 * first, since --db and --redis may be read from them.
 */
export const RULES: readonly Rule[] = [
  urlFilesRule,
  adminTokenRule,
  dbUrlRule,
  corsOriginRule,
  trustProxyRule,
  authFailLimitRule,
  redisNeedsLimitRule,
  pageSizeRule,
  headersTimeoutRule,
  webhookLeaseRule,
  jwtRule,
  tracingRule,
];
