import ipaddr from 'ipaddr.js';
import { ConfigError, type Config } from '../schema.js';
import { named, type Rule } from '../rule.js';

/**
 * Where the signing keys of bearer JWTs come from: a JWKS URL, or an OIDC
 * issuer's discovery document. The jwks_uri the document names is held to
 * unprotectedKeyUrl too, with allowHttp (--jwt-allow-http; absent: false).
 */
export type JwtKeySource = { jwksUrl: string } | { oidcIssuer: string; allowHttp?: boolean };

/** The configured source of JWT signing keys; undefined when bearer JWTs are off. */
export function jwtKeySource(
  config: Pick<Config, 'jwksUrl' | 'oidcIssuer' | 'jwtAllowHttp'>,
): JwtKeySource | undefined {
  if (config.jwksUrl !== undefined) return { jwksUrl: config.jwksUrl };
  if (config.oidcIssuer !== undefined) return { oidcIssuer: config.oidcIssuer, allowHttp: config.jwtAllowHttp };
  return undefined;
}

/** Whether bearer JWTs are accepted (a JWKS URL or an OIDC issuer is configured). */
export function jwtEnabled(config: Pick<Config, 'jwksUrl' | 'oidcIssuer'>): boolean {
  return config.jwksUrl !== undefined || config.oidcIssuer !== undefined;
}

/**
 * Why signing keys may not be fetched from `url`, or undefined when they may:
 * over https, over http to this machine, or over http anywhere with
 * --jwt-allow-http. The rule holds for the configured URL and for the
 * jwks_uri an issuer's discovery document names.
 */
export function unprotectedKeyUrl(url: URL, allowHttp: boolean): string | undefined {
  if (url.protocol !== 'http:' || allowHttp || isLoopback(url.hostname)) return undefined;
  return (
    `is http:// to ${url.hostname}, another machine: anyone on the way could swap the signing keys ` +
    `and mint tokens. Use https://, or set ${named('jwtAllowHttp')} if the network between is trusted`
  );
}

/** Whether a URL's host name is this machine: localhost, 127.0.0.0/8 or ::1. */
function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (/^localhost$|\.localhost$/i.test(host)) return true;
  return ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback';
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/** JWTs are accepted when a key source is set; then issuer and audience must be pinned too. */
export const jwtRule: Rule = {
  about: 'the key source, issuer and audience of bearer JWTs',
  check(config, { label }) {
    if (config.jwksUrl !== undefined && config.oidcIssuer !== undefined) {
      throw new ConfigError(
        `set either ${label('jwksUrl')} or ${label('oidcIssuer')}, not both: the OIDC issuer's discovery document names its JWKS URL`,
      );
    }
    for (const key of ['jwksUrl', 'oidcIssuer'] as const) {
      const value = config[key];
      if (value !== undefined && !isHttpUrl(value)) {
        throw new ConfigError(`${label(key)} must be an http:// or https:// URL, got ${JSON.stringify(value)}`);
      }
      const unprotected = value === undefined ? undefined : unprotectedKeyUrl(new URL(value), config.jwtAllowHttp);
      if (unprotected !== undefined) throw new ConfigError(`${label(key)} ${unprotected}`);
    }
    const keySource = jwtKeySource(config);
    if (keySource === undefined) {
      const stray = (['jwtIssuer', 'jwtAudience'] as const).find((key) => config[key] !== undefined);
      if (stray) {
        throw new ConfigError(
          `${label(stray)} is set but JWTs are off: also set ${named('jwksUrl')} or ${named('oidcIssuer')}`,
        );
      }
      return;
    }
    const missing = (['jwtIssuer', 'jwtAudience'] as const).filter((key) => config[key] === undefined);
    if (missing.length > 0) {
      const source = 'jwksUrl' in keySource ? 'jwksUrl' : 'oidcIssuer';
      throw new ConfigError(
        `${label(source)} turns on JWT access tokens, which also needs ${missing.map(named).join(' and ')}: ` +
          'tokens are accepted only from the issuer (iss) and for the audience (aud) you name',
      );
    }
  },
};
