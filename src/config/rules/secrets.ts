import { readOperatorFile } from '../operator-file.js';
import { ConfigError, camel, type Config } from '../schema.js';
import type { Rule } from '../rule.js';
import { SETTINGS } from '../settings.js';
import { isRedisUrl } from '../text.js';

/** Whether a URL carries a password ("scheme://user:password@" or "scheme://:password@"). */
const hasPassword = (url: string): boolean => /^[a-z][a-z0-9+.-]*:\/\/[^/@]*:[^/@]*@/i.test(url);

/** A file holding a secret (a URL with its password, a token), trimmed; refused when unreadable or empty. */
function readSecretFile(label: string, path: string): string {
  const text = readOperatorFile(path, label).trim();
  if (text === '') throw new ConfigError(`${label}: ${path} is empty`);
  return text;
}

/** The shortest admin API secret taken: 32 bytes, as many as a token's own random part. */
export const ADMIN_TOKEN_MIN_BYTES = 32;

/** --admin-token-file: the admin API's secret, which only the admin listener can take. */
export const adminTokenRule: Rule = {
  about: 'the admin API secret read from --admin-token-file, which needs --admin-port',
  check(config, { label }) {
    if (config.adminTokenFile === undefined) return;
    if (config.adminPort === null)
      throw new ConfigError(
        `${label('adminTokenFile')} needs ${label('adminPort')}: the admin API is served there only`,
      );
    const secret = readSecretFile(label('adminTokenFile'), config.adminTokenFile);
    const bytes = Buffer.byteLength(secret);
    if (bytes < ADMIN_TOKEN_MIN_BYTES)
      throw new ConfigError(
        `${label('adminTokenFile')}: ${config.adminTokenFile} must hold a secret of at least ${ADMIN_TOKEN_MIN_BYTES} bytes, ` +
          `not ${bytes} (make one with: openssl rand -base64 32)`,
      );
    config.adminToken = secret;
  },
};

/**
 * --db-file and --redis-url-file: the URL is read from a file (trimmed), so
 * that its password is not on the command line, where every user of the
 * machine can read it (ps). Which flags still carry one there (those two, and
 * the OTLP endpoints, whose user and password the exporter sends as Basic
 * credentials) is noted for the start-up warning.
 */
export const urlFilesRule: Rule = {
  about: 'URLs read from --db-file and --redis-url-file, and passwords on the command line',
  check(config, { source, label }) {
    for (const [fileKey, key] of [
      ['dbFile', 'db'],
      ['redisUrlFile', 'redis'],
    ] as const) {
      const path = config[fileKey];
      if (path === undefined) continue;
      if (source(key) !== 'default') throw new ConfigError(`set either ${label(key)} or ${label(fileKey)}, not both`);
      const text = readSecretFile(label(fileKey), path);
      if (key === 'redis' && !isRedisUrl(text))
        throw new ConfigError(`${label(fileKey)}: ${path} must hold a redis:// or rediss:// URL`);
      config[key] = text;
    }
    const inArgv = URL_FLAGS.filter((name) => {
      const value = config[camel(name) as keyof Config];
      return source(name) === 'flag' && typeof value === 'string' && hasPassword(value);
    });
    if (inArgv.length > 0) config.passwordsInArgv = inArgv.map((name) => `--${name}`);
  },
};

// The settings holding a URL that may carry a password.
const URL_FLAGS = ['db', 'redis', 'otel-exporter-otlp-endpoint', 'otel-exporter-otlp-traces-endpoint'] as const;

// Where the URL of each flag in passwordsInArgv is better given.
const PASSWORD_ELSEWHERE: Record<string, string> = {
  '--db': `${SETTINGS.db.env} or ${SETTINGS.db.fallbackEnv}, or in a file named by --db-file (PGPASSWORD and PGPASSFILE work too)`,
  '--redis': `${SETTINGS.redis.env}, or in a file named by --redis-url-file`,
  '--otel-exporter-otlp-endpoint': `${SETTINGS['otel-exporter-otlp-endpoint'].env}, or the credentials in OTEL_EXPORTER_OTLP_HEADERS (Authorization=Basic …)`,
  '--otel-exporter-otlp-traces-endpoint': `${SETTINGS['otel-exporter-otlp-traces-endpoint'].env}, or the credentials in OTEL_EXPORTER_OTLP_TRACES_HEADERS (Authorization=Basic …)`,
};

/** The start-up warning for config.passwordsInArgv: each flag that carries a password, and where to give its URL instead. */
export function argvPasswordWarning(flags: readonly string[]): string {
  const advice =
    flags.length === 1
      ? `give it in ${PASSWORD_ELSEWHERE[flags[0]!]}`
      : `give the URL of ${flags.map((flag) => `${flag} in ${PASSWORD_ELSEWHERE[flag]}`).join(', and that of ')}`;
  return (
    `${flags.join(' and ')} ${flags.length > 1 ? 'carry' : 'carries'} a password on the command line, ` +
    `where every user of this machine can read it (ps); ${advice}`
  );
}
