// A local OpenID Connect issuer for the JWT suites: an HTTP server on an
// ephemeral port serving a discovery document and a JWKS built from jose key
// pairs, counting its fetches, and able to fail (500) or drop connections
// (unreachable) on demand.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export const AUDIENCE = 'plant-store-tests';

export type Alg = 'RS256' | 'PS256' | 'ES256' | 'EdDSA' | 'RS384';

interface Key {
  kid: string;
  alg: Alg;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

export type IssuerMode = 'ok' | 'error' | 'unreachable';

export class TestIssuer {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #keys = new Map<string, Key>();
  /** kids in the published JWKS, in order. */
  published: string[] = [];
  mode: IssuerMode = 'ok';
  /** GET /jwks requests answered (or dropped) so far. */
  jwksFetches = 0;
  discoveryFetches = 0;
  /** What the discovery document says the issuer is (defaults to the real URL). */
  discoveryIssuer: string | undefined;
  url = '';

  private constructor() {
    this.#server = createServer((req, res) => {
      if (req.url === '/jwks') this.jwksFetches++;
      else if (req.url === '/.well-known/openid-configuration') this.discoveryFetches++;
      if (this.mode === 'unreachable') {
        req.socket.destroy();
        return;
      }
      if (this.mode === 'error') {
        res.writeHead(500).end('down for maintenance');
        return;
      }
      if (req.url === '/jwks') {
        const keys = this.published.map((kid) => this.#keys.get(kid)!.jwk);
        res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(JSON.stringify({ keys }));
      } else if (req.url === '/.well-known/openid-configuration') {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ issuer: this.discoveryIssuer ?? this.url, jwks_uri: this.jwksUrl }));
      } else {
        res.writeHead(404).end();
      }
    });
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
  }

  static async start(): Promise<TestIssuer> {
    const issuer = new TestIssuer();
    await new Promise<void>((resolve) => issuer.#server.listen(0, '127.0.0.1', resolve));
    issuer.url = `http://127.0.0.1:${(issuer.#server.address() as AddressInfo).port}`;
    return issuer;
  }

  get jwksUrl(): string {
    return `${this.url}/jwks`;
  }

  /** A new key pair; published in the JWKS unless told otherwise. `jwkAlg: false` leaves alg out of the JWK. */
  async addKey(alg: Alg, opts: { publish?: boolean; kid?: string; jwkAlg?: boolean } = {}): Promise<string> {
    const kid = opts.kid ?? `${alg.toLowerCase()}-${randomBytes(4).toString('hex')}`;
    const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid, use: 'sig', ...(opts.jwkAlg === false ? {} : { alg }) };
    this.#keys.set(kid, { kid, alg, privateKey, publicKey, jwk });
    if (opts.publish ?? true) this.published.push(kid);
    return kid;
  }

  unpublish(kid: string): void {
    this.published = this.published.filter((k) => k !== kid);
  }

  key(kid: string): Key {
    const key = this.#keys.get(kid);
    if (!key) throw new Error(`no key ${kid}`);
    return key;
  }

  /** Valid claims for `sub` (iss, aud, iat, exp in 5 minutes, both scopes), with `claims` on top; undefined removes a claim. */
  claims(sub: string, claims: Record<string, unknown> = {}): JWTPayload {
    const now = Math.floor(Date.now() / 1000);
    const all: Record<string, unknown> = {
      iss: this.url,
      aud: AUDIENCE,
      sub,
      iat: now,
      exp: now + 300,
      scope: 'plants:read plants:write',
      jti: randomBytes(8).toString('hex'),
      ...claims,
    };
    for (const [k, v] of Object.entries(all)) if (v === undefined) delete all[k];
    return all as JWTPayload;
  }

  /** A JWT signed with key `kid` (with its algorithm unless `alg` is given). */
  async sign(
    kid: string,
    sub: string,
    claims: Record<string, unknown> = {},
    header: { alg?: string; kid?: string } = {},
  ): Promise<string> {
    const key = this.key(kid);
    return new SignJWT(this.claims(sub, claims))
      .setProtectedHeader({ alg: header.alg ?? key.alg, kid: header.kid ?? kid, typ: 'JWT' })
      .sign(key.privateKey);
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** The parts of a compact JWT, base64url-decoded where JSON. */
export function b64url(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
}
