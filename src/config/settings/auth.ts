import { Type } from '@sinclair/typebox';
import { type SettingSpec } from '../setting-spec.js';

/** Bearer JWTs, besides the opaque tokens. */
export const AUTH = {
  'jwks-url': {
    group: 'auth',
    env: 'PLANTS_JWKS_URL',
    default: '',
    arg: 'URL',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'accept JWT access tokens signed by the keys of this JWKS URL (needs --jwt-issuer and --jwt-audience)',
  },
  'oidc-issuer': {
    group: 'auth',
    env: 'PLANTS_OIDC_ISSUER',
    default: '',
    arg: 'URL',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'accept JWT access tokens of this OpenID Connect issuer; its JWKS URL is discovered (instead of --jwks-url)',
  },
  'jwt-issuer': {
    group: 'auth',
    env: 'PLANTS_JWT_ISSUER',
    default: '',
    arg: 'ISSUER',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'the iss claim a JWT must carry (required with JWTs)',
  },
  'jwt-audience': {
    group: 'auth',
    env: 'PLANTS_JWT_AUDIENCE',
    default: '',
    arg: 'AUDIENCE',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'the aud claim a JWT must carry (required with JWTs)',
  },
  'jwt-owner-claim': {
    group: 'auth',
    env: 'PLANTS_JWT_OWNER_CLAIM',
    default: 'sub',
    arg: 'CLAIM',
    schema: Type.String({ minLength: 1, maxLength: 256 }),
    help: 'the JWT claim that names the owner',
  },
  'jwt-allow-http': {
    group: 'auth',
    env: 'PLANTS_JWT_ALLOW_HTTP',
    default: 'false',
    arg: '',
    schema: Type.Boolean(),
    help:
      "accept an http:// --jwks-url, --oidc-issuer or jwks_uri of the issuer's discovery document on a host other than " +
      'loopback (keys travel unprotected)',
  },
} as const satisfies Record<string, SettingSpec>;
