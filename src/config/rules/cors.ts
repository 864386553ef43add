import { ConfigError } from '../schema.js';
import type { Rule } from '../rule.js';

/**
 * Why --cors-origin cannot be used, or undefined. Each origin must be written
 * exactly as browsers send it in Origin (scheme, lower-case host, port only
 * when not the default, no path, no trailing slash): the plugin compares
 * strings, so any other spelling would never match. Wildcards are refused
 * except "*" alone.
 */
export function checkCorsOrigin(value: string): string | undefined {
  if (value === 'off' || value === '*') return undefined;
  const expected = 'must be off, * or origins such as https://app.example.com separated by commas';
  for (const raw of value.split(',')) {
    const origin = raw.trim();
    const shown = JSON.stringify(origin.slice(0, 200));
    if (origin.includes('*')) return `${expected}; a wildcard is allowed only as * alone, got ${shown}`;
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      return `${expected}, got ${shown}`;
    if (url.username || url.password) return `${expected}, got one with a user or password (${url.origin})`;
    if (url.origin !== origin)
      return `${expected}, got ${shown}: an origin is scheme, host and port as browsers send it, no path, no trailing slash (write it as ${url.origin})`;
  }
  return undefined;
}

export const corsOriginRule: Rule = {
  about: 'the origins of --cors-origin',
  check(config, { label }) {
    const problem = checkCorsOrigin(config.corsOrigin);
    if (problem) throw new ConfigError(`${label('corsOrigin')} ${problem}`);
  },
};
