// The issuer of the jwt scenario: an RS256 key pair, its public key served as a JWKS on 127.0.0.1, and access tokens
// signed with it, so the service verifies real JWTs without an identity provider. It runs in the bench process: the
// service fetches the JWKS when it starts and then every 5 minutes, so it takes no CPU from the servers while they are
// measured.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';

/** `flags` make the service accept its tokens; `token(owner)` is one for that owner, both scopes, valid for an hour. */
export async function startIssuer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const kid = 'bench';
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] });
  const server = createServer((req, res) => {
    if (req.url === '/jwks.json') res.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const [iss, aud] = [`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'plant-store'];
  return {
    flags: ['--jwks-url', `${iss}/jwks.json`, '--jwt-issuer', iss, '--jwt-audience', aud],
    token: (sub: string) =>
      new SignJWT({ scope: 'plants:read plants:write', sub, iss, aud })
        .setProtectedHeader({ alg: 'RS256', kid })
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(privateKey),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
