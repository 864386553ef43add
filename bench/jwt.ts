// The issuer of the jwt scenario: an RS256 key pair, its public key served
// as a JWKS on 127.0.0.1, and access tokens signed with it, so the service
// verifies real JWTs without an identity provider. It runs in the bench
// process: the service fetches the JWKS when it starts and then every 5
// minutes, so it takes no CPU from the servers while they are measured.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

export interface Issuer {
  /** The service flags that make it accept this issuer's tokens. */
  flags: string[];
  /** A token for this owner with both scopes, valid for an hour. */
  token(owner: string): Promise<string>;
  close(): Promise<void>;
}

export async function startIssuer(): Promise<Issuer> {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const kid = 'bench';
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] });
  const server = createServer((req, res) => {
    if (req.url === '/jwks.json') res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const audience = 'plant-store';
  return {
    flags: ['--jwks-url', `${base}/jwks.json`, '--jwt-issuer', base, '--jwt-audience', audience],
    token: (owner) =>
      new SignJWT({ scope: 'plants:read plants:write' })
        .setProtectedHeader({ alg: 'RS256', kid })
        .setSubject(owner)
        .setIssuer(base)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
