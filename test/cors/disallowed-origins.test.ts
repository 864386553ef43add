// A browser page on an origin --cors-origin does not list gets no CORS header
// at all, preflight or not: the answer a server without CORS would give.
import assert from 'node:assert/strict';
import { it } from '../helpers/requirements.js';
import { useApp } from '../helpers/app.js';
import { describeHttpLayer } from '../helpers/stores.js';

const corsHeaders = (headers: Record<string, unknown>) =>
  Object.keys(headers).filter((k) => k.startsWith('access-control-'));

describeHttpLayer('CORS for an origin not allowed', (fx) => {
  const h = useApp(fx, { corsOrigin: 'https://app.example.com' });

  it('a preflight gets the plain OPTIONS answer and no Access-Control header', { timeout: 10_000 }, async () => {
    const res = await h.request({
      method: 'OPTIONS',
      url: '/plants',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    assert.equal(res.statusCode, 204);
    assert.match(String(res.headers.allow), /POST/);
    assert.deepEqual(corsHeaders(res.headers), []);
  });

  it('a request gets its answer and no Access-Control header', { timeout: 10_000 }, async () => {
    const res = await h.request({ method: 'GET', url: '/plants', headers: { origin: 'https://evil.example' } });
    assert.equal(res.statusCode, 401);
    assert.deepEqual(corsHeaders(res.headers), []);
  });

  it('the allowed origin still gets its headers', { timeout: 10_000 }, async () => {
    const res = await h.request({
      method: 'OPTIONS',
      url: '/plants',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' },
    });
    assert.equal(res.statusCode, 204);
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.ok(res.headers['access-control-allow-methods']);
  });
});
