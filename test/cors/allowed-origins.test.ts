// --cors-origin: browser pages on allowed origins can call the API. Preflights
// pass without a token; the requests that follow still need one.
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import { useApp } from '../helpers/app.js';
import { describeHttpLayer } from '../helpers/stores.js';

const APP = 'https://app.example.com';
const preflight = (origin: string, method = 'POST') => ({
  origin,
  'access-control-request-method': method,
  'access-control-request-headers': 'authorization, content-type',
});

describeHttpLayer('CORS with --cors-origin', (fx) => {
  const h = useApp(fx, { corsOrigin: `${APP}, http://localhost:5173` });

  it('answers a preflight from an allowed origin without a token', async () => {
    for (const url of ['/plants', '/plants/1']) {
      const res = await h.request({
        method: 'OPTIONS',
        url,
        headers: preflight(APP, url === '/plants' ? 'POST' : 'DELETE'),
      });
      assert.equal(res.statusCode, 204, res.body);
      assert.equal(res.headers['access-control-allow-origin'], APP);
      assert.match(String(res.headers['access-control-allow-methods']), /\bPOST\b.*\bDELETE\b|\bDELETE\b.*\bPOST\b/);
      assert.match(String(res.headers['access-control-allow-headers']), /Authorization/i);
      assert.match(String(res.headers['access-control-allow-headers']), /Content-Type/i);
      assert.ok(Number(res.headers['access-control-max-age']) > 0);
      assert.match(String(res.headers.vary), /Origin/);
      assert.equal(res.body, '');
    }
  });

  it('a real cross-origin request still needs its token, and every answer can be read by the page', async () => {
    const anonymous = await h.request({ method: 'GET', url: '/plants', headers: { origin: APP } });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.headers['access-control-allow-origin'], APP, 'the page can read the 401');
    assert.equal(JSON.parse(anonymous.body).error, 401);

    const token = await h.token('corsy');
    const created = await h.request({
      method: 'POST',
      url: '/plants',
      token,
      json: { id: 1, name: 'Fern' },
      headers: { origin: 'http://localhost:5173' },
    });
    assert.equal(created.statusCode, 200, created.body);
    assert.equal(created.headers['access-control-allow-origin'], 'http://localhost:5173');
    const listed = await h.request({ method: 'GET', url: '/plants?limit=1', token, headers: { origin: APP } });
    assert.equal(listed.statusCode, 200);
    assert.equal(listed.headers['access-control-allow-origin'], APP);
    const exposed = String(listed.headers['access-control-expose-headers']);
    for (const header of ['Link', 'ETag', 'X-Request-Id', 'WWW-Authenticate'])
      assert.match(exposed, new RegExp(header));
    assert.equal(listed.headers['access-control-allow-credentials'], undefined, 'no cookies: bearer tokens only');
  });

  it('an origin not on the list gets no CORS headers, so the browser keeps the answer from the page', async () => {
    const res = await h.request({ method: 'OPTIONS', url: '/plants', headers: preflight('https://evil.example') });
    assert.equal(res.headers['access-control-allow-origin'], undefined);
    const token = await h.token('corsy2');
    const get = await h.request({
      method: 'GET',
      url: '/plants',
      token,
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(get.headers['access-control-allow-origin'], undefined);
  });

  it('an OPTIONS that is not a preflight keeps its usual answer', async () => {
    const plain = await h.request({ method: 'OPTIONS', url: '/plants' });
    assert.equal(plain.statusCode, 204);
    assert.match(String(plain.headers.allow), /GET/);
    const token = await h.token('cors-owner');
    const unknown = await h.request({ method: 'OPTIONS', url: '/nowhere', headers: { origin: APP }, token });
    assert.equal(unknown.statusCode, 404);
    assert.equal(JSON.parse(unknown.body).error, 404);
    const get = await h.request({ method: 'GET', url: '/nowhere', token });
    assert.equal(get.statusCode, 404, 'the preflight route does not answer other methods');
  });
});

describeHttpLayer('CORS with --cors-origin and rate limits', (fx) => {
  const h = useApp(fx, { corsOrigin: APP, rateLimit: { max: 1, windowMs: 60_000 } });

  it("exposes a 429's Retry-After and RateLimit headers to the page", async () => {
    const token = await h.token('cors-limited');
    const get = () => h.request({ method: 'GET', url: '/plants', token, headers: { origin: APP } });
    assert.equal((await get()).statusCode, 200);
    const over = await get();
    assert.equal(over.statusCode, 429, over.body);
    assert.equal(over.headers['access-control-allow-origin'], APP);
    const exposed = String(over.headers['access-control-expose-headers'])
      .split(/,\s*/)
      .map((name) => name.toLowerCase());
    for (const header of ['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) {
      assert.ok(over.headers[header] !== undefined, `the 429 carries ${header}`);
      assert.ok(exposed.includes(header), `${header} is exposed: ${exposed.join(', ')}`);
    }
  });
});

describeHttpLayer('CORS with --cors-origin *', (fx) => {
  const h = useApp(fx, { corsOrigin: '*' });
  it('allows any origin, still with tokens', async () => {
    const pre = await h.request({ method: 'OPTIONS', url: '/plants', headers: preflight('https://any.example') });
    assert.equal(pre.statusCode, 204);
    assert.equal(pre.headers['access-control-allow-origin'], '*');
    const anonymous = await h.request({ method: 'GET', url: '/plants', headers: { origin: 'https://any.example' } });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.headers['access-control-allow-origin'], '*');
  });
});

describe('CORS off (the default)', () => {
  describeHttpLayer('no CORS headers', (fx) => {
    const h = useApp(fx);
    it('a preflight gets the plain OPTIONS answer and no Access-Control headers', async () => {
      const res = await h.request({ method: 'OPTIONS', url: '/plants', headers: preflight(APP) });
      assert.equal(res.statusCode, 204);
      assert.match(String(res.headers.allow), /POST/);
      assert.deepEqual(
        Object.keys(res.headers).filter((k) => k.startsWith('access-control-')),
        [],
      );
      const get = await h.request({ method: 'GET', url: '/plants', headers: { origin: APP } });
      assert.equal(get.statusCode, 401);
      assert.equal(get.headers['access-control-allow-origin'], undefined);
    });
  });
});
