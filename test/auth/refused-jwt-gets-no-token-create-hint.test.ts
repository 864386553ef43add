// A refused JWT comes from an identity provider: its 401 does not send the
// caller to `plant-store token create`. A refused opaque token still does.
import assert from 'node:assert/strict';
import { after, before, it } from '../helpers/requirements.js';
import type { Config } from '../../src/config.js';
import { useApp } from '../helpers/app.js';
import { AUDIENCE, TestIssuer } from '../helpers/jwt-issuer.js';
import { eventually } from '../helpers/eventually.js';
import { describeOnStore } from '../helpers/stores.js';

const HINT = /plant-store token create/;

describeOnStore('sqlite', 'the token hint on a 401', (fx) => {
  let issuer: TestIssuer;
  let kid = '';
  const overrides: Partial<Config> = {};
  before(async () => {
    issuer = await TestIssuer.start();
    kid = await issuer.addKey('ES256');
    Object.assign(overrides, { jwksUrl: issuer.jwksUrl, jwtIssuer: issuer.url, jwtAudience: AUDIENCE });
  });
  after(() => issuer?.close());
  const h = useApp(fx, overrides);
  before(() => eventually(async () => (await h.request({ method: 'GET', url: '/readyz' })).statusCode === 200, 10_000));
  const message = async (token: string) => {
    const res = await h.request({ method: 'GET', url: '/plants', token });
    assert.equal(res.statusCode, 401, res.body);
    return res.json<{ message: string }>().message;
  };

  it('is left out for a refused JWT', { timeout: 10_000 }, async () => {
    const expired = await issuer.sign(kid, 'alice', { exp: Math.floor(Date.now() / 1000) - 60 });
    const text = await message(expired);
    assert.match(text, /^invalid bearer token: .*expired/);
    assert.doesNotMatch(text, HINT);
  });

  it('is given for an unknown opaque token', { timeout: 10_000 }, async () => {
    assert.match(await message(`plnt_${'A'.repeat(43)}`), HINT);
  });
});
