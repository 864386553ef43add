// The settings, in parts (src/config/): the table of every setting
// (settings.ts, one file per topic under settings/), the engine that reads
// flags, environment and a configuration file with their precedence
// (engine.ts), how a setting's text becomes its value from its schema
// (text.ts), and the rules across settings, one file per concern under
// rules/, listed in rules.ts. This module is what the rest of the service
// imports.
export { SETTING_GROUPS, type Rate, type SettingGroup, type SettingSpec } from './config/setting-spec.js';
export {
  ALL_SETTINGS,
  FILE_OF,
  SETTINGS,
  isSwitch,
  settingSpec,
  withValueFiles,
  type SettingName,
} from './config/settings.js';
export { ConfigError, camel, type Config, type Durability, type PgPooler } from './config/schema.js';
export { parseConfigFile, type ConfigFile } from './config/config-file.js';
export { loadConfig, readSettings, type SettingsRead } from './config/engine.js';
export type { Source } from './config/rule.js';
export { valueText } from './config/text.js';
export { OPERATOR_FILE_MAX_BYTES, readOperatorFile } from './config/operator-file.js';
export { editDistance, nearest } from './config/nearest.js';
export { checkCorsOrigin } from './config/rules/cors.js';
export { checkDb, isPostgresUrl } from './config/rules/db-url.js';
export { checkTrustProxy, trustedProxies } from './config/rules/trust-proxy.js';
export { jwtEnabled, jwtKeySource, unprotectedKeyUrl, type JwtKeySource } from './config/rules/jwt.js';
export { resourceAttributes, samplerRatio, tracesUrl, tracingEnabled } from './config/rules/tracing.js';
export { argvPasswordWarning } from './config/rules/secrets.js';
export {
  storeConfig,
  webhookKeyPath,
  type PostgresConfig,
  type SqliteConfig,
  type StoreConfig,
} from './config/store-config.js';
