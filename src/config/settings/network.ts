import { Type } from '@sinclair/typebox';
import { MAX_TIMER_MS, type SettingSpec } from '../setting-spec.js';

/** Where and how the service listens. */
export const NETWORK = {
  host: {
    group: 'network',
    env: 'PLANTS_HOST',
    default: '127.0.0.1',
    arg: 'ADDRESS',
    schema: Type.String({ minLength: 1 }),
    help: 'address to listen on (0.0.0.0: every interface)',
  },
  port: {
    group: 'network',
    env: 'PLANTS_PORT',
    fallbackEnv: 'PORT',
    default: '8080',
    arg: 'PORT',
    schema: Type.Integer({ minimum: 0, maximum: 65535 }),
    help: 'TCP port to listen on (0 picks a free one)',
  },
  workers: {
    group: 'network',
    env: 'PLANTS_WORKERS',
    default: '1',
    text: 'auto-cpus',
    arg: 'N|auto',
    schema: Type.Integer({ minimum: 1, maximum: 256 }),
    help: 'worker processes sharing the port; auto: one per CPU',
  },
  'headers-timeout-ms': {
    group: 'network',
    env: 'PLANTS_HEADERS_TIMEOUT_MS',
    default: '10000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS }),
    help: 'a new connection must send its whole request head within this time, or it is closed',
  },
  'request-timeout-ms': {
    group: 'network',
    env: 'PLANTS_REQUEST_TIMEOUT_MS',
    default: '30000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 100, maximum: MAX_TIMER_MS }),
    help: 'a request not received, handled and answered within this time is cut',
  },
  'keep-alive-timeout-ms': {
    group: 'network',
    env: 'PLANTS_KEEP_ALIVE_TIMEOUT_MS',
    default: '5000',
    arg: 'MS',
    schema: Type.Integer({ minimum: 1, maximum: MAX_TIMER_MS }),
    help: 'how long an idle keep-alive connection stays open after its last answer',
  },
  'cors-origin': {
    group: 'network',
    env: 'PLANTS_CORS_ORIGIN',
    default: 'off',
    list: true,
    arg: 'ORIGIN[,ORIGIN...]',
    /** "off", "*", or origins separated by commas (checked by loadConfig). */
    schema: Type.String({ minLength: 1 }),
    help: 'origins whose browser pages may call the API, such as https://app.example.com; *: any; off: none',
  },
  'trust-proxy': {
    group: 'network',
    env: 'PLANTS_TRUST_PROXY',
    default: 'off',
    list: true,
    arg: 'ADDRESS|CIDR[,...]',
    /** "off", or addresses and CIDR ranges separated by commas (checked by loadConfig). */
    schema: Type.String({ minLength: 1 }),
    help:
      'proxies (IPv4 or IPv6 addresses and CIDR ranges, such as 10.0.0.0/8) whose Forwarded and X-Forwarded-For ' +
      'headers are believed: the client is the nearest hop not in the list; off: none, the headers are ignored',
  },
} as const satisfies Record<string, SettingSpec>;
