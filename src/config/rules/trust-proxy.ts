import ipaddr from 'ipaddr.js';
import { ConfigError } from '../schema.js';
import type { Rule } from '../rule.js';

/** The proxies --trust-proxy names: none for "off". */
export function trustedProxies(value: string): string[] {
  return value === 'off' ? [] : value.split(',').map((entry) => entry.trim());
}

/** Why --trust-proxy cannot be used, or undefined: each entry must be an IP address or a CIDR range. */
export function checkTrustProxy(value: string): string | undefined {
  for (const entry of trustedProxies(value)) {
    // Written out in full: ipaddr.js would also take 10.1 for 10.0.0.1.
    const [address = '', prefix] = entry.split('/');
    const full = ipaddr.IPv4.isValidFourPartDecimal(address) || ipaddr.IPv6.isValid(address);
    if (!full || (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && ipaddr.isValidCIDR(entry)))) {
      return (
        `has ${JSON.stringify(entry.slice(0, 100))}, which is not an IP address or a CIDR range: give off, or ` +
        'addresses and ranges separated by commas, such as 10.0.0.5,192.168.0.0/16,2001:db8::/32'
      );
    }
  }
  return undefined;
}

export const trustProxyRule: Rule = {
  about: 'the proxies of --trust-proxy',
  check(config, { label }) {
    const problem = checkTrustProxy(config.trustProxy);
    if (problem) throw new ConfigError(`${label('trustProxy')} ${problem}`);
  },
};
