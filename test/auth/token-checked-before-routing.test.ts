// The token is checked before anything else about a request: an unknown
// path, or a method its path does not allow, is 404 or 405 only to a caller
// with a valid token (any scope), 401 to anyone else, and neither reads the
// body. The open paths (health, the document, the docs page) stay open.
import assert from 'node:assert/strict';
import { METHODS } from 'node:http';
import { it } from '../helpers/requirements.js';
import { useApp } from '../helpers/app.js';
import { describeHttpLayer } from '../helpers/stores.js';

type Probe = { method: 'GET' | 'PUT' | 'POST' | 'DELETE' | 'PATCH'; url: string; status: number; message: string };

const PROBES: Probe[] = [
  {
    method: 'PUT',
    url: '/plants',
    status: 405,
    message: 'PUT is not allowed on /plants; allowed: GET, HEAD, POST, OPTIONS',
  },
  {
    method: 'PUT',
    url: '/plants/1',
    status: 405,
    message: 'PUT is not allowed on /plants/{id}; allowed: GET, HEAD, DELETE, OPTIONS',
  },
  {
    method: 'PATCH',
    url: '/plants/events',
    status: 405,
    message: 'PATCH is not allowed on /plants/events; allowed: GET, HEAD, OPTIONS',
  },
  { method: 'GET', url: '/nope', status: 404, message: 'no route for GET /nope' },
  { method: 'POST', url: '/nope?x=1', status: 404, message: 'no route for POST /nope' },
];

describeHttpLayer('authentication before routing', (fx) => {
  const h = useApp(fx);

  it('answers an unknown path or a wrong method 401 without a valid token, 404 or 405 with one', async () => {
    const reader = await h.token('first-owner', { scopes: ['plants:read'] });
    for (const { method, url, status, message } of PROBES) {
      // A body that is not JSON: were it read, the answer would be a 400.
      const body = { payload: '{', headers: { 'content-type': 'application/json' } };
      const none = await h.request({ method, url, ...body });
      assert.equal(none.statusCode, 401, `${method} ${url}`);
      assert.equal(JSON.parse(none.body).error, 401);
      const bad = await h.request({ method, url, ...body, token: 'plnt_' + 'x'.repeat(43) });
      assert.equal(bad.statusCode, 401, `${method} ${url} with an unknown token`);
      const known = await h.request({
        method,
        url,
        ...body,
        headers: { ...body.headers, authorization: `Bearer ${reader}` },
      });
      assert.deepEqual([known.statusCode, JSON.parse(known.body)], [status, { error: status, message }]);
    }
  });

  it('answers every other method Node accepts (TRACE, PROPFIND, …) 405 on a known path, after the token check', async () => {
    const reader = await h.token('other-methods', { scopes: ['plants:read'] });
    // CONNECT is answered on the socket, before routing (test/hardening/request-framing.test.ts).
    const others = METHODS.filter((m) => !['CONNECT', 'OPTIONS', 'GET', 'HEAD', 'POST'].includes(m));
    assert.ok(others.includes('TRACE') && others.includes('PROPFIND'));
    for (const method of others as 'GET'[]) {
      assert.equal((await h.request({ method, url: '/plants' })).statusCode, 401, method);
      const known = await h.request({ method, url: '/plants', token: reader });
      assert.deepEqual(
        [known.statusCode, JSON.parse(known.body)],
        [405, { error: 405, message: `${method} is not allowed on /plants; allowed: GET, HEAD, POST, OPTIONS` }],
      );
      assert.equal(known.headers.allow, 'GET, HEAD, POST, OPTIONS', method);
      const open = await h.request({ method, url: '/healthz' });
      assert.equal(open.statusCode, 405, `${method} /healthz`);
      assert.equal(open.headers.allow, 'GET, HEAD, OPTIONS', `${method} /healthz`);
      const unknown = await h.request({ method, url: '/nowhere', token: reader });
      assert.equal(unknown.statusCode, 404, `${method} /nowhere`);
    }
  });

  it('keeps the open paths open: their other methods are 405 without a token', async () => {
    for (const url of ['/healthz', '/readyz', '/openapi.json']) {
      const res = await h.request({ method: 'POST', url });
      assert.equal(res.statusCode, 405, url);
      assert.equal(JSON.parse(res.body).error, 405);
    }
    assert.equal((await h.request({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });

  it('answers OPTIONS with Allow without a token on a known path, as a preflight would be; 401 or 404 elsewhere', async () => {
    const res = await h.request({ method: 'OPTIONS', url: '/plants' });
    assert.equal(res.statusCode, 204);
    assert.equal(res.headers.allow, 'GET, HEAD, POST, OPTIONS');
    // On a path no route serves, OPTIONS is like any other method.
    assert.equal((await h.request({ method: 'OPTIONS', url: '/nowhere' })).statusCode, 401);
    const token = await h.token('options-owner');
    assert.equal((await h.request({ method: 'OPTIONS', url: '/nowhere', token })).statusCode, 404);
  });
});
